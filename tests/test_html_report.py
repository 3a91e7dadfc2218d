"""graphlint report: one offline HTML file, checked in Python and in a real headless Chromium.

CI installs Debian's chromium (apt-get install -y chromium); locally the browser tests skip
when it is absent. tests/browser.py drives it over the DevTools protocol (a pipe, no extra
package): pages load at 1280 px with no console output, their script sets data-ready, and
the tests click graph nodes as a mouse would. Screenshots go to testmodels/out/screenshots/
(git-ignored; docs/html-report.md describes them).
"""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from graphlint.html import layout_library, render_html
from graphlint.html.collapse import BUDGET, DRAW_ALL, runs
from graphlint.lint import LintOptions, lint_paths
from graphlint.workflow import apply_suppressions
from testmodels.common import OUT
from tests import _multimodal
from tests.browser import CHROMIUM, Browser
from tests.conftest import run_cli
from tests.models import contrib_model, save
from tests.workflow_support import FakeUnsupported, ReluAfter, lint_with, with_metadata, workflow_models

needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (CI: apt-get install -y chromium)")
SHOTS = Path(OUT) / "screenshots"
# Every visible message cell lies inside the viewport, and the page does not scroll sideways.
MSG_OUTSIDE = ("Array.from(document.querySelectorAll('td.msg')).filter(e => e.offsetParent).filter(e => {"
               "var r = e.getBoundingClientRect(); return r.left < 0 || r.right > window.innerWidth}).length")
SIDEWAYS = "document.documentElement.scrollWidth - window.innerWidth"
DATA = "JSON.parse(document.getElementById('gl-data').textContent)"


@pytest.fixture(scope="session")
def wf_models() -> str:
    return workflow_models()


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


def page_data(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="gl-data">(.*?)</script>', html, re.S)
    assert m
    return json.loads(m.group(1))


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
    assert "@import" not in html and "sourceMappingURL" not in html
    visible = run.findings()
    assert html.count('<tr class="finding') == len(visible)
    # grouped by severity, then rule: both rules report errors, the more frequent rule first
    assert html.count('class="sev-group ') == 1 and 'class="sev-group error"' in html
    groups = re.findall(r'class="rule-group" id="rule-(GL\d+)"', html)
    per_rule = {r: sum(f.rule_id == r for f in visible) for r in groups}
    assert sorted(groups) == ["GL1990", "GL3990"] and per_rule[groups[0]] >= per_rule[groups[1]]
    # islands: Add->/Relu is one connected unsupported group, /Relu_1->Tanh the other (in each model)
    data = page_data(html)
    assert [len(m["islands"][0]) for m in data["models"]] == [2, 2]
    assert html.count("Unsupported islands on TensorRT") == 2 and "2 unsupported islands" in html
    # a small graph is drawn node by node: every node is an item
    for model, res in zip(data["models"], run.results, strict=True):
        ops = [it for it in model["items"] if it["k"] == "op"]
        assert len(ops) == len(res.model.graph.nodes) <= DRAW_ALL
    # messages are escaped, suppressed findings listed with their reason
    assert "accepted &lt;risk&gt;" in html and "<risk>" not in html
    assert "1 suppressed finding(s)" in html
    assert "will not build" in html


def test_vendored_layout_library_is_the_pinned_npm_build():
    import importlib.util

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location(
        "vendor_update", os.path.join(ROOT, "graphlint", "html", "vendor", "update.py"))
    assert spec and spec.loader
    update = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(update)
    assert update.check() == [], "vendored files differ from manifest.json (run update.py)"
    manifest, script = layout_library()
    assert manifest["name"] == "@dagrejs/dagre" and manifest["version"] == update.VERSION
    assert manifest["integrity"] == update.INTEGRITY and manifest["license"] == "MIT"
    assert "var dagre=" in script and "</script" not in script
    assert script in render_html(lint_with([], []))


def test_runs_find_repeats():
    assert runs(list("abababc")) == [(0, 2, 3), (6, 1, 1)]
    assert runs(list("xaaaay")) == [(0, 1, 1), (1, 1, 4), (5, 1, 1)]
    assert runs(list("abcabcab"), max_period=2) == [(i, 1, 1) for i in range(8)]


def test_collapse_folds_layers_and_keeps_flagged_nodes(tmp_path):
    """CLIP (fused for ONNX Runtime) on TensorRT: each encoder layer is one box, the rejected
    fused ops stay separate, and every node is drawn exactly once."""
    clip = _multimodal.path("clip_fused.onnx")
    run = lint_paths([clip], LintOptions(targets=["trt"]))
    model = run.results[0].model
    data = page_data(render_html(run))["models"][0]
    nodes = model.graph.nodes
    assert len(nodes) > DRAW_ALL and len(data["items"]) <= BUDGET
    covered = sorted(i for it in data["items"] for a, b in it.get("rg", []) for i in range(a, b + 1))
    assert covered == list(range(len(nodes)))
    layers = {re.search(r"^(.*/layers\.\d+)/", n.name).group(1) for n in nodes if "/layers." in n.name}
    blocks = [it for it in data["items"] if it["k"] == "block" and re.search(r"layers\.\d+$", it["t"])]
    assert sorted(b["t"] for b in blocks) == sorted(layers) and len(layers) == 4
    rejected = {f.node for f in run.findings() if f.rule_id.startswith("GL1") and f.severity.label == "error"}
    singles = {it["l"] for it in data["items"] if it["k"] == "op"}
    assert rejected and rejected <= singles


def test_collapse_reads_module_scopes_of_dynamo_exports():
    """The dynamo exporter names nodes node_MatMul_5 and records module scopes in metadata:
    the encoder layers still fold into one box each, read from the frozen IR's Node.metadata,
    which the report leaves as loaded."""
    from tests.test_ir_frozen import snapshot

    run = lint_paths([_multimodal.path("clip_dynamo.onnx")], LintOptions(targets=["trt"]))
    before = snapshot(run.results[0].model)
    items = page_data(render_html(run))["models"][0]["items"]
    assert snapshot(run.results[0].model) == before
    layers = sorted(it["t"].split("/", 2)[-1] for it in items if it["k"] == "block" and re.search(r"layers\.\d$", it["t"]))
    assert layers == ["text_model/encoder/layers.0", "text_model/encoder/layers.1",
                      "vision_model/encoder/layers.0", "vision_model/encoder/layers.1"]
    assert len(items) <= BUDGET // 4


def _layered(path: str, layers: int) -> str:
    """An exporter-style model: /model/embed, then ``layers`` identical /model/layers.N blocks, then a head."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["e0"], name="/model/embed/Relu"),
             helper.make_node("Neg", ["e0"], ["e1"], name="/model/embed/Neg"),
             helper.make_node("Abs", ["e1"], ["h0"], name="/model/embed/Abs")]
    for i in range(layers):
        ops = ["Relu", "Neg", "Abs", "Sigmoid", "Tanh"]
        for j, op in enumerate(ops):
            src = f"h{i}" if j == 0 else f"l{i}_{j - 1}"
            nodes.append(helper.make_node(op, [src], [f"l{i}_{j}"], name=f"/model/layers.{i}/{op}"))
        nodes.append(helper.make_node("Add", [f"h{i}", f"l{i}_4"], [f"h{i + 1}"], name=f"/model/layers.{i}/Add"))
    nodes.append(helper.make_node("Relu", [f"h{layers}"], ["y"], name="/model/head/Relu"))
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("x", "y")]
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", vi[:1], vi[1:]),
                                opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_collapse_folds_module_stacks_into_runs(tmp_path):
    """30 identical layers fold into runs of siblings; a layer with a finding breaks the run;
    every node stays drawn exactly once."""
    from graphlint.html.collapse import collapse
    from graphlint.load import load_model

    model = load_model(_layered(str(tmp_path / "m.onnx"), 30))
    nodes = model.graph.nodes
    odd = next(n.index for n in nodes if n.name == "/model/layers.17/Tanh")
    items, _ = collapse(model.graph, lambda i: ("x",) if i == odd else (), lambda i: i == odd, budget=10)
    assert sorted(i for it in items for i in it.nodes) == list(range(len(nodes)))
    labels = sorted((it.kind, it.label, it.reps) for it in items if it.kind in ("block", "run"))
    assert ("block", "model/layers.17", 1) in labels
    assert ("run", "model/layers.0–16", 17) in labels and ("run", "model/layers.18–29", 12) in labels
    assert ("block", "model/embed", 1) in labels


def test_collapse_folds_repeated_blocks_into_runs(tmp_path):
    """A bench model (no module paths): stretches between single-tensor cuts fold into runs,
    and a block whose findings differ from its neighbours' breaks the run."""
    from bench.make_models import build
    from graphlint.html.collapse import collapse
    from graphlint.load import load_model

    path = str(tmp_path / "b.onnx")
    build(path, nodes=3000, hidden=8, n_if=0)
    model = load_model(path)
    nodes = model.graph.nodes
    odd = next(n.index for n in nodes if n.op_type == "Softmax" and n.index > len(nodes) // 2)
    items, edges = collapse(model.graph, lambda i: ("x",) if i == odd else (), lambda i: i == odd, budget=30)
    assert len(items) <= 30
    covered = sorted(i for it in items for i in it.nodes)
    assert covered == list(range(len(nodes)))
    reps = [it for it in items if it.kind == "run"]
    assert reps and sum(it.reps for it in reps) >= 20
    owner = next(it for it in items if odd in it.nodes)
    assert owner.kind != "run", "the block with a finding is not folded into a run"
    assert all(0 <= a < len(items) and 0 <= b < len(items) and a != b for a, b in edges)


@needs_chromium
def test_clip_report_in_chromium(tmp_path):
    """The fused CLIP model's report at 1280 px: messages readable, graph drawn, islands
    outlined, a click on a rejected node shows its findings; screenshots kept."""
    clip = _multimodal.path("clip_fused.onnx")
    page = tmp_path / "clip.html"
    r = run_cli("report", clip, "--target", "trt", "-o", str(page))
    assert r.code == 0, r.err
    html = page.read_text(encoding="utf-8")
    data = page_data(html)["models"][0]
    run = lint_paths([clip], LintOptions(targets=["trt"]))
    part = run.results[0].stats["partition"]  # GL1010's own partition (graphlint.analysis.partition)
    assert f"{part['supported_pct']}% of {part['nodes']} nodes supported" in html
    with Browser(tmp_path / "profile") as b:
        seconds = b.open(page)
        print(f"\nCLIP report: ready in {seconds:.2f} s, layout+draw {b.js('document.body.dataset.renderMs')} ms")
        assert b.js("document.body.dataset.errors") == "0" and b.console() == []
        assert b.js(SIDEWAYS) <= 0 and b.js(MSG_OUTSIDE) == 0
        assert int(b.js("document.body.dataset.rows")) == len(run.findings())
        svg = "document.querySelector('#graph-0 svg')"
        assert int(b.js(f"{svg}.dataset.items")) == len(data["items"]) == b.js(f"{svg}.querySelectorAll('g.item').length")
        assert int(b.js(f"{svg}.dataset.islands")) == part["unsupported_islands"] > 0
        b.screenshot(SHOTS / "clip_fused_trt.png")
        # click the Attention node that TensorRT would import as the standard op
        k = next(i for i, it in enumerate(data["items"]) if it["l"] == "Attention_0")
        b.click(f'#graph-0 g.item[data-item="{k}"]')
        mine = [f for f in run.findings() if f.node == "Attention_0"]
        assert b.js("document.getElementById('panel-0').dataset.item") == str(k)
        panel = b.js("document.getElementById('panel-0').textContent")
        assert int(b.js("document.getElementById('panel-0').dataset.findings")) == len(mine) > 0
        assert all(f.rule_id in panel for f in mine) and "num_heads" in panel
        b.screenshot(SHOTS / "clip_fused_trt_click.png", full=False)
        # open a folded encoder layer in place: its nodes replace its box; fold it back
        layer = next(i for i, it in enumerate(data["items"]) if it["t"] == "/clip/text_model/encoder/layers.0")
        b.click(f'#graph-0 g.item[data-item="{layer}"]')
        b.click("#panel-0 button.toggle")
        opened = int(b.js(f"{svg}.dataset.items"))
        assert opened == len(data["items"]) - 1 + data["items"][layer]["n"]
        assert b.js("window.glErrors.length") == 0 and b.console() == []
        b.click("#panel-0 button.toggle")
        assert int(b.js(f"{svg}.dataset.items")) == len(data["items"])
        # filters: hide infos, then search
        b.click('.filters input[data-sev="info"]')
        assert int(b.js("document.body.dataset.rows")) == sum(f.severity.label != "info" for f in run.findings())
        b.js("(function(){var q=document.getElementById('gl-q');q.value='QuickGelu';"
             "q.dispatchEvent(new Event('input'));})()")
        shown = int(b.js("document.body.dataset.rows"))
        assert 0 < shown == sum(f.severity.label != "info" and "QuickGelu" in f.message for f in run.findings())


@needs_chromium
def test_multi_target_view(tmp_path):
    clip = _multimodal.path("clip_fused.onnx")
    page = tmp_path / "clip3.html"
    r = run_cli("report", clip, "-t", "trt", "-t", "ort", "-t", "openvino", "-o", str(page))
    assert r.code == 0, r.err
    with Browser(tmp_path / "profile") as b:
        b.open(page)
        assert b.js("document.body.dataset.errors") == "0" and b.js(SIDEWAYS) <= 0
        # one column per target in the comparison table, one chip per target in each drawn node
        assert b.js("document.querySelectorAll('table.compare thead th').length") == 4
        assert b.js("document.querySelectorAll('table.compare tr.differs').length") > 0
        flagged = b.js("document.querySelectorAll('#graph-0 g.item[data-status=\"6\"]').length")
        assert flagged > 0
        assert b.js("document.querySelector('#graph-0 g.item.kind-op').querySelectorAll('rect.chip').length") == 3
        b.screenshot(SHOTS / "clip_fused_three_targets.png")
        # ONNX Runtime runs its own fused ops: nothing is unsupported there, and no island is drawn
        b.click('input[name="gl-t0"][value="1"]')
        assert b.js("document.querySelectorAll('#graph-0 g.item[data-status=\"6\"]').length") == 0
        assert b.js("document.querySelector('#graph-0 svg').dataset.islands") == "0"


@needs_chromium
def test_100k_node_report_renders(tmp_path):
    """The 100k-node bench model: the report command's Python stays fast (printed), the page
    draws a few dozen boxes and is ready in about a second (printed, not asserted)."""
    import time

    from testmodels.bench_big import big100k

    model = big100k()
    page = tmp_path / "big.html"
    t0 = time.perf_counter()
    r = run_cli("report", model, "--target", "trt", "-o", str(page))
    took = time.perf_counter() - t0
    assert r.code == 0, r.err
    data = page_data(page.read_text(encoding="utf-8"))["models"][0]
    assert data["nodes"] > 99_000 and len(data["items"]) <= BUDGET
    big = max((it for it in data["items"] if it["k"] == "run"), key=lambda it: it["r"])
    assert big["r"] >= 100
    with Browser(tmp_path / "profile") as b:
        seconds = b.open(page)
        ms = b.js("document.body.dataset.renderMs")
        print(f"\n100k report: command {took:.1f} s (with linting), page ready in {seconds:.2f} s, "
              f"layout+draw {ms} ms, {len(data['items'])} boxes, {page.stat().st_size // 1024} KiB")
        assert b.js("document.body.dataset.errors") == "0" and b.console() == []
        assert int(b.js("document.querySelector('#graph-0 svg').dataset.items")) == len(data["items"])
        assert b.js(SIDEWAYS) <= 0 and b.js(MSG_OUTSIDE) == 0
        b.screenshot(SHOTS / "big100k_trt.png", max_height=2400)
        k = data["items"].index(big)
        b.click(f'#graph-0 g.item[data-item="{k}"]')
        assert b.js("document.getElementById('panel-0').dataset.item") == str(k)
        assert int(b.js("document.getElementById('panel-0').dataset.findings")) > 0
        assert "GL2007" in b.js("document.getElementById('panel-0').textContent")
        b.screenshot(SHOTS / "big100k_trt_click.png", full=False)


@needs_chromium
def test_origin_in_row_and_panel(tmp_path):
    """A dynamo export records each node's source line: the finding's row shows it, and so does
    the panel when the node is clicked in the graph."""
    from testmodels.origin_models import models
    from tests.conftest import ROOT

    page = tmp_path / "o.html"
    r = run_cli("report", os.path.join(models(), "dynamo18.onnx"), "--target", "openvino@npu", "--select", "GL3004",
                "--repo-root", ROOT, "-o", str(page))
    assert r.code == 0, r.err
    data = page_data(page.read_text(encoding="utf-8"))["models"][0]
    k = next(i for i, it in enumerate(data["items"]) if it.get("op") == "NonZero")
    with Browser(tmp_path / "profile") as b:
        b.open(page)
        row = b.js("document.querySelector('tr.finding .origin').textContent")
        assert row.startswith("Origin from testmodels/origin_models.py:") and "torch.nonzero" in row
        b.click(f'#graph-0 g.item[data-item="{k}"]')
        assert row in b.js("document.getElementById('panel-0').textContent")


@needs_chromium
def test_browser_check_catches_script_errors(tmp_path):
    """The harness itself: a page with a script error is caught (so a clean result means something)."""
    page = tmp_path / "bad.html"
    good = render_html(lint_with([], []))
    page.write_text(good.replace("</head>", "<script>noSuchFunction();</script></head>"), encoding="utf-8")
    with Browser(tmp_path / "profile") as b:
        b.open(page)
        assert any("noSuchFunction" in ln for ln in b.console())
        assert b.js("document.body.dataset.errors") == "1"


@needs_chromium
def test_report_command_end_to_end(tmp_path):
    save(contrib_model(), str(tmp_path), "contrib.onnx")
    r = run_cli("report", "contrib.onnx", "--target", "trt", "-o", "report.html", cwd=str(tmp_path))
    assert r.code == 0, r.err
    assert "wrote report.html" in r.err
    with Browser(tmp_path / "profile") as b:
        b.open(tmp_path / "report.html")
        assert b.console() == [] and int(b.js("document.body.dataset.rows")) >= 1
        assert b.js("document.querySelector('#graph-0 g.item[data-status=\"5\"] text.nm').textContent") == "fast_gelu"
        assert re.search(r"GL1\d+", b.js("document.getElementById('findings').textContent"))


def test_report_command_errors(tmp_path):
    save(contrib_model(), str(tmp_path), "m.onnx")
    r = run_cli("report", "m.onnx", "-o", str(tmp_path / "missing" / "r.html"), cwd=str(tmp_path))
    assert r.code == 2 and "does not exist" in r.err
    (tmp_path / "broken.onnx").write_bytes(b"\x00garbage")
    r = run_cli("report", "m.onnx", "broken.onnx", "-o", "r.html", cwd=str(tmp_path))
    assert r.code == 2 and (tmp_path / "r.html").is_file()
    assert "could not be read" in (tmp_path / "r.html").read_text()
