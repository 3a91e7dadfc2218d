"""Structured per-op constraints of the support tables, one checker per ``kind``.

TensorRT's come from its operator matrix, ONNX Runtime's and OpenVINO's are written by hand; all
share these checkers. A constraint is a table row such as ``{"kind": "attr_in", "attr": "mode",
"values": [...]}``, optionally with ``when`` (attribute values it applies under), ``severity``,
``text`` and ``source``. A checker returns (reason, constraint name) when the node breaks the
constraint, else None. An unknown kind checks nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphlint.analysis.shapes import ShapeFacts
from graphlint.analysis.support.common import (
    CONSTRAINT,
    TENSOR_TYPES,
    Issue,
    attr,
    const_value,
    default,
    fmt,
    from_run_time,
    input_name,
    is_constant,
    named_input,
    outer_value,
    output_name,
)
from graphlint.analysis.support.dynrank import DYNAMIC, engine_rank
from graphlint.ir import Node
from graphlint.rule import Severity

Verdict = tuple[str, str] | None
Checker = Callable[[Node, dict[str, Any]], Verdict]
CHECKERS: dict[str, Checker] = {}
WITH_SHAPES: set[str] = set()  # kinds whose checker also reads the symbolic shape analysis


def checks(*kinds: str, shapes: bool = False) -> Callable[[Checker], Checker]:
    """Register a checker; ``shapes``: it also reads the symbolic shapes, as ``c["_shapes"]``."""
    def register(fn: Checker) -> Checker:
        for kind in kinds:
            CHECKERS[kind] = fn
            if shapes:
                WITH_SHAPES.add(kind)
        return fn

    return register


def check_constraints(node: Node, constraints: list[dict[str, Any]], source: str,
                      shapes: ShapeFacts | None = None) -> list[Issue]:
    out: list[Issue] = []
    for c in constraints:
        when = c.get("when")
        if when and any(attr(node, k) != v for k, v in when.items()):
            continue
        checker = CHECKERS.get(c["kind"])
        if checker is None:
            continue
        res = checker(node, {**c, "_shapes": shapes}) if c["kind"] in WITH_SHAPES else checker(node, c)
        if res is None:
            continue
        reason, name = res
        sev = Severity.parse(c.get("severity", "error"))
        extra: dict[str, Any] = {"constraint_text": c["text"]} if c.get("text") else {}
        if name.startswith("unknown:"):  # a premise the check could not settle: never an error
            name, sev = name[len("unknown:"):], min(sev, Severity.WARNING)
            extra["unknown"] = ["value"]
        out.append(Issue(CONSTRAINT, sev, reason, name, c.get("source", source), extra=extra))
    return out


@checks("attr_in")
def _attr_in(node: Node, c: dict[str, Any]) -> Verdict:
    val = attr(node, c["attr"])
    if val is not None and val not in c["values"]:
        return f"sets {c['attr']}={val!r}; the engine takes only {fmt(c['values'])}", f"attr:{c['attr']}"
    return None


@checks("attr_absent")
def _attr_absent(node: Node, c: dict[str, Any]) -> Verdict:
    """Unsupported unless left at the schema default."""
    bad = [a for a in c["attrs"] if a in node.attrs and node.attrs[a] != default(node, a)]
    if bad:
        return f"sets {', '.join(bad)}, which the engine does not support", f"attr:{bad[0]}"
    return None


@checks("attr_ignored")
def _attr_ignored(node: Node, c: dict[str, Any]) -> Verdict:
    if c["attr"] in node.attrs:
        return f"sets {c['attr']}, which the engine ignores (results differ from the reference)", f"attr:{c['attr']}"
    return None


@checks("attr_ones")
def _attr_ones(node: Node, c: dict[str, Any]) -> Verdict:
    val = node.attrs.get(c["attr"])
    if val and any(d != 1 for d in val):
        return f"has {c['attr']}={list(val)}; only empty or all ones is supported", f"attr:{c['attr']}"
    return None


@checks("pads_symmetric")
def _pads_symmetric(node: Node, c: dict[str, Any]) -> Verdict:
    pads = node.attrs.get(c["attr"])
    if pads and len(pads) % 2 == 0:
        h = len(pads) // 2
        if list(pads[:h]) != list(pads[h:]):
            return f"has asymmetric pads {list(pads)}; begin and end pads must match", "attr:pads"
    return None


@checks("attr_iota")
def _attr_iota(node: Node, c: dict[str, Any]) -> Verdict:
    axes = node.attrs.get(c["attr"])
    x = named_input(node, c.get("input", 0))
    if axes and x is not None and x.rank is not None:
        norm = [a % x.rank for a in axes]
        if norm != list(range(x.rank)):
            return f"has axes={list(axes)}; with tensor scales the axes must be 0..rank-1", "attr:axes"
    return None


@checks("const_input", "const_input_or_noop")
def _const_input(node: Node, c: dict[str, Any]) -> Verdict:
    init_only = bool(c.get("initializer"))
    for i in c["inputs"]:
        v = named_input(node, i)
        if v is None:
            continue
        allow = c.get("allow_len")
        if allow and v.shape is not None and len(v.shape) == 1 and v.shape[0] in allow:
            continue  # the output rank is still known (e.g. one run-time axis)
        name = input_name(node, i)
        if not is_constant(v, initializer_only=init_only):
            what = "an initializer" if init_only else "a build-time constant"
            if from_run_time(v):
                return f"input {name} ('{v.name}') is computed at run time; it must be {what}", f"input:{name}"
            # from constants alone, through a chain the check does not follow: whether the engine
            # folds it first is not known, so the caller keeps this below error
            return (f"input {name} ('{v.name}') is computed from constants by other nodes; it must be {what}, "
                    "and whether the engine folds it first is unknown", f"unknown:input:{name}")
        if "values" in c:
            val = const_value(v)
            if val is not None and val.size == 1 and bool(val.reshape(-1)[0]) not in c["values"]:
                return f"input {name} is {bool(val.reshape(-1)[0])}; it must be {fmt(c['values'])}", f"input:{name}"
    return None


@checks("zero_input")
def _zero_input(node: Node, c: dict[str, Any]) -> Verdict:
    for i in c["inputs"]:
        v = named_input(node, i)
        if v is None:
            continue
        val = const_value(v)
        name = input_name(node, i)
        if val is None and v.const is None and not is_constant(v):
            return f"input {name} is not a constant; it must be zero", f"input:{name}"
        if val is not None and val.dtype.kind in "iuf" and (val != 0).any():
            return f"input {name} has non-zero values; it must be zero", f"input:{name}"
    return None


@checks("input_value_below")
def _input_value_below(node: Node, c: dict[str, Any]) -> Verdict:
    val = const_value(named_input(node, c["input"]))
    if val is not None and val.size == 1 and val.dtype.kind in "iu" and int(val.reshape(-1)[0]) >= c["limit"]:
        name = input_name(node, c["input"])
        return f"input {name} is {int(val.reshape(-1)[0])}; it must be below {c['limit']}", f"input:{name}"
    return None


@checks("input_absent")
def _input_absent(node: Node, c: dict[str, Any]) -> Verdict:
    present = [input_name(node, i) for i in c["inputs"] if named_input(node, i) is not None]
    if present:
        return f"uses input(s) {', '.join(present)}, which the engine does not support", f"input:{present[0]}"
    return None


@checks("output_unused")
def _output_unused(node: Node, c: dict[str, Any]) -> Verdict:
    used = [i for i in c["outputs"] if i < len(node.outputs) and node.outputs[i].name
            and (node.outputs[i].consumers or node.outputs[i].is_output)]
    if used:
        names = [output_name(node, i) for i in used]
        return f"uses output(s) {', '.join(names)}, which the engine does not produce", f"output:{names[0]}"
    return None


@checks("max_outputs")
def _max_outputs(node: Node, c: dict[str, Any]) -> Verdict:
    """The translator makes ``n`` outputs; a node that declares more, even unnamed ones, is refused."""
    if len(node.outputs) > c["n"]:
        return (f"declares {len(node.outputs)} outputs; the engine's translator makes only {c['n']}",
                f"output:{output_name(node, c['n'])}")
    return None


@checks("input_not_empty")
def _input_not_empty(node: Node, c: dict[str, Any]) -> Verdict:
    for i in c["inputs"]:
        val = const_value(named_input(node, i))
        if val is not None and val.size == 0:
            return (f"input {input_name(node, i)} is an empty constant (shape {list(val.shape)}); the engine takes no "
                    "empty one here",
                    f"input:{input_name(node, i)}")
    return None


@checks("input_rank")
def _input_rank(node: Node, c: dict[str, Any]) -> Verdict:
    for i in c["inputs"]:
        v = named_input(node, i)
        if v is not None and v.rank is not None and v.rank not in c["ranks"]:
            return (f"input {input_name(node, i)} has rank {v.rank}; the engine takes rank {fmt(c['ranks'])}",
                    f"rank:{input_name(node, i)}")
    return None


@checks("spatial_rank")
def _spatial_rank(node: Node, c: dict[str, Any]) -> Verdict:
    v = named_input(node, c.get("input", 0))
    if v is not None and v.rank is not None and v.rank - 2 not in c["ranks"]:
        return f"has {v.rank - 2} spatial dimension(s); the engine takes {fmt(c['ranks'])}-D only", "rank:spatial"
    return None


@checks("static_input")
def _static_input(node: Node, c: dict[str, Any]) -> Verdict:
    for i in c["inputs"]:
        v = named_input(node, i)
        if v is not None and v.shape is not None and any(not isinstance(d, int) for d in v.shape):
            return (f"input {input_name(node, i)} has dynamic dims {list(v.shape)}; they must be static",
                    f"shape:{input_name(node, i)}")
    return None


@checks("static_axis_dim")
def _static_axis_dim(node: Node, c: dict[str, Any]) -> Verdict:
    v = named_input(node, c.get("input", 0))
    axis = attr(node, c["attr"])
    if v is not None and v.shape is not None and isinstance(axis, int) and -len(v.shape) <= axis < len(v.shape):
        d = v.shape[axis]
        if not isinstance(d, int):
            return f"input dim {axis} is dynamic ({d!r}); it must be a build-time constant", "shape:axis"
    return None


@checks("last_dim")
def _last_dim(node: Node, c: dict[str, Any]) -> Verdict:
    v = named_input(node, c["input"])
    if v is not None and v.shape and isinstance(v.shape[-1], int) and v.shape[-1] not in c["values"]:
        return (f"input {input_name(node, c['input'])} has last dim {v.shape[-1]}; the engine takes "
                f"{fmt(c['values'])} (real-valued input)", "shape:last_dim")
    return None


@checks("input_dtype")
def _input_dtype(node: Node, c: dict[str, Any]) -> Verdict:
    for i in c["inputs"]:
        v = named_input(node, i)
        if v is not None and v.dtype in TENSOR_TYPES and v.dtype not in c["types"]:
            return (f"input {input_name(node, i)} is {v.dtype}; the engine takes {fmt(c['types'])}",
                    f"dtype:{input_name(node, i)}")
    return None


@checks("output_dtype")
def _output_dtype(node: Node, c: dict[str, Any]) -> Verdict:
    for i in c["outputs"]:
        v = node.outputs[i] if i < len(node.outputs) else None
        if v is not None and v.dtype in TENSOR_TYPES and v.dtype not in c["types"]:
            return (f"output {output_name(node, i)} is {v.dtype}; the engine produces {fmt(c['types'])} only",
                    f"dtype:{output_name(node, i)}")
    return None


@checks("input_len")
def _input_len(node: Node, c: dict[str, Any]) -> Verdict:
    v = named_input(node, c["input"])
    if v is not None and v.shape is not None and len(v.shape) == 1 and isinstance(v.shape[0], int) \
            and v.shape[0] not in c["values"]:
        return (f"input {input_name(node, c['input'])} has {v.shape[0]} elements; the engine takes "
                f"{fmt(c['values'])}", f"shape:{input_name(node, c['input'])}")
    return None


@checks("bidirectional_same_activations")
def _bidirectional_same_activations(node: Node, c: dict[str, Any]) -> Verdict:
    if node.attrs.get("direction") == "bidirectional":
        acts = node.attrs.get("activations")
        if acts and len(acts) % 2 == 0 and acts[: len(acts) // 2] != acts[len(acts) // 2:]:
            return f"uses different forward/reverse activations {acts}", "attr:activations"
    return None


@checks("if_branches")
def _if_branches(node: Node, c: dict[str, Any]) -> Verdict:
    then_g, else_g = node.subgraphs.get("then_branch"), node.subgraphs.get("else_branch")
    if then_g and else_g:
        for a, b in zip(then_g.outputs, else_g.outputs, strict=False):
            if a.rank is not None and b.rank is not None and a.rank != b.rank:
                return (f"branch outputs '{a.name}' and '{b.name}' differ in rank ({a.rank} vs {b.rank})",
                        "subgraph:rank")
            if a.name == b.name:
                return f"both branches name their output '{a.name}'; the names must differ", "subgraph:names"
    return None


@checks("body_no_outer")
def _body_no_outer(node: Node, c: dict[str, Any]) -> Verdict:
    """The subgraph reads names of an enclosing graph (implicit inputs)."""
    body = node.subgraphs.get(c["attr"])
    outer = sorted({v.name for v in body.values.values() if v.producer is None and v.const is None
                    and not v.is_input and v.consumers and outer_value(v).const is None}) if body else []
    if outer:
        return (f"has a {c['attr']} that reads {len(outer)} value(s) of the enclosing graph ('{outer[0]}'); "
                "the engine takes only the node's own inputs", f"attr:{c['attr']}")
    return None


@checks("split_outputs_fit")
def _split_outputs_fit(node: Node, c: dict[str, Any]) -> Verdict:
    n, x = attr(node, "num_outputs"), named_input(node, 0)
    x = outer_value(x) if x is not None else None
    axis = attr(node, "axis") or 0
    dims = x.shape if x is not None else None
    if n and dims is not None and -len(dims) <= axis < len(dims) and isinstance(dims[axis], int):
        length, chunk = dims[axis], -(-dims[axis] // n)
        if length - chunk * (n - 1) <= 0:  # chunks of ceil(length / n) leave nothing for the last
            return (f"splits an axis of static length {length} into num_outputs={n}, which leaves the last "
                    f"of its chunks of {chunk} empty", "attr:num_outputs")
    return None


@checks("static_rank", shapes=True)
def _static_rank(node: Node, c: dict[str, Any]) -> Verdict:
    """The engine infers a dynamic rank for the input (If branches of different rank, see dynrank)."""
    for i in c["inputs"]:
        v = named_input(node, i)
        if v is not None and engine_rank(v, c["_shapes"], c.get("empty_scalar_ranks", ())) == DYNAMIC:
            return (f"input {input_name(node, i)} ('{v.name}') has a rank the engine cannot infer: it comes from an "
                    "If whose branches differ in rank and whose condition is known only at run time; the engine "
                    "needs a static rank here", f"rank:{input_name(node, i)}")
    return None


@checks("static_output_rank", shapes=True)
def _static_output_rank(node: Node, c: dict[str, Any]) -> Verdict:
    """The engine infers a dynamic rank for the node's own output (an If whose branches differ in rank)."""
    for k, v in enumerate(node.outputs):
        if v is not None and v.name and engine_rank(v, c["_shapes"], c.get("empty_scalar_ranks", ())) == DYNAMIC:
            return (f"output {k} ('{v.name}') has a rank the engine cannot infer: the branches differ in rank and "
                    "the condition is known only at run time; the engine needs a static rank", f"rank:output{k}")
    return None


@checks("body_passthrough")
def _body_passthrough(node: Node, c: dict[str, Any]) -> Verdict:
    """A loop-carried body output that is one of the body's own inputs, with no node between."""
    body = node.subgraphs.get(c["attr"])
    carried = len(node.inputs) - c.get("skip_inputs", 0)
    if body is None or carried <= 0:
        return None
    first = c.get("skip_outputs", 0)
    for v in body.outputs[first:first + carried]:
        if v.is_input and v.producer is None and v.graph is body:
            return (f"has a {c['attr']} that returns its input '{v.name}' unchanged as a loop-carried output; "
                    "the engine needs a node between (an Identity)", f"attr:{c['attr']}")
    return None


@checks("scales_innermost")
def _scales_innermost(node: Node, c: dict[str, Any]) -> Verdict:
    """Constant Resize/Upsample scales that change a dim outside the innermost ``n`` (TensorRT's
    canUseNDResize); a ``sizes`` input or run-time scales are not checked by the parser either."""
    idx = c.get("input", 1 if node.op_type == "Upsample" or int(node.opset or 11) < 11 else 2)
    val = const_value(named_input(node, idx))
    if val is None or val.ndim != 1:
        return None
    scales = [float(s) for s in val]
    axes = node.attrs.get("axes")
    if axes:
        x = named_input(node, 0)
        if x is None or x.rank is None or len(axes) != len(scales):
            return None
        full = [1.0] * x.rank
        for a, s in zip(axes, scales, strict=True):
            full[a % x.rank] = s
        scales = full
    n = c["n"]
    outer = [i for i, s in enumerate(scales[:-n] if len(scales) > n else []) if s != 1]
    if outer:
        mode = attr(node, "mode")
        return (f"resizes dim(s) {outer} (scales {scales}) with mode={mode!r}; the engine resizes only the "
                f"innermost {n} dims in this mode", "input:'scales'")
    return None


@checks("real_signal")
def _real_signal(node: Node, c: dict[str, Any]) -> Verdict:
    """STFT's signal: rank 2, or rank 3 with a last dim of 1 (a real-valued signal)."""
    v = named_input(node, c.get("input", 0))
    if v is None or v.shape is None:
        return None
    rank, last = len(v.shape), v.shape[-1] if v.shape else None
    if rank == 2 or (rank == 3 and (last == 1 or not isinstance(last, int))):
        return None
    return (f"input {input_name(node, c.get('input', 0))} has shape {list(v.shape)}; the engine takes a real-valued "
            "signal of rank 2, or rank 3 with last dim 1", "shape:signal")
