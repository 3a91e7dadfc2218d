"""The precision analysis: what a target computes in, and which nodes break at that precision.

Per target, from ``rules/data/precision.toml`` and the value ranges (``value_range``):

* the *setting*: the precision asked for (``--precision``, the target option ``precision``) or
  the target's default (OpenVINO GPU/NPU fp16; OpenVINO CPU bf16 on AVX512_BF16/AMX hosts, said
  as a condition; TensorRT and ONNX Runtime fp32), and the table's engine entry for it;
* *overflows*: float values some element is known to push past the format's largest finite
  number (a reached value, not a bound: see value_range), each with the chain of nodes to keep
  in fp32 -- the node and every consumer that receives an out-of-range value, until the values
  are back in range. Additive attention masks (huge negatives that only reach a Softmax) are
  left out: measured harmless where they run here (see the table's mask culprit);
* *accumulations*: CumSum over a static axis at least as long as the table's ``min_length``,
  with whether the engine keeps the running sum in the reduced precision.

Nothing is computed at fp32; at bf16 (float32's exponent range) only the accumulations.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphlint.analysis import analysis, computed
from graphlint.analysis.value_range import Range, compute, constant, declared_shape, onnx_op
from graphlint.ir import Model, Node, Value
from graphlint.target import Target, data_dir

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

TABLE = "rules/data/precision.toml"
NAMES = {"fp16": "fp16", "f16": "fp16", "half": "fp16", "float16": "fp16", "bf16": "bf16", "bfloat16": "bf16",
         "fp32": "fp32", "f32": "fp32", "float32": "fp32"}
# ops an additive mask goes through on its way to the softmax, and where it ends harmlessly
_MASK_PATH = frozenset({"Add", "Sub", "Where", "Reshape", "Transpose", "Expand", "Slice", "Cast", "Unsqueeze",
                        "Squeeze", "Concat", "Identity", "Mul", "Min", "Max", "Tile", "Gather", "Convert"})
_MASK_END = frozenset({"Softmax", "LogSoftmax", "ReduceMax", "ArgMax", "TopK"})


@functools.cache
def table() -> dict[str, Any]:
    with open(os.path.join(data_dir(), "precision.toml"), "rb") as f:
        return tomllib.load(f)


def engine(engine_id: str) -> dict[str, Any]:
    return next((e for e in table()["engine"] if e["id"] == engine_id), {})


@dataclass(frozen=True)
class Setting:
    precision: str  # fp32 | fp16 | bf16
    explicit: bool  # asked for with --precision, not the target's default
    condition: str  # when the default holds only on some hosts, which ones
    engine: str  # [[engine]] id of the table, "" when it has none

    def why(self, title: str) -> str:
        """Why the target computes in this precision, for a finding's message."""
        if self.explicit:
            return f"{title} at --precision {self.precision}"
        if self.condition:
            return f"{title} computes in {self.precision} by default {self.condition.split(';')[0]}"
        return f"{title} computes in {self.precision} by default"


def setting(target: Target) -> Setting:
    asked = target.option("precision")
    if asked:
        precision = NAMES.get(str(asked).lower(), str(asked).lower())
        return Setting(precision, True, "", _engine_for(target, precision))
    device = target.device or ""
    default = next((d for d in table()["default"]
                    if d["target"] == target.name and d.get("device", device) == device), None)
    if default is None:
        return Setting("fp32", False, "", "")
    return Setting(default["precision"], False, default.get("condition", ""), default.get("engine", ""))


def _engine_for(target: Target, precision: str) -> str:
    device = target.device or ""
    for e in table()["engine"]:
        if e["target"] == target.name and NAMES.get(e["precision"]) == precision \
                and (target.name == "trt" or e["device"] == device):
            return e["id"]
    if target.name == "trt":  # one entry covers TensorRT's reduced precisions
        return "trt-fp16"
    return ""


@dataclass
class Overflow:
    node: Node
    value: Value
    reached: float
    keep: list[Node]  # the node and the consumers that must take its value in fp32
    marked: bool = False  # every node of ``keep`` already carries a keep-fp32 mark


@dataclass
class Accumulation:
    node: Node
    length: int
    accumulates: str  # "reduced" | "unknown"
    min_length: int
    marked: bool = False


ONNX_MARK = "graphlint.keep_fp32"  # node metadata_props key written by graphlint fix (a record only)


def marked_nodes(model: Model) -> set[str]:
    """Names of nodes already marked keep-fp32: IR layers with ``precise`` (or the 2026
    ``DisablePrecisionConversion`` with an f16 entry, which is what the CPU plugin checks),
    ONNX nodes with the ``graphlint.keep_fp32`` metadata entry."""
    out: set[str] = set()
    if model.format == "openvino":
        for node in model.graph.nodes:
            rt = node.outputs[0].rt_info if node.outputs else {}
            dpc = rt.get("DisablePrecisionConversion", "")
            if "precise" in rt or "f16" in dpc.replace("bf16", "") or "dynamic:dynamic" in dpc:
                out.add(node.name)
        return out
    proto = getattr(model, "proto", None)
    for node in proto.graph.node if proto is not None else ():
        if any(p.key == ONNX_MARK for p in node.metadata_props):
            out.add(node.name)
    return out


@dataclass
class PrecisionFacts:
    setting: Setting
    limit: float = float("inf")  # the format's largest finite value
    overflows: list[Overflow] = field(default_factory=list)
    accumulations: list[Accumulation] = field(default_factory=list)
    ranges: dict[str, Range] = field(default_factory=dict)


def _float(value: Value | None) -> bool:
    return value is not None and (value.dtype is None or value.dtype.startswith(("float", "bfloat")))


def _only_masks(value: Value, depth: int = 0) -> bool:
    """The value only flows, through mask plumbing, into softmax-like consumers."""
    if depth > 8 or value.is_output or not value.consumers:
        return False
    for c in value.consumers:
        if onnx_op(c) in _MASK_END:
            continue
        if onnx_op(c) not in _MASK_PATH or not all(_only_masks(o, depth + 1) for o in c.outputs):
            return False
    return True


def _keep_chain(node: Node, ranges: dict[str, Range], limit: float) -> list[Node]:
    """The node and each consumer fed an out-of-range value, until the values fit again."""
    chain: list[Node] = [node]
    seen = {id(node)}
    todo = [node]
    while todo:
        n = todo.pop()
        for out in n.outputs:
            r = ranges.get(out.name)
            if r is None or r.magnitude <= limit:
                continue
            for c in out.consumers:
                if id(c) not in seen and onnx_op(c) not in _MASK_END:
                    seen.add(id(c))
                    chain.append(c)
                    todo.append(c)
    return chain


def _shape_source(model: Model):
    """Static shapes from the shapes analysis when a rule computed it (it resolves dims ONNX
    inference leaves as unk__N), else the loader's."""
    facts = computed(model, "shapes")
    if facts is None:
        return declared_shape

    def shape_of(value: Value) -> tuple | None:
        dims = facts.shapes.get(value)
        if dims is None:
            return value.shape
        return tuple(d.to_dim() if d is not None else None for d in dims)  # Poly -> int or its text

    return shape_of


def _axis_length(node: Node, shape_of) -> int | None:
    x = node.inputs[0] if node.inputs else None
    axis = constant(node.inputs[1]) if len(node.inputs) > 1 else None
    dims = shape_of(x) if x is not None else None
    if not dims or axis is None or axis.size != 1:
        return None
    dim = dims[int(axis.reshape(-1)[0]) % len(dims)]
    return dim if isinstance(dim, int) else None


def facts(model: Model, target: Target) -> PrecisionFacts:
    st = setting(target)
    out = PrecisionFacts(st)
    if st.precision == "fp32" or st.precision not in table()["format"]:
        return out
    out.limit = float(table()["format"][st.precision]["max"])
    # bf16 shares float32's exponent range: ranges (which read every weight) only matter for fp16
    inputs = target.option("input_ranges") or {}
    shape_of = _shape_source(model)
    ranges = compute(model.graph, {k: tuple(v) for k, v in dict(inputs).items()}, shape_of) \
        if st.precision == "fp16" else {}
    out.ranges = ranges
    kept: set[int] = set()
    marked = marked_nodes(model)
    for node in model.graph.nodes:
        if node.op_type in ("Constant", "Const") or not node.outputs or not _float(node.outputs[0]):
            continue
        value = node.outputs[0]
        r = ranges.get(value.name)
        if r is not None and r.reached > out.limit and id(node) not in kept:
            up = r.up is not None and r.up > out.limit
            if not up and _only_masks(value):
                continue
            chain = _keep_chain(node, ranges, out.limit)
            kept.update(id(n) for n in chain)
            out.overflows.append(Overflow(node, value, r.reached, chain, all(n.name in marked for n in chain)))
        if node.op_type in {a["op"] for a in table()["accumulation"]}:
            acc = next((a for a in table()["accumulation"] if a["op"] == node.op_type and a["engine"] == st.engine
                        and a["precision"] == st.precision), None)
            mode = acc["accumulates"] if acc else "unknown"
            min_length = int(acc["min_length"]) if acc else 2 ** int(table()["format"][st.precision]["significand_bits"])
            length = _axis_length(node, shape_of)
            if mode != "fp32" and length is not None and length >= min_length:
                out.accumulations.append(Accumulation(node, length, mode, min_length, node.name in marked))
    return out


@analysis("precision")
def precision(model: Model, target: Target) -> PrecisionFacts:
    return facts(model, target)


def format_number(x: float) -> str:
    return f"{x:.6g}" if np.isfinite(x) else str(x)
