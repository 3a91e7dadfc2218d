"""Per-node target support, computed once: does the target's engine take this node, and if not, why.

The target profile names a support table (``[data] support``) in one of three kinds, each read
by a small evaluator here:

* ``trt-matrix`` (TensorRT ONNX parser): importers looked up by op type only, whatever the
  domain; per-op element types and structured restrictions from the parser's matrix.
* ``ort-kernels`` (ONNX Runtime): the op's schema version at the model's opset must fall in a
  registered kernel's range, and the node's element types must match one of that kernel's type
  combinations, as ORT checks at session creation.
* ``ov-onnx-frontend`` (OpenVINO): the frontend needs a translator for the op at or below the
  model's opset, and element types it can load. OpenVINO IR nodes are native and always taken.

Each problem is an :class:`Issue` with the category the GL1xx rules filter on, a severity
(error: the engine refuses; warning: it runs with a fallback or a silent cast), the constraint
and the source row. The ``partition`` analysis groups rejected nodes into connected islands.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from graphlint import dtypes
from graphlint.analysis import analysis
from graphlint.analysis.graph_index import node_list
from graphlint.ir import ONNX, ONNX_DOMAIN, Model, Node, Value
from graphlint.rule import Rewrite, Severity, quote_node
from graphlint.target import Target

# Issue categories, one GL1xx rule each.
UNSUPPORTED = "unsupported-op"
FUSED = "fused-contrib-op"
TRAP = "domain-trap"
CONSTRAINT = "op-constraint"
DTYPE = "dtype"

_TENSOR_TYPES = frozenset(dtypes.ONNX_DTYPES.values())


@dataclass
class Issue:
    category: str
    severity: Severity
    reason: str  # sentence fragment: what is wrong, without the node prefix
    constraint: str  # short machine name: "op", "attr:mode", "input:axes", "dtype:float64", ...
    source: str  # "file:row" of the fact
    rewrite: Rewrite | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rejects(self) -> bool:
        return self.severity >= Severity.ERROR


@dataclass
class Support:
    """Per-node issues for one model and target (nodes without issues are absent)."""

    issues: dict[Node, list[Issue]]
    evaluated: int  # nodes looked at (dialect the table covers)
    table: str  # rules/data/... file of the table

    model: Model | None = None
    _partition: Any = None

    @property
    def partition(self) -> Any:
        """Supported/unsupported islands of the main graph (graphlint.analysis.partition), computed once."""
        if self._partition is None:
            from graphlint.analysis.partition import compute

            self._partition = compute(self.model, self)
        return self._partition

    def rejected(self, node: Node) -> bool:
        return any(i.rejects for i in self.issues.get(node, ()))

    def by_category(self, category: str) -> list[tuple[Node, Issue]]:
        return [(n, i) for n, issues in self.issues.items() for i in issues if i.category == category]


# --------------------------------------------------------------------------------------------
# helpers shared by the evaluators


def _src(table: dict[str, Any], row: int | None) -> str:
    """The citation of a table row: the published document's URL with the row's line anchor, when
    the table's rows are lines of that document (``row_anchor``), else the source alone."""
    src, anchor = table.get("source", "?"), table.get("row_anchor")
    return f"{src}{anchor}{row}" if row and anchor else src


@functools.cache
def _onnx_schema(op: str, opset: int, domain: str) -> Any:
    import onnx.defs

    try:
        return onnx.defs.get_schema(op, opset, "" if domain == ONNX_DOMAIN else domain)
    except Exception:  # SchemaError: unknown op or no version at this opset
        return None


def _attr(node: Node, name: str) -> Any:
    """The node's attribute, or the schema default at the node's opset (None when neither)."""
    if name in node.attrs:
        return node.attrs[name]
    return _default(node, name)


def _default(node: Node, name: str) -> Any:
    schema = _onnx_schema(node.op_type, int(node.opset or 1), node.domain) if node.dialect == ONNX else None
    if schema is None or name not in schema.attributes:
        return None
    import onnx.helper

    default = schema.attributes[name].default_value
    if default is None or not default.name:
        return None
    value = onnx.helper.get_attribute_value(default)
    return value.decode() if isinstance(value, bytes) else value


def const_value(v: Value | None) -> Any:
    """The numpy value of a build-time constant input, or None (not constant, or unreadable)."""
    if v is None or v.const is None:
        return None
    t = v.const
    if t.size > 4096:
        return None
    try:
        return t.numpy()
    except Exception:  # unreadable external data: GL0005 reports it
        return None


def outer_value(v: Value) -> Value:
    """The value a subgraph's reference to an enclosing graph's name stands for (else ``v``)."""
    g = v.graph
    while v.producer is None and v.const is None and not v.is_input and g.owner is not None:
        g = g.owner.graph
        found = g.values.get(v.name)
        if found is None:
            break
        v = found
    return v


def is_constant(v: Value, *, initializer_only: bool = False, depth: int = 8) -> bool:
    """Initializer or Constant output; unless ``initializer_only``, also anything computed only
    from constants (what an engine's constant folding resolves at build time)."""
    v = outer_value(v)
    if v.const is not None:
        return True
    if initializer_only or depth <= 0 or v.producer is None or v.is_input:
        return False
    p = v.producer
    if p.op_type in ("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial"):
        return False
    return all(i is None or is_constant(i, depth=depth - 1) for i in p.inputs) and not p.subgraphs


def from_run_time(v: Value) -> bool:
    """Whether a value depends on a graph input (or a random op, or an If/Loop/Scan output): no
    build-time constant folding can resolve it. Values computed from constants alone do not."""
    stack, seen = [v], set()
    while stack:
        cur = outer_value(stack.pop())
        if id(cur) in seen or cur.const is not None:
            continue
        seen.add(id(cur))
        p = cur.producer
        if p is None:
            if cur.is_input or cur.graph.owner is not None:  # a graph input, or a subgraph input
                return True
            continue
        if p.subgraphs or p.op_type in _RANDOM:
            return True
        stack.extend(i for i in p.inputs if i is not None and i.name)
    return False


_RANDOM = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial"})


def _in(node: Node, i: int) -> Value | None:
    v = node.input(i)
    return v if v is not None and v.name else None


def _fmt(values: list[Any]) -> str:
    return ", ".join(repr(v) if isinstance(v, str) else str(v) for v in values)


# --------------------------------------------------------------------------------------------
# structured constraints (shared by all tables; TRT's come from its matrix, ORT/OV's are manual)


def check_constraints(node: Node, constraints: list[dict[str, Any]], source: str) -> list[Issue]:
    out: list[Issue] = []
    for c in constraints:
        res = _check_one(node, c)
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


def _check_one(node: Node, c: dict[str, Any]) -> tuple[str, str] | None:
    kind = c["kind"]
    when = c.get("when")
    if when and any(_attr(node, k) != v for k, v in when.items()):
        return None
    if kind == "attr_in":
        val = _attr(node, c["attr"])
        if val is not None and val not in c["values"]:
            return (f"sets {c['attr']}={val!r}; the engine takes only {_fmt(c['values'])}", f"attr:{c['attr']}")
    elif kind == "attr_absent":  # unsupported unless left at the schema default
        bad = [a for a in c["attrs"] if a in node.attrs and node.attrs[a] != _default(node, a)]
        if bad:
            return (f"sets {', '.join(bad)}, which the engine does not support", f"attr:{bad[0]}")
    elif kind == "attr_ignored":
        if c["attr"] in node.attrs:
            return (f"sets {c['attr']}, which the engine ignores (results differ from the reference)",
                    f"attr:{c['attr']}")
    elif kind == "attr_ones":
        val = node.attrs.get(c["attr"])
        if val and any(d != 1 for d in val):
            return (f"has {c['attr']}={list(val)}; only empty or all ones is supported", f"attr:{c['attr']}")
    elif kind == "pads_symmetric":
        pads = node.attrs.get(c["attr"])
        if pads and len(pads) % 2 == 0:
            h = len(pads) // 2
            if list(pads[:h]) != list(pads[h:]):
                return (f"has asymmetric pads {list(pads)}; begin and end pads must match", "attr:pads")
    elif kind == "attr_iota":
        axes = node.attrs.get(c["attr"])
        x = _in(node, c.get("input", 0))
        if axes and x is not None and x.rank is not None:
            norm = [a % x.rank for a in axes]
            if norm != list(range(x.rank)):
                return (f"has axes={list(axes)}; with tensor scales the axes must be 0..rank-1", "attr:axes")
    elif kind in ("const_input", "const_input_or_noop"):
        init_only = bool(c.get("initializer"))
        for i in c["inputs"]:
            v = _in(node, i)
            if v is None:
                continue
            allow = c.get("allow_len")
            if allow and v.shape is not None and len(v.shape) == 1 and v.shape[0] in allow:
                continue  # the output rank is still known (e.g. one run-time axis)
            name = _input_name(node, i)
            if not is_constant(v, initializer_only=init_only):
                what = "an initializer" if init_only else "a build-time constant"
                if from_run_time(v):
                    return (f"input {name} ('{v.name}') is computed at run time; it must be {what}", f"input:{name}")
                # from constants alone, through a chain the check does not follow: whether the engine
                # folds it first is not known, so the caller keeps this below error
                return (f"input {name} ('{v.name}') is computed from constants by other nodes; it must be {what}, "
                        "and whether the engine folds it first is unknown", f"unknown:input:{name}")
            if "values" in c:
                val = const_value(v)
                if val is not None and val.size == 1 and bool(val.reshape(-1)[0]) not in c["values"]:
                    return (f"input {name} is {bool(val.reshape(-1)[0])}; it must be {_fmt(c['values'])}",
                            f"input:{name}")
    elif kind == "body_no_outer":  # the subgraph reads names of an enclosing graph (implicit inputs)
        body = node.subgraphs.get(c["attr"])
        outer = sorted({v.name for v in body.values.values() if v.producer is None and v.const is None
                        and not v.is_input and v.consumers and outer_value(v).const is None}) if body else []
        if outer:
            return (f"has a {c['attr']} that reads {len(outer)} value(s) of the enclosing graph ('{outer[0]}'); "
                    "the engine takes only the node's own inputs", f"attr:{c['attr']}")
    elif kind == "split_outputs_fit":
        n, x = _attr(node, "num_outputs"), _in(node, 0)
        x = outer_value(x) if x is not None else None
        axis = _attr(node, "axis") or 0
        dims = x.shape if x is not None else None
        if n and dims is not None and -len(dims) <= axis < len(dims) and isinstance(dims[axis], int):
            length, chunk = dims[axis], -(-dims[axis] // n)
            if length - chunk * (n - 1) <= 0:  # chunks of ceil(length / n) leave nothing for the last
                return (f"splits an axis of static length {length} into num_outputs={n}, which leaves the last "
                        f"of its chunks of {chunk} empty", "attr:num_outputs")
    elif kind == "zero_input":
        for i in c["inputs"]:
            v = _in(node, i)
            if v is None:
                continue
            val = const_value(v)
            name = _input_name(node, i)
            if val is None and v.const is None and not is_constant(v):
                return (f"input {name} is not a constant; it must be zero", f"input:{name}")
            if val is not None and val.dtype.kind in "iuf" and (val != 0).any():
                return (f"input {name} has non-zero values; it must be zero", f"input:{name}")
    elif kind == "input_value_below":
        val = const_value(_in(node, c["input"]))
        if val is not None and val.size == 1 and val.dtype.kind in "iu" and int(val.reshape(-1)[0]) >= c["limit"]:
            return (f"input {_input_name(node, c['input'])} is {int(val.reshape(-1)[0])}; it must be below "
                    f"{c['limit']}", f"input:{_input_name(node, c['input'])}")
    elif kind == "input_absent":
        present = [_input_name(node, i) for i in c["inputs"] if _in(node, i) is not None]
        if present:
            return (f"uses input(s) {', '.join(present)}, which the engine does not support", f"input:{present[0]}")
    elif kind == "output_unused":
        used = [i for i in c["outputs"] if i < len(node.outputs) and node.outputs[i].name
                and (node.outputs[i].consumers or node.outputs[i].is_output)]
        if used:
            names = [_output_name(node, i) for i in used]
            return (f"uses output(s) {', '.join(names)}, which the engine does not produce", f"output:{names[0]}")
    elif kind == "input_rank":
        for i in c["inputs"]:
            v = _in(node, i)
            if v is not None and v.rank is not None and v.rank not in c["ranks"]:
                return (f"input {_input_name(node, i)} has rank {v.rank}; the engine takes rank "
                        f"{_fmt(c['ranks'])}", f"rank:{_input_name(node, i)}")
    elif kind == "spatial_rank":
        v = _in(node, c.get("input", 0))
        if v is not None and v.rank is not None and v.rank - 2 not in c["ranks"]:
            return (f"has {v.rank - 2} spatial dimension(s); the engine takes {_fmt(c['ranks'])}-D only", "rank:spatial")
    elif kind == "static_input":
        for i in c["inputs"]:
            v = _in(node, i)
            if v is not None and v.shape is not None and any(not isinstance(d, int) for d in v.shape):
                return (f"input {_input_name(node, i)} has dynamic dims {list(v.shape)}; they must be static",
                        f"shape:{_input_name(node, i)}")
    elif kind == "static_axis_dim":
        v = _in(node, c.get("input", 0))
        axis = _attr(node, c["attr"])
        if v is not None and v.shape is not None and isinstance(axis, int) and -len(v.shape) <= axis < len(v.shape):
            d = v.shape[axis]
            if not isinstance(d, int):
                return (f"input dim {axis} is dynamic ({d!r}); it must be a build-time constant", "shape:axis")
    elif kind == "last_dim":
        v = _in(node, c["input"])
        if v is not None and v.shape and isinstance(v.shape[-1], int) and v.shape[-1] not in c["values"]:
            return (f"input {_input_name(node, c['input'])} has last dim {v.shape[-1]}; the engine takes "
                    f"{_fmt(c['values'])} (real-valued input)", "shape:last_dim")
    elif kind == "input_dtype":
        for i in c["inputs"]:
            v = _in(node, i)
            if v is not None and v.dtype in _TENSOR_TYPES and v.dtype not in c["types"]:
                return (f"input {_input_name(node, i)} is {v.dtype}; the engine takes {_fmt(c['types'])}",
                        f"dtype:{_input_name(node, i)}")
    elif kind == "output_dtype":
        for i in c["outputs"]:
            v = node.outputs[i] if i < len(node.outputs) else None
            if v is not None and v.dtype in _TENSOR_TYPES and v.dtype not in c["types"]:
                return (f"output {_output_name(node, i)} is {v.dtype}; the engine produces {_fmt(c['types'])} only",
                        f"dtype:{_output_name(node, i)}")
    elif kind == "input_len":
        v = _in(node, c["input"])
        if v is not None and v.shape is not None and len(v.shape) == 1 and isinstance(v.shape[0], int) \
                and v.shape[0] not in c["values"]:
            return (f"input {_input_name(node, c['input'])} has {v.shape[0]} elements; the engine takes "
                    f"{_fmt(c['values'])}", f"shape:{_input_name(node, c['input'])}")
    elif kind == "bidirectional_same_activations":
        if node.attrs.get("direction") == "bidirectional":
            acts = node.attrs.get("activations")
            if acts and len(acts) % 2 == 0 and acts[: len(acts) // 2] != acts[len(acts) // 2:]:
                return (f"uses different forward/reverse activations {acts}", "attr:activations")
    elif kind == "if_branches":
        then_g, else_g = node.subgraphs.get("then_branch"), node.subgraphs.get("else_branch")
        if then_g and else_g:
            for a, b in zip(then_g.outputs, else_g.outputs, strict=False):
                if a.rank is not None and b.rank is not None and a.rank != b.rank:
                    return (f"branch outputs '{a.name}' and '{b.name}' differ in rank ({a.rank} vs {b.rank})",
                            "subgraph:rank")
                if a.name == b.name:
                    return (f"both branches name their output '{a.name}'; the names must differ", "subgraph:names")
    return None


def _input_name(node: Node, i: int) -> str:
    names = _io_names(node.op_type, int(node.opset or 1), node.domain)[0] if node.dialect == ONNX else ()
    return f"'{names[i]}'" if i < len(names) else f"#{i}"


def _output_name(node: Node, i: int) -> str:
    names = _io_names(node.op_type, int(node.opset or 1), node.domain)[1] if node.dialect == ONNX else ()
    return f"'{names[i]}'" if i < len(names) else f"#{i}"


@functools.cache
def _io_names(op: str, opset: int, domain: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The schema's input and output names (onnx rebuilds its parameter lists on every access)."""
    schema = _onnx_schema(op, opset, domain)
    if schema is None:
        return (), ()
    return tuple(p.name for p in schema.inputs), tuple(p.name for p in schema.outputs)


# --------------------------------------------------------------------------------------------
# fused contrib ops (rules/data/support/contrib-fused.toml)


def fused_entry(target: Target, node: Node) -> dict[str, Any] | None:
    fused = target.data("fused") or {}
    entry = fused.get("ops", {}).get(node.op_type)
    if entry is None:
        return None
    want = entry.get("domain", "com.microsoft")
    return entry if node.domain == want else None


def fused_rewrite(target: Target, node: Node, entry: dict[str, Any]) -> Rewrite:
    if target.name == "trt" and entry.get("trt_plugin"):
        plugin = entry["trt_plugin"]
        note = f"; {entry['trt_plugin_note']}" if entry.get("trt_plugin_note") else ""
        return Rewrite("trt-plugin", {"node": node.label, "plugin": plugin}, safe=False,
                       description=f"map onto the TensorRT plugin {plugin}{note} (or un-fuse: {entry.get('standard')})")
    desc = f"un-fuse to standard ONNX: {entry['standard']}" if entry.get("standard") else "un-fuse to standard ONNX"
    return Rewrite("unfuse-contrib", {"node": node.label, "op_type": node.op_type},
                   safe=True, description=desc)


def _fused_source(target: Target, entry: dict[str, Any]) -> str:
    fused = target.data("fused") or {}
    op = next((k for k, v in fused.get("ops", {}).items() if v is entry), "?")
    return f"{fused.get('source', 'contrib-fused.toml')} [ops.{op}]"


# --------------------------------------------------------------------------------------------
# TensorRT


def _trt(node: Node, target: Target, table: dict[str, Any], model: Model | None, memo: dict) -> list[Issue]:
    row, constraints, bad = _trt_op_facts(table, node.op_type, memo)
    if node.domain != ONNX_DOMAIN or row is None or not row["supported"]:
        return _trt_rejected(node, target, table, row)
    out = check_constraints(node, constraints, _src(table, row["row"])) if constraints else []
    if bad:
        out.extend(_trt_types(node, target, table, row, bad))
    return out


def _trt_screen(nodes: list[Node], table: dict[str, Any], memo: dict) -> list[Node]:
    """The nodes :func:`_trt` may find an issue with, in order: the rest are cleared here, on a
    large model nearly all of them, without a call each.

    A standard op whose matrix row is supported with no constraints can only be refused for
    the element type :func:`_trt_types` probes: its first input's, when that is a named tensor
    (Cast also probes its output, so it is always looked at); when the row refuses no type,
    every node of the op is fine."""
    screens: dict[str, frozenset[str] | None] = {}  # op type -> types refused, None: look at each node
    out = []
    for node in nodes:
        op = node.op_type
        bad = screens.get(op, _UNSEEN)
        if bad is _UNSEEN:
            row, constraints, refused = _trt_op_facts(table, op, memo)
            plain = row is not None and row["supported"] and not constraints and op not in _CASTS
            bad = screens[op] = refused if plain else None
        if bad is None or node.domain != ONNX_DOMAIN:
            out.append(node)
        elif bad:
            inputs = node.inputs
            first = inputs[0] if inputs else None
            if first is None or not first.name or first.dtype in bad:
                out.append(node)
    return out


_UNSEEN: Any = object()
_DIALECT = attrgetter("dialect")


def _trt_op_facts(table: dict[str, Any], op_type: str,
                  memo: dict) -> tuple[dict[str, Any] | None, list | None, frozenset[str]]:
    """(matrix row, its constraints, element types it refuses) of an op type: they depend on the
    op type only, so each is derived once per run (in ``memo``), not once per node."""
    facts = memo.get(op_type)
    if facts is None:
        row = table["ops"].get(op_type)
        if row is None or not row["supported"]:
            facts = row, None, frozenset()
        else:
            facts = row, row.get("constraints"), _trt_bad_types(table, row)
        memo[op_type] = facts
    return facts


_CASTS = frozenset({"Cast", "CastLike"})  # their element-type probe looks at the output too


def _trt_rejected(node: Node, target: Target, table: dict[str, Any], row: dict[str, Any] | None) -> list[Issue]:
    """A node the parser has no (standard) importer for: another domain, not in the matrix, or unsupported."""
    title = target.title
    if node.domain != ONNX_DOMAIN:
        fused = fused_entry(target, node)
        if row is not None and row["supported"]:
            # The parser dispatches by op type: a contrib op named like a standard op is imported
            # with the standard op's semantics.
            trap = (fused or {}).get("trt_trap")
            # Known collisions carry their own severity; others (com.microsoft Pad, Range, Trilu...)
            # mirror a standard op closely, so the import probably works: a warning to check.
            sev = Severity.parse((fused or {}).get("trt_trap_severity", "error") if trap else "warning")
            why = trap or "inputs and attributes follow the other op's schema, not this one's"
            rw = fused_rewrite(target, node, fused) if fused else None
            return [Issue(TRAP, sev, f"is in domain '{node.domain}', but {title}'s parser dispatches on op type "
                                     f"only and imports it as the standard ONNX {node.op_type}: {why}",
                          "domain", _src(table, row["row"]) + (f"; {_fused_source(target, fused)}" if fused else ""),
                          rewrite=rw,
                          extra={"standard_row": row["row"]})]
        reason = (f"has no importer in {title}'s ONNX parser (domain '{node.domain}'); the parser falls back "
                  f"to a plugin named '{node.op_type}' and fails the build unless one is registered")
        if fused:
            return [Issue(FUSED, Severity.ERROR, reason, "op", _fused_source(target, fused),
                          rewrite=fused_rewrite(target, node, fused))]
        return [Issue(UNSUPPORTED, Severity.ERROR, reason, "domain", table["source"])]
    if row is None:
        fused = fused_entry(target, node)
        reason = f"is not in {title}'s ONNX operator matrix (no importer)"
        if fused:  # SimplifiedLayerNormalization in the default domain
            return [Issue(FUSED, Severity.ERROR, f"is an ONNX Runtime op in the default domain, not standard ONNX; "
                                                 f"it {reason[3:]}", "op", _fused_source(target, fused),
                          rewrite=fused_rewrite(target, node, fused))]
        return [Issue(UNSUPPORTED, Severity.ERROR, reason, "op", table["source"])]
    note = f" ({row['restrictions']})" if row.get("restrictions") else ""
    return [Issue(UNSUPPORTED, Severity.ERROR, f"is marked unsupported in {title}'s operator matrix{note}",
                  "op", _src(table, row["row"]))]


def _trt_bad_types(table: dict[str, Any], row: dict[str, Any]) -> frozenset[str]:
    """Element types the op's row refuses: not listed, and not left to GL4003 (DOUBLE cast-down) or
    GL4004 (UINT8 at the boundary). Empty when the row lists no types (no check)."""
    types = row.get("types") or []
    if not types:
        return frozenset()
    glob = table.get("global", {})
    return _TENSOR_TYPES - set(types) - set(glob.get("cast_down", {})) - set(glob.get("boundary_only_types", ()))


def _trt_types(node: Node, target: Target, table: dict[str, Any], row: dict[str, Any],
               bad: frozenset[str]) -> list[Issue]:
    if node.op_type in _CASTS:
        probe = [v for v in (node.input(0), node.outputs[0] if node.outputs else None) if v is not None]
    else:
        first = node.input(0)
        probe = [first] if first is not None and first.name else node.outputs[:1]
    for v in probe:
        if v.dtype in bad:
            types = row["types"]
            return [Issue(DTYPE, Severity.ERROR,
                          f"takes {v.dtype} '{v.name}'; {target.title} supports {node.op_type} on "
                          f"{', '.join(dtypes.SHORT.get(t, t) for t in types)} only", f"dtype:{v.dtype}",
                          _src(table, row["row"]), extra={"value": v.name})]
    return []


# --------------------------------------------------------------------------------------------
# ONNX Runtime


@functools.cache
def _ort_since(domain: str, op: str, opset: int, schema_versions: tuple[int, ...]) -> int | None:
    best = None
    for s in schema_versions:
        if s <= opset and (best is None or s > best):
            best = s
    return best


def _ort(node: Node, target: Target, table: dict[str, Any], model: Model | None, memo: dict) -> list[Issue]:
    if node.op_type in table.get("graph_ops", {}).get(node.domain, ()):
        return []
    dom = table["domains"].get(node.domain)
    entry = dom.get(node.op_type) if dom is not None else None
    opset = int(node.opset) if isinstance(node.opset, int) else 1
    verdict = _ort_kernel(table, entry, node, opset) if entry is not None else ("op", "", 0)
    if verdict is None:
        constraints = entry.get("constraints")
        return check_constraints(node, constraints, _src(table, entry.get("row"))) if constraints else []
    fused = fused_entry(target, node)
    title = target.title
    cat = FUSED if fused else UNSUPPORTED
    rw = fused_rewrite(target, node, fused) if fused else None
    if entry is None:
        if dom is None:
            reason = f"is in domain '{node.domain}', for which {title} has no CPU kernels"
        else:
            reason = f"is not an op {title} knows (domain '{node.domain}')"
        src = _fused_source(target, fused) if fused else table["source"]
        return [Issue(cat, Severity.ERROR, reason, "op", src, rewrite=rw)]
    src = _src(table, entry.get("row"))
    kind, detail, since = verdict
    if kind == "fp16":
        return [Issue(DTYPE, Severity.INFO, f"({node.op_type}-{since}) has no float16 CPU kernel: {title} runs it "
                                               f"in float32 between inserted Casts", "dtype:float16", src)]
    schema = entry["schemas"].get(str(since)) or {}
    if schema.get("function") and model is not None:
        # No kernel: ORT inlines the op's function body (once; ops in it must have kernels).
        body = _ort_function_body(node, model, opset)
        if isinstance(body, str):  # ORT does not inline a body written for other versions of its ops
            return [Issue(cat, Severity.ERROR, f"({node.op_type}-{since} at opset {opset}) {detail}; {title} does "
                                               f"not inline its function body: {body}", "function-opset", src,
                          rewrite=rw)]
        if body is not None:
            graph_ops = table.get("graph_ops", {})
            for sub in body:
                if sub.op_type in graph_ops.get(sub.domain, ()):
                    continue
                sub_entry = table["domains"].get(sub.domain, {}).get(sub.op_type)
                sub_verdict = (("op", "no kernel", 0) if sub_entry is None else
                               _ort_kernel(table, sub_entry, sub, int(sub.opset)))
                if sub_verdict is not None and sub_verdict[0] not in ("fp16", "dtype") and sub_entry is not None \
                        and (sub_entry["schemas"].get(str(sub_verdict[2])) or {}).get("function") == "context":
                    continue  # nested context-dependent functions (CastLike) are inlined too [observed]
                if sub_verdict is not None and sub_verdict[0] != "fp16":
                    return [Issue(DTYPE if sub_verdict[0] == "dtype" else cat, Severity.ERROR,
                                  f"({node.op_type}-{since}) {detail}; {title} inlines its function body, whose "
                                  f"{sub.op_type} node {sub_verdict[1]}", f"function:{sub.op_type}", src, rewrite=rw)]
            return []
        return []  # body not expandable here: trust ORT's inlining
    if kind == "dtype":
        return [Issue(DTYPE, Severity.ERROR, f"({node.op_type}-{since}) {detail}", f"dtype:{detail}", src)]
    return [Issue(cat, Severity.ERROR, f"({node.op_type}-{since} at opset {opset}) {detail}", "opset", src, rewrite=rw)]


def _ort_kernel(table: dict[str, Any], entry: dict[str, Any], node: Any, opset: int) -> tuple[str, str, int] | None:
    """None when a CPU kernel takes the node; else (kind, detail, since-version)."""
    memo = table.setdefault("_memo", {})  # in-memory only: (domain, op, opset[, types]) -> verdict
    key = (node.domain, node.op_type, opset)
    resolved = memo.get(key)
    if resolved is None:
        resolved = memo[key] = _ort_resolve(table, entry, node.domain, node.op_type, opset)
    since, combos, schema, failure = resolved
    if failure is not None:
        return failure
    if not schema:
        return None
    # The verdict depends only on the element types the node carries (and which inputs are
    # present): a large model repeats few combinations, so bind each one to the schema once.
    tkey = (key, tuple(v.dtype if v is not None and v.name else None for v in node.inputs),
            tuple(v.dtype if v is not None and v.name else None for v in node.outputs))
    if tkey in memo:
        return memo[tkey]
    binding = _bind(node, schema)
    verdict = memo[tkey] = _ort_types(binding, combos, since) if binding else None
    return verdict


def _ort_resolve(table: dict[str, Any], entry: dict[str, Any], domain: str, op: str, opset: int) -> tuple:
    """(since, type combos, schema, failure) for an op at an opset: the part shared by all its nodes."""
    versions = tuple(int(v) for v in entry["schemas"]) or tuple(k["range"][0] for k in entry["kernels"])
    since = _ort_since(domain, op, opset, versions)
    if since is None:
        return (0, [], None, ("opset", f"has no schema at opset {opset}", 0))
    start_only = table.get("open_range_matches_start_only", False)
    kernels = [k for k in entry["kernels"] if k["range"][0] == since or (
        k["range"][0] < since and ((k["range"][1] is not None and since <= k["range"][1]) or
                                   (k["range"][1] is None and not start_only)))]
    if not kernels:
        have = ", ".join(f"{k['range'][0]}-{k['range'][1] or k['range'][0]}" for k in entry["kernels"]) or "none"
        return (since, [], None, ("opset", f"has no CPU kernel (kernels registered for versions: {have})", since))
    return (since, [c for k in kernels for c in k["types"]], entry["schemas"].get(str(since)), None)


def _ort_types(binding: dict[str, str], combos: list[dict[str, list[str]]], since: int) -> tuple[str, str, int] | None:
    if any(_combo_ok(c, binding) for c in combos):
        return None
    widened = {k: ("float32" if v == "float16" else v) for k, v in binding.items()}
    if widened != binding and any(_combo_ok(c, widened) for c in combos):
        return ("fp16", "float16", since)  # InsertCastTransformer runs it in float32
    got = ", ".join(f"{k}={v}" for k, v in sorted(binding.items()))
    return ("dtype", f"has no CPU kernel for element types {got}", since)


class _BodyValue:
    __slots__ = ("dtype", "name")

    def __init__(self, name: str, dtype: str | None) -> None:
        self.name, self.dtype = name, dtype


class _BodyNode:
    """A node of an inlined function body, shaped like ir.Node for the kernel check."""

    __slots__ = ("domain", "inputs", "op_type", "opset", "outputs")

    def __init__(self, op_type: str, domain: str, opset: int, inputs: list, outputs: list) -> None:
        self.op_type, self.domain, self.opset, self.inputs, self.outputs = op_type, domain, opset, inputs, outputs


def _ort_function_body(node: Node, model: Model, opset: int) -> list[_BodyNode] | str | None:
    """The nodes ORT gets when it inlines ``node``'s schema function, with inferred element types;
    a reason (str) when ORT does not inline it; None when the body cannot be built here."""
    import onnx
    import onnx.defs
    import onnx.inliner
    from onnx import helper

    proto = model.proto
    if proto is None or node.graph is not model.graph or node.index >= len(proto.graph.node):
        return None
    np_ = proto.graph.node[node.index]
    if any(v is not None and v.name and v.dtype not in dtypes.ONNX_ENUM for v in node.inputs):
        return None  # sequence/optional/untyped inputs: onnx's function builders crash on empty types
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "" if node.domain == ONNX_DOMAIN else node.domain)
        types = []
        for v in node.inputs:
            t = onnx.TypeProto()
            if v is not None and v.dtype in dtypes.ONNX_ENUM:
                t.tensor_type.elem_type = dtypes.ONNX_ENUM[v.dtype]
            types.append(t.SerializeToString())
        if schema.has_context_dependent_function:
            fn = onnx.FunctionProto.FromString(
                schema.get_context_dependent_function_with_opset_version(opset, np_.SerializeToString(), types))
        else:
            raw = schema.get_function_with_opset_version(opset)
            fn = onnx.FunctionProto.FromString(raw) if isinstance(raw, bytes) else (raw or schema.function_body)
        fn.domain, fn.name = "graphlint.inline", node.op_type
        # The body onnx returns for this opset may declare an older one, the opset its function
        # was written for (HardSwish-14's at opset 18). ORT inlines it when every op of the body
        # has the same schema at both (HardSwish at 18 runs) and not otherwise (Swish-24 at 25:
        # Constant and CastLike changed at 25; "Could not find an implementation for Swish(24)").
        changed = _changed_since(fn, opset)
        if changed:
            return changed
        del fn.opset_import[:]
        fn.opset_import.extend(proto.opset_import)
        call = helper.make_node(node.op_type, list(np_.input), list(np_.output), domain="graphlint.inline")
        call.attribute.extend(np_.attribute)
        inputs = [helper.make_tensor_value_info(v.name, dtypes.ONNX_ENUM.get(v.dtype or "", 0), None)
                  for v in node.inputs if v is not None and v.name]
        outputs = [helper.make_tensor_value_info(v.name, 0, None) for v in node.outputs if v.name]
        opsets = [*list(proto.opset_import), helper.make_opsetid("graphlint.inline", 1)]
        m = helper.make_model(helper.make_graph([call], "f", inputs, outputs), opset_imports=opsets,
                              functions=[fn], ir_version=proto.ir_version or 10)
        m = onnx.shape_inference.infer_shapes(onnx.inliner.inline_local_functions(m))
    except Exception:  # malformed node or an onnx without the API: no body to check
        return None
    types_of = {vi.name: dtypes.onnx_dtype(vi.type.tensor_type.elem_type)
                for vi in (*m.graph.value_info, *m.graph.input, *m.graph.output)}
    versions = {o.domain or ONNX_DOMAIN: o.version for o in m.opset_import}
    return [_BodyNode(n.op_type, n.domain or ONNX_DOMAIN, versions.get(n.domain or ONNX_DOMAIN, opset),
                      [_BodyValue(i, types_of.get(i)) for i in n.input],
                      [_BodyValue(o, types_of.get(o)) for o in n.output]) for n in m.graph.node]


def _changed_since(fn: Any, opset: int) -> str:
    """Why a function body written for an older opset is not the same body at ``opset`` (its ops
    have other schema versions there), or "" when it is."""

    written = next((o.version for o in fn.opset_import if o.domain in ("", ONNX_DOMAIN)), opset)
    if written == opset:
        return ""
    changed = sorted({n.op_type for n in fn.node if n.domain in ("", ONNX_DOMAIN)
                      and _since(n.op_type, written) != _since(n.op_type, opset)})
    if not changed:
        return ""
    return f"the body is written for opset {written} and its {', '.join(changed)} changed since"


def _since(op: str, opset: int) -> int | None:
    schema = _onnx_schema(op, opset, ONNX_DOMAIN)
    return schema.since_version if schema is not None else None


def _bind(node: Node, schema: dict[str, Any] | None) -> dict[str, str]:
    """type-constraint name -> the node's element type bound to it (known plain tensor types only)."""
    if not schema:
        return {}
    out: dict[str, str] = {}

    def bind(params: list[list[Any]], values: list[Value | None]) -> None:
        for i, v in enumerate(values):
            if not params:
                return
            p = params[min(i, len(params) - 1)] if i >= len(params) and params[-1][1] == 2 else (
                params[i] if i < len(params) else None)
            if p is None or v is None or not v.name or v.dtype not in _TENSOR_TYPES:
                continue
            name = p[0]
            if name.startswith("tensor("):
                continue
            out.setdefault(name, v.dtype)

    bind(schema.get("in", []), node.inputs)
    bind(schema.get("out", []), node.outputs)
    return out


def _combo_ok(combo: dict[str, list[str]], binding: dict[str, str]) -> bool:
    return all(binding[k] in allowed for k, allowed in combo.items() if k in binding)


# --------------------------------------------------------------------------------------------
# OpenVINO (ONNX frontend)


def _ov(node: Node, target: Target, table: dict[str, Any], model: Model | None, memo: dict) -> list[Issue]:
    if model is not None and model.functions and (node.domain, node.op_type) in model.functions:
        return [Issue(UNSUPPORTED, Severity.ERROR, f"calls a model-local function, which {target.title}'s ONNX "
                                                   f"frontend does not expand (no conversion rule for "
                                                   f"{node.domain}.{node.op_type})", "function", table["source"])]
    dom = table["domains"].get(node.domain)
    entry = dom.get(node.op_type) if dom else None
    opset = int(node.opset) if isinstance(node.opset, int) else 1
    if entry is None or entry.get("since") is None or opset < entry["since"]:
        return _ov_rejected(node, target, table, entry, opset)
    # Element types the frontend refuses; for the node's common case (none) one cheap pass.
    bad = memo.get("bad_types")
    if bad is None:
        io_kinds = frozenset(table.get("io_refused_kinds", ()))
        refused = frozenset(table.get("element_types", {}).get("refused", ()))
        bad = memo["bad_types"] = (io_kinds, refused, io_kinds | refused)
    io_kinds, refused, either = bad
    out: list[Issue] = []
    if any(v is not None and v.dtype in either for v in (*node.inputs, *node.outputs)):
        title = target.title
        for v in (*node.inputs, *node.outputs):
            if v is not None and v.dtype in io_kinds and (v.is_input or v.is_output) and v.graph.owner is None:
                return [Issue(DTYPE, Severity.ERROR, f"has {v.dtype.replace('_type', '')}-typed graph "
                                                     f"{'input' if v.is_input else 'output'} '{v.name}'; {title}'s CPU "
                                                     f"plugin cannot compile dynamic-rank model inputs/outputs",
                              f"io:{v.dtype}", table["source"], extra={"value": v.name})]
        for v in (*node.inputs, *node.outputs):
            if v is not None and v.dtype in refused:
                out.append(Issue(DTYPE, Severity.ERROR, f"uses element type {v.dtype} ('{v.name}'), which "
                                                        f"{title}'s ONNX frontend cannot load", f"dtype:{v.dtype}",
                                 table["source"], extra={"value": v.name}))
                break
    constraints = entry.get("constraints")
    if constraints:
        out.extend(check_constraints(node, constraints, _ov_source(target, table, entry, node)))
    return out


def _ov_source(target: Target, table: dict[str, Any], entry: dict[str, Any] | None, node: Node) -> str:
    src = _src(table, entry.get("row")) if entry else table["source"]
    fused = fused_entry(target, node)
    return f"{src}; {_fused_source(target, fused)}" if fused else src


def _ov_rejected(node: Node, target: Target, table: dict[str, Any], entry: dict[str, Any] | None,
                 opset: int) -> list[Issue]:
    """No translator for the op (in its domain, or at the model's opset)."""
    fused = fused_entry(target, node)
    title = target.title
    cat = FUSED if fused else UNSUPPORTED
    rw = fused_rewrite(target, node, fused) if fused else None
    src = _ov_source(target, table, entry, node)
    if entry is None or entry.get("since") is None:
        where = f"domain '{node.domain}'"
        reason = f"has no conversion rule in {title}'s ONNX frontend ({where})"
        return [Issue(cat, Severity.ERROR, reason, "op", src, rewrite=rw)]
    return [Issue(cat, Severity.ERROR, f"has no conversion rule in {title}'s ONNX frontend at opset {opset} "
                                       f"(first translator: opset {entry['since']})", "opset", src, rewrite=rw)]


def message(node: Node, issue: Issue) -> str:
    """The finding text for one issue: node first, then the reason, then the source row."""
    return f"{quote_node(node)} {issue.reason} [{issue.source}]."


EVALUATORS = {"trt-matrix": _trt, "ort-kernels": _ort, "ov-onnx-frontend": _ov}
# Optional per-kind screens: (nodes, table, memo) -> the nodes the evaluator must look at.
SCREENS = {"trt-matrix": _trt_screen}


@analysis("support")
def support(model: Model, target: Target) -> Support:
    table = target.data("support")
    rel = target.profile.get("data", {}).get("support", "")
    issues: dict[Node, list[Issue]] = {}
    if not table or model.dialect != ONNX:
        return Support(issues, 0, rel, model)  # OpenVINO IR: native ops, nothing to translate
    kind = table["kind"]
    fn = EVALUATORS[kind]
    functions = model.functions
    memo: dict[Any, Any] = {}  # op-level facts the evaluator derives once per run, not once per node
    # A model-local function call is not evaluated: engines inline the body, whose nodes are.
    nodes = node_list(model)
    inlined = functions if table.get("local_functions", True) else {}  # OpenVINO 2026.4 expands none
    if functions or not all(map(ONNX.__eq__, map(_DIALECT, nodes))):  # (at C speed: the usual case)
        nodes = [node for node in nodes if node.dialect == ONNX
                 and not (inlined and (node.domain, node.op_type) in inlined)]
    screen = SCREENS.get(kind)
    for node in nodes if screen is None else screen(nodes, table, memo):
        found = fn(node, target, table, model, memo)
        if found:
            issues[node] = found
    return Support(issues, len(nodes), rel, model)


def emit(ctx: Any, category: str) -> list[Any]:
    """Findings of one issue category, for the GL1xx rules (each rule is one category)."""
    sup: Support = ctx.analysis("support")
    out = []
    for node, issue in sup.by_category(category):
        props = {"constraint": issue.constraint, "source": issue.source, "domain": node.domain,
                 "opset": node.opset, **{k: v for k, v in issue.extra.items() if k != "value"}}
        if issue.rejects:  # the severity contract (docs/severity.md): the table entry that decides
            key = (node.op_type if sup.table.startswith("support/trt") else
                   "local_functions" if issue.constraint == "function" else f"{node.domain}/{node.op_type}")
            props["basis"] = f"support-table:rules/data/{sup.table}#{key}"
        value = issue.extra.get("value")
        out.append(ctx.finding(node, message(node, issue), severity=issue.severity, rewrite=issue.rewrite,
                               value=value, **props))
    return out
