"""Damaged OpenVINO IR, judged by OpenVINO itself: graphlint reports an error exactly where
``openvino.Core().read_model`` / ``compile_model`` refuse the model, at the line of the
``<layer>`` or ``<edge>`` at fault (SARIF ``region.startLine``, the line in text and JSON).

The IRs are real ones written by ``openvino.save_model`` (an Add with a Const from the ONNX
frontend, a Pad with its optional pad_value built with the opset API), damaged one edit at a time.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable

import numpy as np
import openvino as ov
import pytest

from graphlint.fix.verify import OPENVINO_F32
from graphlint.target import data_dir
from tests.hostile_support import add_ir, built_ir, line_of, lint_cli, lint_sarif
from tests.hostile_support import write_ir as write

Edit = Callable[[str, bytes], tuple[str, bytes | None]]


def _build_pad(folder: str) -> None:
    import openvino.opset13 as ops

    x = ops.parameter([1, 4], np.float32, name="x")
    pad = ops.pad(x, ops.constant(np.array([0, 1], np.int64)), ops.constant(np.array([0, 1], np.int64)),
                  "constant", ops.constant(np.float32(7)))
    ov.save_model(ov.Model([pad], [x], "pad"), os.path.join(folder, "pad.xml"))


@pytest.fixture(scope="module")
def ir() -> tuple[str, bytes]:
    return add_ir()


@pytest.fixture(scope="module")
def pad_ir() -> tuple[str, bytes]:
    return built_ir("hostile-openvino-pad", _build_pad, "pad")


def openvino_refuses(xml_path: str) -> str | None:
    """What OpenVINO says about the IR (read_model, then compile_model on CPU), or None if it loads."""
    core = ov.Core()
    try:
        core.compile_model(core.read_model(xml_path), "CPU", OPENVINO_F32)
    except Exception as e:
        return " ".join(str(e).split())
    return None


def sub(old: str, new: str) -> Edit:
    def edit(xml: str, data: bytes) -> tuple[str, bytes]:
        assert old in xml, old
        return xml.replace(old, new, 1), data
    return edit


def pad_edge(xml: str, port: int) -> str:
    """The <edge> into input ``port`` of the Pad layer (id 5)."""
    return next(m.group(0) for m in re.finditer(r"<edge [^>]*/>", xml)
                if f'to-layer="5" to-port="{port}"' in m.group(0))


def drop_pad_edge(port: int) -> Edit:
    return lambda xml, data: (xml.replace(pad_edge(xml, port), ""), data)


def feed_pad_port_twice(xml: str, data: bytes) -> tuple[str, bytes]:
    second = pad_edge(xml, 2).replace('to-port="2"', 'to-port="3"')
    return xml.replace(pad_edge(xml, 3), pad_edge(xml, 3) + "\n\t\t" + second), data


ADD_EDGE_W = '<edge from-layer="1" from-port="0" to-layer="2" to-port="1" />'
# (name, seed, edit, what to find the offending line by, rule expected)
REFUSED: list[tuple[str, str, Edit, str, str]] = [
    ("edge-from-a-missing-layer", "add", sub('from-layer="1" from-port="0"', 'from-layer="99" from-port="0"'),
     '<edge from-layer="99"', "GL0006"),
    ("unknown-layer-type", "add", sub('type="Add"', 'type="TotallyUnknownOp"'), 'type="TotallyUnknownOp"', "GL0006"),
    ("edge-to-a-missing-port", "add", sub('to-layer="3" to-port="0"', 'to-layer="3" to-port="7"'),
     'to-port="7"', "GL0006"),
    ("edge-from-a-missing-port", "add", sub('from-layer="2" from-port="2"', 'from-layer="2" from-port="5"'),
     'from-port="5"', "GL0006"),
    ("edge-to-a-missing-layer", "add", sub('to-layer="3" to-port="0"', 'to-layer="42" to-port="0"'),
     'to-layer="42"', "GL0006"),
    ("add-with-one-input-edge", "add", sub(ADD_EDGE_W, ""), 'type="Add"', "GL0006"),
    ("layer-from-an-opset-that-does-not-exist", "add", sub('type="Add" version="opset1"', 'type="Add" version="opset99"'),
     'type="Add"', "GL0006"),
    ("layer-without-a-version", "add", sub('type="Add" version="opset1"', 'type="Add"'), 'type="Add"', "GL0006"),
    ("operation-from-a-later-opset", "add", sub('type="Add" version="opset1"', 'type="Gelu" version="opset1"'),
     'type="Gelu"', "GL0006"),
    # The reader reads weights only for type "Const": a "Constant" layer has no data (compile fails).
    ("const-spelled-constant", "add", sub('type="Const"', 'type="Constant"'), 'type="Constant"', "GL0006"),
    ("const-reads-past-the-end-of-the-bin", "add", lambda x, d: (x, d[:8]), 'type="Const"', "GL0005"),
    ("const-offset-past-the-bin", "add", sub('offset="0"', 'offset="4096"'), 'type="Const"', "GL0005"),
    ("bin-missing", "add", lambda x, d: (x, None), 'type="Const"', "GL0005"),
    ("negative-dim", "add", sub("<dim>4</dim>", "<dim>-7</dim>"), 'type="Parameter"', "GL0007"),
    ("question-mark-dim", "add", sub("<dim>4</dim>", "<dim>?</dim>"), 'type="Parameter"', "GL0007"),
    ("const-with-a-negative-shape", "add", sub('shape="1, 4"', 'shape="1, -4"'), 'type="Const"', "GL0007"),
    ("two-edges-into-one-port", "pad", feed_pad_port_twice, "SECOND-EDGE", "GL0006"),
    ("gap-in-the-connected-ports", "pad", drop_pad_edge(1), 'type="Pad"', "GL0006"),
]


def _case(name: str, seed: str, edit: Edit, tmp_path, ir, pad_ir) -> tuple[str, str]:
    xml, data = ir if seed == "add" else pad_ir
    new_xml, new_data = edit(xml, data)
    assert new_xml != xml or new_data != data
    return write(tmp_path, name, new_xml, new_data), new_xml


@pytest.mark.parametrize(("name", "seed", "edit", "needle", "rule"), REFUSED, ids=[c[0] for c in REFUSED])
def test_what_openvino_refuses_is_an_error_at_its_line(tmp_path, ir, pad_ir, name, seed, edit, needle, rule):
    p, text = _case(name, seed, edit, tmp_path, ir, pad_ir)
    said = openvino_refuses(p)
    assert said is not None, f"OpenVINO loads {name}: the case proves nothing"
    if needle == "SECOND-EDGE":
        lines = [i for i, ln in enumerate(text.splitlines(), 1) if 'to-layer="5" to-port="3"' in ln]
        want = lines[1]
    else:
        want = line_of(text, needle)
    run = lint_sarif([p], str(tmp_path)).sarif["runs"][0]
    errors = [x for x in run["results"] if x["level"] == "error"]
    assert errors, f"OpenVINO refuses {name} ({said}) but graphlint reports no error"
    assert {x["ruleId"] for x in errors} == {rule}, [x["message"]["text"] for x in errors]
    lines = {x["locations"][0]["physicalLocation"].get("region", {}).get("startLine") for x in errors}
    assert want in lines, (want, lines, [x["message"]["text"] for x in errors])
    j = json.loads(lint_cli(p, "--format", "json").out)
    assert want in {f["location"].get("line") for m in j["models"] for f in m["findings"] if f["severity"] == "error"}
    assert f"line {want}" in lint_cli(p).out


ACCEPTED: list[tuple[str, str, Edit]] = [
    ("unchanged", "add", lambda x, d: (x + "\n", d)),
    ("interval-dim", "add", sub('names="y">\n\t\t\t\t\t<dim>1</dim>', 'names="y">\n\t\t\t\t\t<dim>1..4</dim>')),
    ("dim-with-a-plus-sign", "add", sub("<dim>4</dim>", "<dim>+4</dim>")),
    ("optional-pad-value-without-its-edge", "pad", drop_pad_edge(3)),
]


@pytest.mark.parametrize(("name", "seed", "edit"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_what_openvino_loads_has_no_error(tmp_path, ir, pad_ir, name, seed, edit):
    p, _ = _case(name, seed, edit, tmp_path, ir, pad_ir)
    assert openvino_refuses(p) is None
    run = lint_sarif([p], str(tmp_path)).sarif["runs"][0]
    assert [x["message"]["text"] for x in run["results"] if x["level"] == "error"] == []
    if name.startswith("optional"):  # loads, but pads with 0 instead of the IR's 7: a warning on the Pad
        (w,) = [x for x in run["results"] if x["ruleId"] == "GL0006"]
        assert w["level"] == "warning" and "optional" in w["message"]["text"]


def test_a_custom_opset_is_a_warning_not_an_error(tmp_path, ir):
    """OpenVINO refuses it without the extension that defines it, which graphlint cannot know of."""
    xml, data = ir
    p = write(tmp_path, "ext", xml.replace('type="Add" version="opset1"', 'type="Frobnicate" version="extension"'), data)
    assert "unsupported opset: extension" in openvino_refuses(p)
    run = lint_sarif([p], str(tmp_path)).sarif["runs"][0]
    (w,) = run["results"]
    assert w["ruleId"] == "GL0006" and w["level"] == "warning" and "core.add_extension" in w["message"]["text"]
    assert w["locations"][0]["physicalLocation"]["region"]["startLine"] == line_of(xml, 'type="Add"')


# --- the data behind GL0006: the reader's opset tables -----------------------------------------

TABLE = os.path.join(data_dir(), "support", f"openvino-{'.'.join(ov.get_version().split('.')[:2])}-ir.json")


@pytest.fixture(scope="module")
def gen():
    sys.path.insert(0, os.path.join(data_dir(), "gen"))
    try:
        import gen_openvino_ir
    finally:
        sys.path.pop(0)
    return gen_openvino_ir


@pytest.fixture(scope="module")
def table() -> dict:
    with open(TABLE, encoding="utf-8") as f:
        return json.load(f)


def test_ir_opset_table_agrees_with_the_installed_wheels_headers_and_factories(gen, table):
    """The cheap half of regenerating it (the reader probes take a minute: see the next test)."""
    headers = gen.header_tables()
    assert sorted(table["opsets"]) == sorted(headers)
    for opset, listed in headers.items():
        have = set(table["opsets"][opset])
        assert set(listed) <= have, opset
        assert sorted(have - set(listed)) == table["reader_only"].get(opset, []), opset
        for op in have:
            assert table["opsets"][opset][op] == gen.required_inputs(opset, op), (opset, op)
    assert table["version"] == ov.get_version().split("-")[0]


@pytest.mark.parametrize("opset", ["opset1", "opset8", "opset16", "opset17"])
def test_ir_reader_knows_exactly_the_tables_operations(tmp_path, gen, table, opset):
    """Every operation of every opset (and the IR's own spellings), tried in ``opset``: read_model
    says it "doesn't contain the operation" exactly for those the table leaves out."""
    ops = sorted({op for t in table["opsets"].values() for op in t} | set(table["aliases"]))
    paths = []
    for op in ops:
        paths.append(str(tmp_path / f"{op}.xml"))
        with open(paths[-1], "w", encoding="utf-8") as f:
            f.write(gen.one_layer_ir(op, opset))
    verdicts = gen.reader_says_absent(paths)
    wrong = [(op, absent) for op, absent in zip(ops, verdicts, strict=True)
             if absent is not None and absent != (table["aliases"].get(op, op) not in table["opsets"][opset])]
    assert wrong == []
    assert sum(v is None for v in verdicts) <= 3  # a crash hides the answer: there must be few
