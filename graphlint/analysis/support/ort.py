"""ONNX Runtime's CPU provider (``ort-kernels`` tables): the op's schema version at the model's
opset must fall in a registered kernel's range, and the node's element types must match one of
that kernel's type combinations, as ORT checks at session creation."""

from __future__ import annotations

import functools
from typing import Any

from graphlint import dtypes
from graphlint.analysis.support.common import (
    DTYPE,
    FUSED,
    TENSOR_TYPES,
    UNSUPPORTED,
    Issue,
    evaluator,
    fused_entry,
    fused_rewrite,
    fused_source,
    onnx_schema,
    source_of,
)
from graphlint.analysis.support.constraints import check_constraints
from graphlint.ir import ONNX_DOMAIN, Model, Node, Value
from graphlint.rule import Severity
from graphlint.target import Target


@functools.cache
def _ort_since(domain: str, op: str, opset: int, schema_versions: tuple[int, ...]) -> int | None:
    best = None
    for s in schema_versions:
        if s <= opset and (best is None or s > best):
            best = s
    return best


@evaluator("ort-kernels")
def _ort(node: Node, target: Target, table: dict[str, Any], model: Model | None, memo: dict) -> list[Issue]:
    if node.op_type in table.get("graph_ops", {}).get(node.domain, ()):
        return []
    dom = table["domains"].get(node.domain)
    entry = dom.get(node.op_type) if dom is not None else None
    opset = int(node.opset) if isinstance(node.opset, int) else 1
    verdict = _ort_kernel(table, entry, node, opset) if entry is not None else ("op", "", 0)
    if verdict is None:
        constraints = entry.get("constraints")
        return check_constraints(node, constraints, source_of(table, entry.get("row"))) if constraints else []
    fused = fused_entry(target, node)
    title = target.title
    cat = FUSED if fused else UNSUPPORTED
    rw = fused_rewrite(target, node, fused) if fused else None
    if entry is None:
        if dom is None:
            reason = f"is in domain '{node.domain}', for which {title} has no CPU kernels"
        else:
            reason = f"is not an op {title} knows (domain '{node.domain}')"
        src = fused_source(target, fused) if fused else table["source"]
        return [Issue(cat, Severity.ERROR, reason, "op", src, rewrite=rw)]
    src = source_of(table, entry.get("row"))
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
    schema = onnx_schema(op, opset, ONNX_DOMAIN)
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
            if p is None or v is None or not v.name or v.dtype not in TENSOR_TYPES:
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
