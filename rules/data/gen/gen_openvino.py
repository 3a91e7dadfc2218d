"""Build rules/data/support/openvino-<version>.json by asking the installed OpenVINO itself.

    python rules/data/gen/gen_openvino.py
    PYTHONPATH=. .venvs/openvino-2024.6/bin/python rules/data/gen/gen_openvino.py   # an earlier release's venv
                                                                                # (testmodels/engine_venvs.sh)

For every operator schema onnx (and onnxruntime, for com.microsoft) defines, at every
since-version, a one-node model is converted with OpenVINO's ONNX frontend; the frontend says
"No conversion rule found for operations: Op-N" exactly when it has no translator for that op at
that opset, whatever the inputs. Errors of the translator itself (our placeholder inputs are not
meaningful) still mean a translator exists. The result per op is the lowest opset the frontend
converts (it uses the newest translator at or below the model's opset, so support is open-ended
upwards), cross-checked against the frontend's own table (src/frontends/onnx/docs/supported_ops.md
at the commit in ``DOCUMENT``, whose line each entry cites). The frontend also registers most
translators from opset 1, below the op's first ONNX schema (LayerNormalization, Gelu,
GroupNormalization in older-opset models, as graph optimizers write them): for default-domain ops
the lowest such opset is found by probing the op's first schema at lower model opsets.

Ops with optional outputs are probed once more with every output declared: a translator that makes
fewer (2024.6's SkipLayerNormalization makes 1 of 4) gives the op a ``max_outputs`` constraint. Two
frontend facts are probed as such: which empty constants become scalars (the rank walk's
``empty_scalar_ranks``) and whether a Reshape to a scalar converts (else ``input_not_empty``).
Element types the frontend can load at all are probed the same way (a graph input of each ONNX
type feeding Identity). Translator and CPU-plugin checks that reject valid nodes (inputs that must
be constant, rank limits, attribute values) are not discoverable this way; they are listed in
``MANUAL`` with the frontend/plugin error text they come from (observed on 2026.4.1; cited for the release
the table is made from, with line numbers only where they were read from that release's errors).

Every probe goes through ``read_model`` in a child process (``Reader``, ov_reader.py): openvino 2024.6.0 crashes on a
placeholder node of a translator it has. A release whose supported_ops.md is not in ``DOCUMENTS`` gets a
table without rows (its ``source`` is the table itself).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections import defaultdict
from typing import Any

import numpy as np
import onnx
import onnx.defs
import openvino as ov
from onnx import TensorProto, helper, numpy_helper

from graphlint.fsutil import atomic_write_text

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its sibling, however this file is loaded
from ov_reader import Reader, converts, said_of

DOMAINS = ("", "ai.onnx.ml", "com.microsoft", "ai.onnx.preview.training", "ai.onnx.preview")
OV_VERSION = ov.get_version().split("-")[0]
OV_MAJOR_MINOR = ".".join(OV_VERSION.split(".")[:2])
# The wheel's version string names the branch it was built from ("2024.6.0-17404-4c0f47d2335-releases/2024/6").
OV_BRANCH = ov.get_version().rsplit("-", 1)[-1] if "releases/" in ov.get_version() else \
    f"releases/{OV_MAJOR_MINOR.replace('.', '/')}"

# The frontend's own table (src/frontends/onnx/docs/supported_ops.md) per release, where a copy of it
# was read (shared/reference/openvino-onnx-supported-ops.md is the 2026.4 one): entries cite its lines.
# For other releases the document is not cited; its ops that have no ONNX schema (ATen,
# org.openvinotoolkit, ...) are still the candidates, probed on the wheel with a schema-less node.
DOCUMENTS = {
    "2026.4": ("https://github.com/openvinotoolkit/openvino/blob/0ae60f0ffec990b581cf29cae47563090e5deca0/"
               "src/frontends/onnx/docs/supported_ops.md"),
}
DOCUMENT = DOCUMENTS.get(OV_MAJOR_MINOR)

_FE = "OpenVINO ONNX frontend conversion error"
# The translators' source at the release the wheel was built from (its version string names the branch and commit).
_OP_SRC = f"https://github.com/openvinotoolkit/openvino/blob/{OV_BRANCH}/src/frontends/onnx/frontend/src/op/"
_CPU = "OpenVINO CPU plugin compile error"
# Lines of the checks MANUAL quotes, as the engine's error text named them on the release they were observed
# on; another release cites the file alone.
_LINES = {"2026.4.1": {"conv.cpp": 38, "loop.cpp": 310, "src/plugins/intel_cpu/src/node.cpp": 108}}


def _at(file: str) -> str:
    line = _LINES.get(OV_VERSION, {}).get(file)
    return f"{file}:{line} in {OV_VERSION}" if line else f"{file} in {OV_VERSION}"


def _c(kind: str, text: str, source: str, **kw: Any) -> dict[str, Any]:
    return {"kind": kind, **kw, "text": text, "source": source}


# Checks inside translators / the CPU plugin. Each names the check's message; "[inferred]" where the
# condition was read from the frontend source/error rather than stated in its docs.
MANUAL: dict[str, dict[str, list[dict[str, Any]]]] = {
    "ai.onnx": {
        "Dropout": [_c("const_input", "training_mode must be a Constant (ov::op::util::is_constant check)", _FE,
                       inputs=[2], values=[False])],
        "STFT": [_c("const_input", "frame_step must be a Constant (is_constant check)", _FE, inputs=[1])],
        "SplitToSequence": [_c("const_input", "split must be a Constant (split_const != nullptr check)", _FE,
                               inputs=[1])],
        "Resize": [_c("attr_in", "half_pixel_symmetric and tf_crop_and_resize are not supported coordinate modes",
                      _FE, attr="coordinate_transformation_mode",
                      values=["half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn", "asymmetric",
                              "align_corners"])],
        "GridSample": [_c("input_rank", "only 4-D input (data_rank == 4 check)", _FE, inputs=[0], ranks=[4])],
        "Pad": [_c("attr_in", "Unsupported padding mode (pad.cpp: wrap)", _FE, attr="mode",
                   values=["constant", "reflect", "edge"])],
        "Col2Im": [_c("input_len", "image_shape must have two elements (is_two_elem_1d check)", _FE,
                      input=1, values=[2])],
        "NegativeLogLikelihoodLoss": [_c("attr_absent", "ignore_index: get_attribute is not implemented", _FE,
                                         attrs=["ignore_index"])],
        "QuantizeLinear": [_c("attr_absent", "blocked quantization (block_size) fails the element-count check "
                              "[inferred: seen without zero point]", _FE, attrs=["block_size"]),
                           _c("output_dtype", "is_supported_type check: no float4e2m1 output", _FE, outputs=[0],
                              types=["uint8", "int8", "uint16", "int16", "uint4", "int4", "float8e4m3fn",
                                     "float8e5m2"])],
        "Equal": [_c("input_dtype", "unsupported src_prc: string (CPU eltwise kernels)", _CPU, inputs=[0],
                     types=["float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8",
                            "uint16", "uint32", "uint64", "bool"])],
        "RandomUniformLike": [_c("output_dtype", "min/max must have the output type: only float32 outputs",
                                 _FE, outputs=[0], types=["float32"])],
        "Mod": [_c("input_dtype", "If the input type is floating point, then `fmod` attribute must be set to 1",
                   _FE, inputs=[0], when={"fmod": 0},
                   types=["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])],
        "Celu": [_c("input_dtype", "element type merge check (alpha is f32): float32 input only", _FE, inputs=[0],
                    types=["float32"])],
        "Unsqueeze": [_c("const_input", "CPU plug-in doesn't support Unsqueeze operation with dynamic rank", _CPU,
                         inputs=[1])],
        # The frontend converts every branch and body, taken or not, with their static shapes.
        "Scan": [_c("body_no_outer", "Number of Scan node inputs is less than required based on body graph "
                    "parameters (scan.cpp): a body that reads computed values of the enclosing graph (constants are "
                    "fine)", _FE, attr="body")],
        # ov::op::v8::If merges its branches' shapes unless the condition folds (bounds included).
        "Conv": [_c("static_rank", "The input data tensor's rank has to be known (static) ("
                    f"{_at('conv.cpp')}, {_OP_SRC}conv.cpp; ov::op::v8::If gives a dynamic rank when its branches differ in "
                    "rank and its condition does not fold)", _FE, inputs=[0])],
        "Loop": [_c("body_passthrough", "The provided loop body graph canonical inputs size (N), does not match the "
                    f"sum of loop carried dependencies and two mandatory inputs ({_at('loop.cpp')}, {_OP_SRC}"
                    "loop.cpp, read from a file: each body output that is a body input unchanged adds a body "
                    "parameter; a model read from memory converts)", _FE, attr="body", skip_inputs=2, skip_outputs=1)],
        "If": [_c("input_rank", "Check 'if_condition_rank.compatible(1) || if_condition_rank.compatible(0)' "
                  f"failed (ov::op::v8::If, https://github.com/openvinotoolkit/openvino/blob/{OV_BRANCH}/src/"
                  "core/src/op/if.cpp): the condition must be a scalar or 1-D; ONNX allows any one-element tensor",
                  _FE, inputs=[0], ranks=[0, 1]),
               _c("static_output_rank", "CPU plug-in doesn't support If operation with dynamic rank (Check "
                  f"'!shape.rank().is_dynamic()' failed at {_at('src/plugins/intel_cpu/src/node.cpp')}: every "
                  "CPU node needs outputs of static rank; ov::op::v8::If merges branches of different rank into a "
                  "dynamic rank unless its condition folds)", _CPU)],
        "Split": [_c("split_outputs_fit", "The split number is invalid (split.cpp): num_outputs chunks of "
                     "ceil(length / num_outputs) leave the last one empty on the static split axis", _FE)],
        **{op: [_c("const_input", "CPU plug-in doesn't support ReduceSum with dynamic rank (run-time axes of "
                   "more than one element with keepdims=0)", _CPU, inputs=[1], when={"keepdims": 0}, allow_len=[1])]
           for op in ("ReduceSum", "ReduceLogSum")},
    },
}


_RANK_WALK = frozenset({"static_rank", "static_output_rank"})  # constraints that follow engine ranks


def _placeholder(type_str: str, allowed: dict[str, list[str]]) -> int:
    """An element type the schema allows for a parameter (float when possible)."""
    choices = allowed.get(type_str, [type_str])
    for pref in ("tensor(float)", "tensor(int64)", "tensor(int32)", "tensor(bool)"):
        if pref in choices:
            return _enum(pref)
    for c in choices:
        if c.startswith("tensor("):
            return _enum(c)
    return TensorProto.FLOAT


def _enum(tensor_type: str) -> int:
    name = tensor_type[len("tensor("):-1].upper()
    name = {"FLOAT": "FLOAT", "DOUBLE": "DOUBLE"}.get(name, name)
    return getattr(TensorProto, name, TensorProto.FLOAT)


def _probe_model(schema: Any, domain: str, opset: int | None = None) -> onnx.ModelProto:
    allowed = {tc.type_param_str: list(tc.allowed_type_strs) for tc in schema.type_constraints}
    inputs, names = [], []
    for i, p in enumerate(schema.inputs):
        if p.option == onnx.defs.OpSchema.FormalParameterOption.Optional:
            break
        name = f"in{i}"
        names.append(name)
        inputs.append(helper.make_tensor_value_info(name, _placeholder(p.type_str, allowed), [1, 2, 3, 4]))
    outs = [f"out{i}" for i in range(max(1, schema.min_output))]
    node = helper.make_node(schema.name, names, outs, domain=domain)
    graph = helper.make_graph([node], "probe", inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
    opsets = [helper.make_opsetid(domain, opset or schema.since_version)]
    if domain:
        opsets.append(helper.make_opsetid("", 17))
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _lowest_opset(core: ov.Core | Reader, schema: Any, folder: str) -> int | None:
    """The lowest model opset below the op's first schema at which the frontend converts it (a
    translator registered at version k takes every opset from k on, so the answer is a bisection)."""
    lo, hi, best = 1, schema.since_version - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        if converts(core, _probe_model(schema, "", mid), folder)[0]:
            best, hi = mid, mid - 1
        else:
            lo = mid + 1
    return best


def _doc_rows(md: str) -> dict[tuple[str, str], tuple[int, str]]:
    rows: dict[tuple[str, str], tuple[int, str]] = {}
    if not os.path.exists(md):
        return rows
    with open(md, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 5 and cells[1] and not set(cells[1]) <= set("-") and cells[1] != "Operation Name":
                rows[(cells[0] or "ai.onnx", cells[1])] = (lineno, cells[2])
    return rows


def _schemas() -> list[tuple[str, Any]]:
    out = [(s.domain, s) for s in onnx.defs.get_all_schemas_with_history() if s.domain in DOMAINS]
    try:  # com.microsoft schemas come from onnxruntime
        from onnxruntime.capi import onnxruntime_pybind11_state as C

        seen = {(d, s.name, s.since_version) for d, s in out}
        for s in C.get_all_operator_schema():
            if s.domain == "com.microsoft" and (s.domain, s.name, s.since_version) not in seen:
                out.append((s.domain, _OrtSchema(s)))
    except ImportError:
        pass
    return out


class _OrtSchema:
    """Adapter giving an onnxruntime schema the attributes of onnx.defs.OpSchema used here."""

    def __init__(self, s: Any) -> None:
        self.name, self.since_version, self.min_output = s.name, s.since_version, s.min_output
        self.type_constraints = [_TC(t.type_param_str, t.allowed_type_strs) for t in s.type_constraints]
        self.inputs = [_P(p.typeStr, int(p.option)) for p in s.inputs]
        self.outputs = [_P(p.typeStr, int(p.option)) for p in s.outputs]
        self.defaults = {n: onnx.AttributeProto.FromString(a._default_value) for n, a in s.attributes.items()
                         if a._default_value}


class _TC:
    def __init__(self, name: str, allowed: list[str]) -> None:
        self.type_param_str, self.allowed_type_strs = name, allowed


class _P:
    def __init__(self, type_str: str, option: int) -> None:
        self.type_str = type_str
        self.option = onnx.defs.OpSchema.FormalParameterOption(option)


def _dtypes(core: ov.Core | Reader, folder: str) -> tuple[list[str], list[str]]:
    from graphlint import dtypes

    ok, bad = [], []
    for enum, name in sorted(dtypes.ONNX_DTYPES.items()):
        g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "t",
                              [helper.make_tensor_value_info("x", enum, [2])],
                              [helper.make_tensor_value_info("y", enum, [2])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
        (ok if said_of(core, m, folder) == "" else bad).append(name)
    return ok, bad


def _local_functions(core: ov.Core | Reader, folder: str) -> bool:
    """Whether a call of a model-local function (its body: Sigmoid, Mul) converts."""
    fn = helper.make_function("local.probe", "gated", ["x"], ["y"],
                              [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])],
                              [helper.make_opsetid("", 18)])
    g = helper.make_graph([helper.make_node("gated", ["x"], ["y"], domain="local.probe")], "t",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local.probe", 1)],
                          functions=[fn], ir_version=10)
    return converts(core, m, folder)[1] == ""


def _empty_constant_ranks(core: Reader, folder: str) -> list[int]:
    """The ranks (1 to 8) at which the frontend makes an empty Constant (a dim of 0 first, then 4s) a
    scalar: 2026.4 every one (optimum's (0, 4, 1, 8) dummy caches, then an If between one and a rank-4
    cache has a dynamic rank), 2024.6 only rank 1."""
    ranks = []
    for rank in range(1, 9):
        empty = numpy_helper.from_array(np.zeros((0,) + (4,) * (rank - 1), np.float32), "e")
        g = helper.make_graph([helper.make_node("Constant", [], ["e"], value=empty),
                               helper.make_node("Identity", ["e"], ["y"])], "t", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        if converts(core, m, folder)[1] != "" or len(core.ranks) != 1:
            raise RuntimeError("the empty-constant probe did not convert")
        if core.ranks[0] == 0:
            ranks.append(rank)
    return ranks


def reshape_to_scalar_model() -> onnx.ModelProto:
    """A Reshape of a one-element tensor to a scalar: an empty constant shape, as paddle2onnx writes."""
    shape = numpy_helper.from_array(np.zeros((0,), np.int64), "s")
    g = helper.make_graph([helper.make_node("Constant", [], ["s"], value=shape),
                           helper.make_node("Reshape", ["x", "s"], ["y"])], "t",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _reshape_to_scalar(core: Reader, folder: str) -> bool:
    """Whether a Reshape to a scalar converts: 2024.6 reads the empty shape as a scalar pattern and
    refuses it ("The value of scalar shape pattern should be equal to 1!"), 2026.4 converts it."""
    return converts(core, reshape_to_scalar_model(), folder)[1] == ""


_OUTPUTS_SAID = re.compile(r"Expected output number of \S+ node is \d+ while the implementation provides (\d+)")


def _attribute_defaults(schema: Any) -> list[onnx.AttributeProto]:
    """The schema's attributes that have a default, set to it (some translators read an attribute
    without a default of their own: 2024.6's SkipLayerNormalization and epsilon)."""
    if isinstance(schema, _OrtSchema):
        items = schema.defaults.items()
    else:
        items = ((n, a.default_value) for n, a in schema.attributes.items() if a.default_value.type)
    out = []
    for name, value in items:
        attribute = onnx.AttributeProto()
        attribute.CopyFrom(value)
        attribute.name = name
        out.append(attribute)
    return out


def _output_limits(core: Reader, folder: str) -> dict[tuple[str, str], int]:
    """(domain, op) -> how many outputs its translator makes, for the ops whose translator makes fewer
    than the schema declares: the frontend refuses a node that declares more, named or not ("Expected
    output number of SkipLayerNormalization node is 4 while the implementation provides 1", 2024.6).
    Each op with optional outputs is probed with all of them declared and its default attributes; an op
    whose translator refuses the placeholder inputs first is not shown."""
    limits: dict[tuple[str, str], int] = {}
    for domain, schema in _schemas():
        m = all_outputs_model(schema, domain)
        if m is None:
            continue
        said = _OUTPUTS_SAID.search(said_of(core, m, folder) or "")
        if said:
            key = (domain or "ai.onnx", schema.name)
            limits[key] = min(limits.get(key, len(m.graph.output)), int(said.group(1)))
    return limits


def all_outputs_model(schema: Any, domain: str) -> onnx.ModelProto | None:
    """The op's probe with every output declared and its default attributes set; None for an op
    without optional outputs (or with variadic ones)."""
    outs = list(schema.outputs)
    if len(outs) <= max(1, schema.min_output) or outs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
        return None
    m = _probe_model(schema, domain)
    node = m.graph.node[0]
    names = [f"out{i}" for i in range(len(outs))]
    del node.output[:], m.graph.output[:]
    node.output.extend(names)
    node.attribute.extend(_attribute_defaults(schema))
    m.graph.output.extend(helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in names)
    return m


def _max_outputs(op: str, n: int) -> dict[str, Any]:
    return _c("max_outputs", f"Expected output number of {op} node is N while the implementation provides {n} "
              "(Check 'onnx_node.get_outputs_size() <= outputs_size', https://github.com/openvinotoolkit/openvino/"
              f"blob/{OV_BRANCH}/src/frontends/onnx/frontend/src/core/graph.cpp): the translator makes {n} "
              "output(s); a node that declares more, named or not, is refused", _FE, n=n)


def _max_opset(core: ov.Core | Reader, folder: str) -> int:
    best = 1
    for v in range(1, onnx.defs.onnx_opset_version() + 6):
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "t",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", v)], ir_version=10)
        if converts(core, m, folder)[1] == "":
            best = v
    return best


def _bare_model(domain: str, op: str, opset: int) -> onnx.ModelProto:
    """One node of an op that has no ONNX schema (the frontend's table lists it): one float input."""
    dom = "" if domain == "ai.onnx" else domain
    node = helper.make_node(op, ["in0"], ["out0"], domain=dom)
    graph = helper.make_graph([node], "probe", [helper.make_tensor_value_info("in0", TensorProto.FLOAT, [1, 2, 3, 4])],
                              [helper.make_tensor_value_info("out0", TensorProto.FLOAT, None)])
    opsets = [helper.make_opsetid(dom, opset)] + ([helper.make_opsetid("", 17)] if dom else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def build(md: str) -> dict[str, Any]:
    core = Reader()
    rows = _doc_rows(md)
    cite = DOCUMENT is not None  # the document is this release's: entries cite its rows
    found: dict[tuple[str, str], dict[str, Any]] = defaultdict(lambda: {"versions": [], "rejected": []})
    first: dict[str, Any] = {}  # default-domain op -> its first schema
    with tempfile.TemporaryDirectory() as folder:
        for domain, schema in sorted(_schemas(), key=lambda x: (x[0], x[1].name, x[1].since_version)):
            ok, _ = converts(core, _probe_model(schema, domain), folder)
            key = (domain or "ai.onnx", schema.name)
            (found[key]["versions"] if ok else found[key]["rejected"]).append(schema.since_version)
            if not domain:
                first.setdefault(schema.name, schema)
        below = {op: _lowest_opset(core, schema, folder) for op, schema in first.items()
                 if schema.since_version > 1 and found[("ai.onnx", op)]["versions"]}
        ok_types, bad_types = _dtypes(core, folder)
        max_opset = _max_opset(core, folder)
        local_functions = _local_functions(core, folder)
        empty_ranks = _empty_constant_ranks(core, folder)
        reshape_to_scalar = _reshape_to_scalar(core, folder)
        output_limits = _output_limits(core, folder)
        # Another release's document: its ops without a schema are only candidates, asked of this wheel.
        bare = {} if cite else {
            (dom, op): converts(core, _bare_model(dom, op, min(int(v) for v in re.findall(r"\d+", versions))),
                                 folder)[0]
            for (dom, op), (_, versions) in rows.items()
            if op not in {o for d, o in found if d == dom} and re.search(r"\d", versions)}
    core.close()
    domains: dict[str, dict[str, Any]] = defaultdict(dict)
    for (dom, op), f in sorted(found.items()):
        row = rows.get((dom, op)) if cite else None
        pre = below.get(op) if dom == "ai.onnx" else None
        entry: dict[str, Any] = {
            "since": pre or (min(f["versions"]) if f["versions"] else None),
            "probed": sorted(f["versions"] + f["rejected"]),
            "row": row[0] if row else None,
            "doc_versions": row[1] if row else None,
        }
        if pre:
            entry["schema_since"] = min(f["versions"])
        # The rank walk (graphlint/analysis/support/dynrank.py) needs this release's empty constants.
        constraints = [c | {"empty_scalar_ranks": empty_ranks} if c["kind"] in _RANK_WALK else c
                       for c in MANUAL.get(dom, {}).get(op, [])]
        if (dom, op) == ("ai.onnx", "Reshape") and not reshape_to_scalar:
            constraints.append(_c("input_not_empty", "The value of scalar shape pattern should be equal to 1! "
                                  "(reshape_shape_inference.hpp, https://github.com/openvinotoolkit/openvino/blob/"
                                  f"{OV_BRANCH}/src/core/shape_inference/include/reshape_shape_inference.hpp): an "
                                  "empty constant shape (a reshape to a scalar) becomes a scalar pattern", _FE,
                                  inputs=[1]))
        if (dom, op) in output_limits:
            constraints.append(_max_outputs(op, output_limits[(dom, op)]))
        if constraints:
            entry["constraints"] = constraints
        domains[dom][op] = entry
    # Ops the frontend table lists that no schema covers (ATen, org.openvinotoolkit ops, ...).
    for (dom, op), (lineno, versions) in rows.items():
        if op not in domains.get(dom, {}) and versions:
            vs = [int(v) for v in re.findall(r"\d+", versions)]
            if cite:
                domains[dom][op] = {"since": min(vs), "probed": [], "row": lineno, "doc_versions": versions}
            elif (dom, op) in bare:  # probed schema-less at the document's first version
                domains[dom][op] = {"since": min(vs) if bare[(dom, op)] else None, "probed": [min(vs)],
                                    "row": None, "doc_versions": None}
    head: dict[str, Any] = {"engine": "openvino", "version": OV_VERSION, "kind": "ov-onnx-frontend"}
    if cite:
        head |= {"source": DOCUMENT, "row_anchor": "#L",
                 "source_note": f"openvino {OV_VERSION} wheel: ONNX frontend conversion of one-node probe models "
                                "(rules/data/gen/gen_openvino.py); rows cite the frontend's supported_ops.md"}
    else:
        head |= {"source": f"rules/data/support/openvino-{OV_MAJOR_MINOR}.json (the openvino {OV_VERSION} wheel's "
                           "ONNX frontend, probed)",
                 "source_note": f"openvino {OV_VERSION} wheel ({ov.get_version()}): ONNX frontend conversion of one-node "
                                "probe models (rules/data/gen/gen_openvino.py); the frontend's supported_ops.md of "
                                f"{OV_BRANCH} was not read here, so entries cite no row; the ops without an ONNX schema "
                                "are the ones a newer release's table lists, each probed with a schema-less node"}
    return {
        **head,
        "generated_by": "rules/data/gen/gen_openvino.py",
        "dispatch": "domain",
        "max_opset": max_opset,
        # The CPU plugin cannot compile Parameters/Results of dynamic rank: sequence-typed graph
        # inputs and outputs ("doesn't support Parameter operation with dynamic rank").
        "io_refused_kinds": ["sequence_type"],
        # Whether the frontend expands model-local functions (ModelProto.functions) into their bodies.
        "local_functions": local_functions,
        "element_types": {"loadable": ok_types, "refused": bad_types},
        "domains": dict(domains),
    }


def main(argv: list[str]) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    md = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(root), "shared", "reference",
                                                    "openvino-onnx-supported-ops.md")
    major_minor = ".".join(OV_VERSION.split(".")[:2])
    out = os.path.join(os.path.dirname(here), "support", f"openvino-{major_minor}.json")
    data = build(md)
    atomic_write_text(out, json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {out}: {sum(len(v) for v in data['domains'].values())} ops, max opset {data['max_opset']}")


if __name__ == "__main__":
    main(sys.argv)
