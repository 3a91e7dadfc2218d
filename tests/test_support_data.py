"""The support tables are complete and current: every TensorRT matrix row, ORT's live kernel registry,
OpenVINO's live frontend, and the contrib-op CSV agree with rules/data/support/*."""

from __future__ import annotations

import csv
import json
import os
import re

import pytest

from graphlint.target import data_dir, resolve
from tests.conftest import SHARED

REF = os.path.join(SHARED, "reference")
SUPPORT = os.path.join(data_dir(), "support")


def _load(name: str) -> dict:
    with open(os.path.join(SUPPORT, name), encoding="utf-8") as f:
        return json.load(f)


def _matrix_rows(md: str) -> dict[str, tuple[int, list[str]]]:
    """Independent reading of the markdown: op -> (line, cells)."""
    rows = {}
    with open(os.path.join(REF, md), encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| Operator"))
    for i in range(start + 2, len(lines)):
        ln = lines[i]
        if ln.startswith("|"):
            cells = [c.strip() for c in ln.strip().strip("|").split("|")]
            rows[cells[0]] = (i + 1, cells)
    return rows


@pytest.mark.parametrize(("md", "table"), [
    ("onnx-tensorrt-operators-trt10.15.md", "trt-10.15.json"),
    ("onnx-tensorrt-operators.md", "trt-10.1.json"),
])
def test_every_trt_matrix_row_is_in_the_table(md: str, table: str) -> None:
    data = _load(table)
    rows = _matrix_rows(md)
    assert len(rows) >= 190
    assert set(rows) == set(data["ops"]), "ops missing or extra"
    for op, (line, cells) in rows.items():
        entry = data["ops"][op]
        assert entry["row"] == line, op
        assert entry["supported"] == (cells[1] == "Y"), op
        # rows the importer source overrules (trt_source_overrides.toml) are checked by
        # test_trt_source_overrides_are_applied_and_cited
        overruled = bool(entry.get("source_overrides"))
        if cells[1] == "Y" and "types_source" not in entry:
            listed = {t.strip() for t in cells[2].split(",") if t.strip()}
            assert len(entry["types"]) == len(listed), (op, listed, entry["types"])
        text = " ".join(c for c in cells[3 if cells[1] == "Y" else 2:] if c)
        if text and not overruled:
            assert entry["constraints"], f"{op}: restriction {text!r} has no constraint"
            # every sentence of the restriction produced a constraint that quotes it
            quoted = " ".join(c["text"] for c in entry["constraints"])
            for word in re.findall(r"`([^`]+)`", text):
                assert word.strip() in quoted, (op, word)
        # "static": False marks restrictions on run-time behaviour (Loop iteration shapes)
        checkable = [c for c in entry["constraints"] if c["kind"] != "note" or c.get("static") is False]
        if re.search(r"must|only|unsupported|not supported|ignored", text) and cells[1] == "Y" and not overruled:
            assert checkable, f"{op}: restriction {text!r} is only a note"


def test_trt_constraints_named_in_the_issue() -> None:
    ops = _load("trt-10.15.json")["ops"]

    def kinds(op: str) -> dict:
        return {(c["kind"], c.get("attr")): c for c in ops[op]["constraints"]}

    resize = kinds("Resize")
    assert "align_corners" in resize[("attr_in", "coordinate_transformation_mode")]["values"]
    assert resize[("attr_in", "antialias")]["values"] == [0]
    assert resize[("attr_in", "keep_aspect_ratio_policy")]["values"] == ["stretch"]
    assert ("attr_in", "sorted") not in kinds("TopK")  # the importer never reads it (trt_source_overrides.toml)
    assert kinds("TopK")[("input_value_below", None)]["limit"] == 3840
    assert kinds("ScatterND")[("attr_in", "reduction")]["values"] == ["none"]
    assert kinds("MaxPool")[("spatial_rank", None)]["ranks"] == [2, 3]
    assert ("attr_ones", "dilations") in kinds("AveragePool")
    assert kinds("LSTM")[("attr_in", "layout")]["values"] == [0]
    for op, idx in [("ReduceMean", 1), ("Squeeze", 1), ("Unsqueeze", 1), ("OneHot", 1), ("Dropout", 2)]:
        c = kinds(op)[("const_input", None)]
        assert c["inputs"] == [idx], op
    assert kinds("Dropout")[("const_input", None)]["values"] == [False]
    data = _load("trt-10.15.json")
    assert data["global"]["boundary_only_types"] == ["uint8"]
    assert data["global"]["cast_down"] == {"float64": "float32"}


def test_trt_versions_differ_where_the_docs_do() -> None:
    new, old = _load("trt-10.15.json")["ops"], _load("trt-10.1.json")["ops"]
    assert "Attention" in new and "Attention" not in old
    assert new["HannWindow"]["supported"] and not old["HannWindow"]["supported"]
    assert any(c["kind"] == "const_input" for c in old["Slice"]["constraints"])
    assert not new["Slice"]["constraints"]
    assert resolve("trt").version == "10.15" and resolve("trt@10.1").version == "10.1"


def test_ort_table_matches_the_installed_wheel() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_ort", os.path.join(data_dir(), "gen", "gen_ort.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    fresh = gen.build(os.path.join(REF, "onnxruntime-1.32.0-cpu-kernels.generated.md"))
    stored = _load("ort-1.32-cpu.json")
    assert stored["version"] == fresh["version"]
    assert json.loads(json.dumps(fresh["domains"])) == stored["domains"], "re-run rules/data/gen/gen_ort.py"
    assert stored["domains"]["ai.onnx"]["Add"]["row"] is not None


def test_openvino_table_agrees_with_the_live_frontend_on_a_sample() -> None:
    import importlib.util

    import onnx.defs
    import openvino as ov

    spec = importlib.util.spec_from_file_location("gen_ov", os.path.join(data_dir(), "gen", "gen_openvino.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    table = _load("openvino-2026.4.json")["domains"]["ai.onnx"]
    core = ov.Core()
    sample = ["Abs", "Unique", "Resize", "Det", "StringSplit", "RMSNormalization", "Bernoulli", "LayerNormalization",
              "TfIdfVectorizer", "GridSample", "Attention", "OptionalHasElement"]
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for op in sample:
            schema = onnx.defs.get_schema(op, onnx.defs.onnx_opset_version())
            ok, _ = gen.converts(core, gen._probe_model(schema, ""), folder)
            assert ok == (table[op]["since"] is not None), op


def test_openvino_frontend_facts_agree_with_the_live_frontend() -> None:
    """The facts gen_openvino probes besides op support, asked again of the installed frontend (the
    earlier release's are run on that release by tests/test_engine_versions.py and the fleet tests)."""
    import importlib.util
    import tempfile

    spec = importlib.util.spec_from_file_location("gen_ov", os.path.join(data_dir(), "gen", "gen_openvino.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    table = _load("openvino-2026.4.json")["domains"]
    reader = gen.Reader()
    try:
        with tempfile.TemporaryDirectory() as folder:
            ranks = gen._empty_constant_ranks(reader, folder)
            to_scalar = gen._reshape_to_scalar(reader, folder)
    finally:
        reader.close()
    walked = [c["empty_scalar_ranks"] for d in table.values() for e in d.values() for c in e.get("constraints", ())
              if c["kind"] in ("static_rank", "static_output_rank")]
    assert walked and all(r == ranks for r in walked)
    reshape = {c["kind"] for c in table["ai.onnx"]["Reshape"].get("constraints", ())}
    assert ("input_not_empty" in reshape) == (not to_scalar)


def test_contrib_csv_agrees_with_the_tables() -> None:
    ort = _load("ort-1.32-cpu.json")["domains"]["com.microsoft"]
    ov_ms = _load("openvino-2026.4.json")["domains"]["com.microsoft"]
    trt = _load("trt-10.15.json")["ops"]
    fused = resolve("trt").data("fused")["ops"]
    with open(os.path.join(REF, "ort-contrib-fused-ops-support.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    checked = 0
    for line, row in enumerate(rows, 2):
        op = row["op"]
        if "/" in op or row["node_domain_as_emitted"] != "com.microsoft":
            continue
        assert op in fused and fused[op]["row"] == line, op
        ort_kernel = op in ort and bool(ort[op]["kernels"])
        assert ort_kernel == row["ort_1.32.0_cpu_kernel"].startswith("yes"), op
        ov_doc = row["openvino_onnx_fe_supported_ops.md@0ae60f0f"]
        if op != "MultiHeadAttention":  # CSV: "doc: no; newer source registers it" -- the probe says yes
            assert (ov_ms.get(op, {}).get("since") is not None) == ov_doc.startswith("yes"), op
        trt_text = row["trt_onnx_parser (dispatch by op_type; code reading)"]
        assert (op in trt) == trt_text.startswith("NAME COLLISION"), op
        checked += 1
    assert checked >= 15
    assert ov_ms["MultiHeadAttention"]["since"] == 1


def test_trt_source_overrides_are_applied_and_cited() -> None:
    """Every override of rules/data/trt_source_overrides.toml is in the tables, and each row it edits
    cites the importer source at that version's commit (the document row stays for the rest)."""
    from graphlint.compat import tomllib

    with open(os.path.join(data_dir(), "trt_source_overrides.toml"), "rb") as f:
        data = tomllib.load(f)
    for version in ("10.15", "10.1"):
        table = _load(f"trt-{version}.json")
        commit = data["sources"][version]["commit"]
        want = [o["id"] for o in data["override"] if version in o["versions"]]
        assert table["source_overrides"]["applied"] == want and table["source_overrides"]["commit"] == commit
        for o in data["override"]:
            if version not in o["versions"]:
                continue
            for op in [o["op"]] if isinstance(o["op"], str) else o["op"]:
                row = table["ops"][op]
                assert o["id"] in row["source_overrides"], (version, op)
                cited = [c for c in row["constraints"] if commit in c.get("source", "")]
                if "types" in o:
                    assert row["types"] == o["types"] and commit in row["types_source"]
                if o.get("add") or o.get("patch"):
                    assert cited, (version, o["id"])
    new, old = _load("trt-10.15.json")["ops"], _load("trt-10.1.json")["ops"]
    # cubic Resize: supported, only on the innermost 2 dims (both versions)
    for ops in (new, old):
        mode = next(c for c in ops["Resize"]["constraints"] if c.get("attr") == "mode" and c["kind"] == "attr_in"
                    and "when" not in c)
        assert mode["values"] == ["nearest", "linear", "cubic"]
        assert {"kind": "scales_innermost", "n": 2, "when": {"mode": "cubic"}}.items() <= next(
            c for c in ops["Resize"]["constraints"] if c["kind"] == "scales_innermost" and c["n"] == 2).items()
    # CumSum: the 10.15 importer takes a run-time axis, 10.1 still asserts an initializer
    assert not any(c["kind"] == "const_input" for c in new["CumSum"]["constraints"])
    assert any(c["kind"] == "const_input" for c in old["CumSum"]["constraints"])


def test_corpus_truth_applies_the_same_source_overrides(tmp_path) -> None:
    """testmodels/corpus/trtdoc.py judges models from the document *and* trt_source_overrides.toml:
    a cubic Resize of the innermost 2 dims is supported, of 3 dims a broken restriction."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from testmodels.corpus import trtdoc

    doc = trtdoc.doc_path()
    if doc is None:
        pytest.skip("shared reference docs not present")

    def resize(scales: list[float]) -> str:
        sc = numpy_helper.from_array(np.array(scales, np.float32), "scales")
        g = helper.make_graph([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="cubic")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4, 4][: len(scales)])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[sc])
        path = str(tmp_path / f"r{len(scales)}.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=10), path)
        return path

    assert trtdoc.judge(resize([1, 1, 2, 2]), doc)["verdict"] == "supported"
    j = trtdoc.judge(resize([1, 1, 2, 2, 2]), doc)
    assert j["verdict"] == "restriction broken" and "resize-cubic-innermost" in j["restriction_broken"][0]
