"""Findings point at the Python line that made their node (issue 20).

Real exports of testmodels/origin_models.py (dynamo opsets 17 and 18, TorchScript plain and
verbose, their OpenVINO IR, IR converted straight from the module, and an export made from a
copy of the file in a folder deleted afterwards); the lines are found by their ``# origin:``
markers, so editing the module moves the expectations with it.
"""

from __future__ import annotations

import json
import os
import re

import onnx
import pytest

from graphlint.analysis.origins import (
    Frame,
    Origin,
    Recorded,
    SourceTree,
    dynamo_frames,
    origin_of,
    recorded,
    resolve,
    torchscript_frames,
)
from graphlint.lint import LintOptions, lint_paths
from graphlint.load import load_model
from tests.conftest import ROOT, run_cli, validate_sarif
from tests.models import relu_model, save, two_bad_nodes
from tests.test_core_sarif import check_github_rules

SOURCE = "testmodels/origin_models.py"
RULES = ["GL2008", "GL3004", "GL3008"]  # tanh GELU, NonZero, MatMul weights of odd size


@pytest.fixture(scope="module")
def folder() -> str:
    from testmodels.origin_models import models

    return models()


def marker(name: str) -> int:
    with open(os.path.join(ROOT, SOURCE), encoding="utf-8") as f:
        return next(i for i, line in enumerate(f, 1) if line.rstrip().endswith(f"# origin: {name}"))


def findings(path: str, target: str = "openvino@npu", source_root: str = ROOT) -> dict[tuple[str, str], object]:
    run = lint_paths([path], LintOptions(targets=[target], select=RULES, root=ROOT, source_root=source_root))
    assert not run.failures
    return {(f.rule_id, f.node): f for f in run.findings()}


def test_dynamo_findings_point_at_the_line_module_and_op(folder):
    got = findings(os.path.join(folder, "dynamo18.onnx"))
    nonzero = next(f for (rule, _), f in got.items() if rule == "GL3004")
    o = nonzero.origin
    assert (o.file, o.line, o.function, o.found) == (SOURCE, marker("nonzero"), "forward", True)
    # three modules deep: Encoder > Block (layers.1) > Mixer, and the exporter's class for it
    assert o.module == "encoder.layers.1.mixer" and o.class_name == "Mixer" and o.cls.endswith("origin_models._classes.<locals>.Mixer")
    assert o.op == "aten.nonzero.default" and o.code.startswith("picked = torch.nonzero(")
    assert o.describe() == f"from {SOURCE}:{marker('nonzero')} in forward (Mixer encoder.layers.1.mixer, aten.nonzero)"
    matmul = got[("GL3008", "node_matmul")].origin
    assert (matmul.line, matmul.module, matmul.op) == (marker("matmul"), "encoder.layers.0.mixer", "aten.matmul.default")
    # a node made inside torch (nn.Linear's F.linear) points at the user's line that called it, not at
    # torch/nn/modules/linear.py, even though this repository's .venv (in the source tree) holds that file
    proj = next(f.origin for (rule, node), f in got.items() if rule == "GL3008" and f.origin.module.endswith("proj"))
    assert (proj.file, proj.line, proj.class_name) == (SOURCE, marker("gelu"), "Linear")
    gelu = next(f.origin for (rule, _), f in got.items() if rule == "GL2008")
    assert (gelu.line, gelu.class_name, gelu.op_name) == (marker("gelu"), "Block", "aten.gelu")


def test_dynamo_below_opset_18_records_nothing(folder):
    """torch 2.13 builds opset 18 and converts other opsets: to 17 through onnx's C version
    converter, which drops every node's metadata_props (docs/origins.md). Those findings keep
    no origin, as for any model without metadata."""
    proto = onnx.load(os.path.join(folder, "dynamo17.onnx"))
    assert proto.opset_import[0].version == 17 and not any(n.metadata_props for n in proto.graph.node)
    got = findings(os.path.join(folder, "dynamo17.onnx"))
    assert got and all(f.origin is None for f in got.values())


def test_torchscript_export_gives_the_module_path_and_verbose_the_line(folder):
    plain = findings(os.path.join(folder, "legacy17.onnx"))
    o = plain[("GL3004", "/encoder/layers.1/mixer/NonZero")].origin
    assert o == Origin(module="encoder.layers.1.mixer")
    assert o.describe() == "from module encoder.layers.1.mixer"
    verbose = findings(os.path.join(folder, "legacy17_verbose.onnx"))
    o = verbose[("GL3004", "/encoder/layers.1/mixer/NonZero")].origin
    assert (o.file, o.line, o.function, o.module, o.found) == (SOURCE, marker("nonzero"), "forward",
                                                               "encoder.layers.1.mixer", True)
    assert verbose[("GL3008", "/encoder/layers.0/mixer/MatMul")].origin.line == marker("matmul")


def test_openvino_ir_maps_layers_to_their_onnx_nodes_and_modules(folder):
    got = findings(os.path.join(folder, "legacy17.xml"))
    (f,) = [f for (rule, _), f in got.items() if rule == "GL3004"]
    assert f.origin == Origin(module="encoder.layers.1.mixer", nodes=("/encoder/layers.1/mixer/NonZero",))
    assert f.origin.describe() == "from ONNX node /encoder/layers.1/mixer/NonZero (module encoder.layers.1.mixer)"
    # a layer OpenVINO made from a TorchScript Gemm (the MatMul half of the Linear): the node and module
    ir = load_model(os.path.join(folder, "legacy17.xml"))
    proj = next(n for n in ir.walk() if n.name.startswith("/encoder/layers.0/proj/") and n.op_type == "MatMul")
    assert recorded(proj).module == "encoder.layers.0.proj"
    # straight from the torch module, OpenVINO names layers after module and aten op
    direct = findings(os.path.join(folder, "torch_direct.xml"))
    (f,) = [f for (rule, _), f in direct.items() if rule == "GL3004"]
    assert (f.origin.module, f.origin.op) == ("encoder.layers.1.mixer", "aten.nonzero")
    # from a dynamo export the IR keeps no frames and no module path: no origin rather than a guess
    (f,) = [f for (rule, _), f in findings(os.path.join(folder, "dynamo18.xml")).items() if rule == "GL3004"]
    assert f.origin is None


def test_openvino_ir_fused_names_as_older_ir_writes_them(folder, tmp_path):
    """IR from before 2023 lists a layer's original names in rt_info fused_names (the format of
    public IR files: <attribute name="fused_names" version="0" value="a,b"/>)."""
    with open(os.path.join(folder, "dynamo18.xml"), encoding="utf-8") as f:
        xml = f.read()
    layer = re.search(r'<layer id="\d+" name="node_NonZero_\d+" type="NonZero" version="opset3">', xml)
    older = xml.replace(layer[0], layer[0] + '\n<rt_info><attribute name="fused_names" version="0" '
                                             'value="node_gt_1,node_NonZero_18"/></rt_info>')
    (tmp_path / "older.xml").write_text(older, encoding="utf-8")
    os.symlink(os.path.join(folder, "dynamo18.bin"), tmp_path / "older.bin")
    (f,) = [f for (rule, _), f in findings(str(tmp_path / "older.xml")).items() if rule == "GL3004"]
    assert f.origin == Origin(nodes=("node_gt_1", "node_NonZero_18"))
    assert f.origin.describe() == "from ONNX node node_gt_1, node_NonZero_18"


def test_export_from_another_machine_resolves_by_suffix(folder, tmp_path):
    path = os.path.join(folder, "elsewhere_dynamo18.onnx")
    (f,) = [f for (rule, _), f in findings(path).items() if rule == "GL3004"]
    o = f.origin
    assert not os.path.exists(o.recorded_file) and o.recorded_file.endswith("/proj/" + SOURCE)
    assert (o.file, o.line, o.found, o.path) == (SOURCE, marker("nonzero"), True, os.path.join(ROOT, SOURCE))
    # another source tree that lacks the file: the frame is still shown, marked as not found
    (f,) = [f for (rule, _), f in findings(path, source_root=str(tmp_path)).items() if rule == "GL3004"]
    assert (f.origin.file, f.origin.found, f.origin.path) == (f.origin.recorded_file, False, None)
    assert "(not found under the source root)" in f.origin.describe()


def test_model_without_metadata_behaves_as_before(tmp_path):
    p = save(two_bad_nodes(), str(tmp_path), "bad.onnx")
    run = lint_paths([p], LintOptions(targets=["trt"], root=str(tmp_path)))
    assert run.findings() and all(f.origin is None for f in run.findings())
    r = run_cli(p, "--target", "trt", "--format", "json", cwd=str(tmp_path))
    assert all(f["origin"] is None for m in r.json()["models"] for f in m["findings"])
    text = run_cli(p, "--target", "trt", cwd=str(tmp_path)).out
    assert "from " not in text.replace("from inputs", "")


def test_text_json_github_and_html_reports(folder, tmp_path):
    path = os.path.join(folder, "dynamo18.onnx")
    args = (path, "--target", "openvino@npu", "--select", "GL3004", "--repo-root", ROOT)
    line = f"from {SOURCE}:{marker('nonzero')} in forward (Mixer encoder.layers.1.mixer, aten.nonzero)"
    text = run_cli(*args).out.splitlines()
    at = next(i for i, t in enumerate(text) if "'node_NonZero" in t)
    assert text[at + 1].strip() == line  # right under the node, before its findings
    (f,) = run_cli(*args, "--format", "json").json()["models"][0]["findings"]
    assert f["origin"] == {"file": SOURCE, "line": marker("nonzero"), "function": "forward",
                           "code": "picked = torch.nonzero(mixed > 0)  # origin: nonzero", "found_in_repo": True,
                           "recorded_file": os.path.join(ROOT, SOURCE), "module": "encoder.layers.1.mixer",
                           "class": f["origin"]["class"], "framework_op": "aten.nonzero.default", "framework_nodes": []}
    gh = run_cli(*args, "--format", "github").out
    assert gh.startswith(f"::error file={SOURCE},line={marker('nonzero')},title=GL3004")
    r = run_cli("report", *args, "-o", str(tmp_path / "r.html"))
    assert r.code in (0, 1), r.err
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    # in the finding's row (the graph panel shows the row's origin when the node is clicked)
    assert html.count(f'<div class="origin"><b>Origin</b> {line} <code>') == 1


def sarif_results(*args: str, cwd: str = ROOT) -> list[dict]:
    r = run_cli(*args, "--format", "sarif", "--repo-root", ROOT, cwd=cwd)
    doc = json.loads(r.out)
    validate_sarif(doc)
    check_github_rules(doc)
    return doc["runs"][0]["results"]


def test_sarif_primary_location_is_the_source_line_when_in_the_repository(folder, tmp_path):
    path = os.path.join(folder, "dynamo18.onnx")
    results = sarif_results(path, "--target", "openvino@npu", "--select", ",".join(RULES))
    fingerprints = [r["partialFingerprints"]["primaryLocationLineHash"] for r in results]
    assert len(set(fingerprints)) == len(fingerprints)  # two MatMuls from one line in a loop: two alerts
    nonzero = next(r for r in results if r["ruleId"] == "GL3004")
    (loc,) = nonzero["locations"]
    assert loc["physicalLocation"] == {"artifactLocation": {"uri": SOURCE, "uriBaseId": "%SRCROOT%"},
                                       "region": {"startLine": marker("nonzero")}}
    (model,) = nonzero["relatedLocations"]
    assert model["id"] == 1 and re.search(r"\]\(1\)\.$", nonzero["message"]["text"])
    assert model["physicalLocation"]["artifactLocation"]["uri"].endswith("dynamo18.onnx")
    assert model["logicalLocations"] == [{"fullyQualifiedName": "main/" + nonzero["properties"]["node"],
                                          "kind": "member"}]
    assert nonzero["properties"]["origin"]["module"] == "encoder.layers.1.mixer"
    assert sarif_results(path, "--target", "openvino@npu", "--select", ",".join(RULES)) == results  # stable
    # source root elsewhere: the model stays primary, the recorded frame is related
    results = sarif_results(path, "--target", "openvino@npu", "--select", "GL3004", "--source-root", str(tmp_path))
    (r,) = results
    assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("dynamo18.onnx")
    (rel,) = r["relatedLocations"]
    assert "physicalLocation" not in rel and "not found under the source root" in rel["message"]["text"]


def test_source_root_from_configuration(folder, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.graphlint]\nsource-root = "src"\n')
    (tmp_path / "src").mkdir()
    r = run_cli("config", "--format", "json", cwd=str(tmp_path))
    value = r.json()["values"]["source-root"]
    assert value["value"] == str(tmp_path / "src") and "source-root" in value["source"]
    r = run_cli("config", "--format", "json", "--source-root", ROOT, cwd=str(tmp_path))
    assert r.json()["values"]["source-root"] == {"value": ROOT, "source": "command line --source-root"}
    # the configured tree lacks the file: shown as recorded, not found
    r = run_cli(os.path.join(folder, "dynamo18.onnx"), "--target", "openvino@npu", "--select", "GL3004",
                "--format", "json", cwd=str(tmp_path))
    (f,) = r.json()["models"][0]["findings"]
    assert f["origin"]["found_in_repo"] is False and f["origin"]["file"] == os.path.join(ROOT, SOURCE)


def test_fix_keeps_the_origin_on_the_nodes_it_makes(folder, tmp_path):
    out = tmp_path / "fixed.onnx"
    r = run_cli("fix", os.path.join(folder, "dynamo18.onnx"), "--target", "trt", "--select", "GL2008", "-o", str(out))
    assert r.code == 0, r.err
    fixed = load_model(str(out))
    gelus = [n for n in fixed.walk() if n.op_type == "Gelu"]
    assert len(gelus) == 2  # each tanh GELU subgraph became one Gelu the pass built from nothing
    for n in gelus:
        o = origin_of(n, ROOT)
        assert (o.file, o.line, o.op) == (SOURCE, marker("gelu"), "aten.gelu.default")
    # nodes the pass did not touch keep theirs, and nodes that recorded nothing still record nothing
    assert origin_of(next(n for n in fixed.walk() if n.op_type == "NonZero"), ROOT).line == marker("nonzero")
    assert sum(1 for n in onnx.load(str(out)).graph.node if not n.metadata_props) == 0


def test_parsers_on_what_exporters_write(folder):
    proto = onnx.load(os.path.join(folder, "legacy17_verbose.onnx"))
    doc = next(n.doc_string for n in proto.graph.node if n.op_type == "NonZero")
    frames = torchscript_frames(doc)
    assert frames[-1].file.endswith(SOURCE) and frames[-1].line == marker("nonzero")  # innermost last
    proto = onnx.load(os.path.join(folder, "dynamo18.onnx"))
    trace = next(p.value for n in proto.graph.node if n.op_type == "NonZero" for p in n.metadata_props
                 if p.key == "pkg.torch.onnx.stack_trace")
    frames = dynamo_frames(trace)
    assert [f.function for f in frames] == ["forward"] * 4 and frames[-1].code.startswith("picked = ")
    # garbage in: no crash, no frames
    assert dynamo_frames('File "x.py", line notanumber, in f\n') == ()
    assert torchscript_frames("x.py(): f") == ()


def test_recorded_paths_never_lead_out_of_the_source_tree(tmp_path):
    tree = SourceTree(str(tmp_path / "repo"))
    (tmp_path / "repo" / "src").mkdir(parents=True)
    (tmp_path / "repo" / "src" / "model.py").write_text("x = 1\n")
    (tmp_path / "secret.py").write_text("")
    os.symlink(tmp_path / "secret.py", tmp_path / "repo" / "link.py")
    assert tree.find("/home/alice/proj/src/model.py") == "src/model.py"
    assert tree.find("C:\\Users\\alice\\proj\\src\\model.py") == "src/model.py"
    assert tree.find(str(tmp_path / "repo" / "src" / "model.py")) == "src/model.py"
    for hostile in ("../secret.py", str(tmp_path / "secret.py"), "/x/link.py", "<eval_with_key>.3", "src\0/model.py"):
        assert tree.find(hostile) is None, hostile
    # a library frame never matches a repository file by suffix: the frame inside the user's code wins
    (tmp_path / "repo" / "linear.py").write_text("")
    rec = Recorded(frames=(Frame("/home/alice/proj/src/model.py", 7, "forward"),
                           Frame("/opt/py/lib/python3.11/site-packages/torch/nn/modules/linear.py", 134, "forward")))
    assert resolve(rec, tree).file == "src/model.py"


def test_hand_built_models_have_no_origin(tmp_path):
    model = load_model(save(relu_model(), str(tmp_path), "relu.onnx"))
    assert all(recorded(n) is None and not n.metadata for n in model.walk())


def test_transformers_model_wrapped_by_user_code():
    """CLIP from transformers (tests/test_contracts_multimodal.py's export): every node records
    its origin; the frame is the user's wrapper line (transformers is a library), the module and
    class the transformers ones."""
    from testmodels.export_multimodal import models

    model = load_model(os.path.join(models(), "clip_dynamo.onnx"))
    with open(os.path.join(ROOT, "testmodels/export_multimodal.py"), encoding="utf-8") as f:
        call = next(i for i, line in enumerate(f, 1) if "out = self.clip(" in line)
    origins = [origin_of(n, ROOT) for n in model.walk()]
    # torch's own symbolic-size nodes (runtime asserts for the dynamic dims) were made by no user line
    made_by_torch = [recorded(n).op == "aten.sym_size.int" and recorded(n).module is None for n in model.walk()]
    assert 0 < sum(made_by_torch) < len(origins) / 10
    for o, by_torch in zip(origins, made_by_torch, strict=True):
        assert o is None if by_torch else (o.file, o.line) == ("testmodels/export_multimodal.py", call)
    embeddings = {(n.op_type, o.class_name, o.op_name) for n, o in zip(model.walk(), origins, strict=True)
                  if o is not None and o.module == "clip.vision_model.embeddings"}
    # torch.cat of the class token and the patches; a Concat that builds expand's target shape
    assert {("Concat", "CLIPVisionEmbeddings", "aten.cat"), ("Concat", "CLIPVisionEmbeddings", "aten.expand")} <= embeddings
