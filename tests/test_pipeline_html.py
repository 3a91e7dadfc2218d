"""The HTML report draws a deployment folder's pipeline above its graphs (graphlint.html.pipeline)."""

from __future__ import annotations

import os

import pytest

from tests.browser import CHROMIUM, Browser
from tests.conftest import ROOT, run_cli
from tests.test_html_report import SHOTS, SIDEWAYS

LLAVA_NEXT = os.path.join(ROOT, "testmodels", "vlm", "optimum_intel", "llava_next")
QWEN2_VL = os.path.join(ROOT, "testmodels", "vlm", "optimum_intel", "qwen2_vl")

# every stage's text lies inside its box
TEXT_OUTSIDE = ("Array.from(document.querySelectorAll('svg.pipeline text')).filter(t => {"
                "var r = t.getBBox(), b = t.previousElementSibling;"
                "while (b && b.tagName !== 'rect') b = b.previousElementSibling;"
                "var x = +b.getAttribute('x'), w = +b.getAttribute('width');"
                "return r.x < x || r.x + r.width > x + w}).length")


def test_pipeline_section_is_drawn_above_the_graphs(tmp_path):
    page = tmp_path / "p.html"
    r = run_cli("report", LLAVA_NEXT, "--target", "openvino", "-o", str(page))
    assert r.code == 0, r.err
    html = page.read_text(encoding="utf-8")
    start = html.index('class="pipeline-section"')
    assert start < html.index('class="graph-section"')
    section = html[start:html.index("</section>", start)]
    assert section.count("<rect ") == 3 and section.count("<line ") == 2  # 3 stages, 2 edges
    assert "GL8001" in section and "config.json:6" in section
    assert 'stroke="#c62828"' in section  # the image-token edge drawn as failing


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (CI: apt-get install -y chromium)")
def test_pipeline_section_in_chromium(tmp_path):
    page = tmp_path / "q.html"
    r = run_cli("report", QWEN2_VL, "--target", "openvino", "-o", str(page))
    assert r.code == 0, r.err
    with Browser(tmp_path / "profile") as b:
        b.open(page)
        assert b.js("document.body.dataset.errors") == "0" and b.console() == []
        assert b.js("document.querySelectorAll('svg.pipeline rect').length") == 4
        assert b.js("document.querySelectorAll('svg.pipeline line').length") == 3
        assert b.js(TEXT_OUTSIDE) == 0 and b.js(SIDEWAYS) <= 0
        b.screenshot(SHOTS / "pipeline_qwen2_vl.png", full=False)


def test_only_the_edges_the_graphs_have_are_drawn(tmp_path):
    """optimum's T5 folder: the roles imply encoder -> decoder_with_past, which takes no encoder output;
    the drawing shows the two edges the graphs have, each in its own verdict's colour."""
    t5 = os.path.join(ROOT, "testmodels", "pipelines", "optimum_text", "t5")
    page = tmp_path / "t5.html"
    assert run_cli("report", t5, "--target", "ort", "-o", str(page)).code in (0, 1)
    html = page.read_text(encoding="utf-8")
    start = html.index('class="pipeline-section"')
    section = html[start:html.index("</section>", start)]
    assert section.count("<rect ") == 4 and section.count("<line ") == 2
    assert "decoder_with_past_model:" not in section.split("<table", 1)[0]
