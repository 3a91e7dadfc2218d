"""graphlint report: one offline HTML file, rendered in a real headless Chromium.

CI installs Debian's chromium (apt-get install -y chromium); locally the browser tests skip
when it is absent. The page must load with no console output at all (graphlint's script
logs nothing, so any CONSOLE line is an error), run its script to the end (it sets
data-ready, counts visible finding rows and measures every SVG), and show the findings.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from graphlint.html import render_html
from graphlint.workflow import apply_suppressions
from tests.conftest import run_cli
from tests.models import contrib_model, save
from tests.workflow_support import FakeUnsupported, ReluAfter, lint_with, with_metadata, workflow_models


@pytest.fixture(scope="session")
def wf_models() -> str:
    return workflow_models()

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (CI: apt-get install -y chromium)")


def browse(page: Path, profile: Path) -> tuple[str, list[str]]:
    """The DOM after scripts ran, and the console lines Chromium logged."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
           "--dump-dom", page.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]
    return proc.stdout, console


def body_attrs(dom: str) -> dict[str, str]:
    m = re.search(r"<body([^>]*)>", dom)
    assert m, dom[:500]
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))


class _Resources(HTMLParser):
    """Collects every URL the page would load (not links people click)."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "iframe", "audio", "video", "source") and a.get("src"):
            self.loads.append(a["src"])
        if tag == "link" and a.get("href"):
            self.loads.append(a["href"])


def _islands_run(wf_models, tmp_path):
    m = os.path.join(wf_models, "twobranch_a_legacy.onnx")
    owned = with_metadata(m, str(tmp_path / "owned.onnx"), **{"graphlint:ignore": "GL3990:/Relu_1",
                                                              "graphlint:ignore-reason": "accepted <risk>"})
    run = lint_with([m, owned], [FakeUnsupported, ReluAfter], unsupported=("Add", "Relu", "Tanh"),
                    relu_after=("Add", "Mul"))
    apply_suppressions(run, [])
    return run


def test_html_structure_islands_and_escaping(wf_models, tmp_path):
    run = _islands_run(wf_models, tmp_path)
    html = render_html(run)
    p = _Resources()
    p.feed(html)
    assert p.loads == [], "self-contained: nothing is fetched"
    assert "url(" not in html and "@import" not in html
    visible = run.findings()
    assert html.count("<tr data-sev=") == len(visible)
    # islands: Add->/Relu is one connected unsupported group, /Relu_1->Tanh the other (in each model)
    assert html.count("2 unsupported island(s)") == 2
    assert 'class="node seed finding error island island-1"' in html
    # messages are escaped, suppressed findings listed with their reason
    assert "accepted &lt;risk&gt;" in html and "<risk>" not in html
    assert "1 suppressed finding(s)" in html


@needs_chromium
def test_report_renders_in_headless_chromium(wf_models, tmp_path):
    run = _islands_run(wf_models, tmp_path)
    page = tmp_path / "report.html"
    page.write_text(render_html(run), encoding="utf-8")
    dom, console = browse(page, tmp_path / "profile")
    assert console == []
    attrs = body_attrs(dom)
    figures = dom.count("<figure")
    assert attrs.get("data-ready") == "1" and attrs.get("data-errors") == "0"
    assert int(attrs["data-rows"]) == len(run.findings()) > 0
    assert figures > 0 and int(attrs["data-svg-drawn"]) == figures, "every graph picture has a size on screen"
    assert "follows a Mul" in dom and "is not supported by" in dom
    assert 'id="gl-shown">' + str(len(run.findings())) in dom


@needs_chromium
def test_browser_check_catches_script_errors(tmp_path):
    """The harness itself: a page with a script error is caught (so a clean result means something)."""
    page = tmp_path / "bad.html"
    good = render_html(lint_with([], []))
    page.write_text(good.replace("</body>", "<script>noSuchFunction();</script></body>"), encoding="utf-8")
    dom, console = browse(page, tmp_path / "profile")
    assert any("noSuchFunction" in ln for ln in console)
    assert body_attrs(dom).get("data-errors") == "1"


@needs_chromium
def test_report_command_end_to_end(tmp_path):
    save(contrib_model(), str(tmp_path), "contrib.onnx")
    r = run_cli("report", "contrib.onnx", "--target", "trt", "-o", "report.html", cwd=str(tmp_path))
    assert r.code == 0, r.err
    assert "wrote report.html" in r.err
    page = tmp_path / "report.html"
    dom, console = browse(page, tmp_path / "profile")
    assert console == []
    attrs = body_attrs(dom)
    assert attrs["data-ready"] == "1" and int(attrs["data-rows"]) >= 1
    assert "fast_gelu" in dom and re.search(r">GL1\d+</a>", dom)
    # the node's neighbourhood is drawn: the FastGelu box with its op type
    assert re.search(r'<g class="node seed[^"]*" data-node="fast_gelu">', dom)


def test_report_command_errors(tmp_path):
    save(contrib_model(), str(tmp_path), "m.onnx")
    r = run_cli("report", "m.onnx", "-o", str(tmp_path / "missing" / "r.html"), cwd=str(tmp_path))
    assert r.code == 2 and "does not exist" in r.err
    (tmp_path / "broken.onnx").write_bytes(b"\x00garbage")
    r = run_cli("report", "m.onnx", "broken.onnx", "-o", "r.html", cwd=str(tmp_path))
    assert r.code == 2 and (tmp_path / "r.html").is_file()
    assert "could not be read" in (tmp_path / "r.html").read_text()
