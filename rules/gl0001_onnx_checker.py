"""GL0001 onnx-checker: every problem onnx.checker reports, with what the target does about it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from graphlint_rules import _contract as C
from graphlint_rules import _drift as D
from graphlint_rules._validity import TABLE, classify, fact

from graphlint.ir import Graph, Model, Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote, quote_node
from graphlint.target import resolve

_NODE = re.compile(r"Name:\s*(\S*)\s+OpType:\s*(\S+)")
_LIST = 20  # nodes listed in a grouped finding's properties


class OnnxChecker(Rule):
    """The model fails ONNX's own checker or strict shape inference.

    ## What it checks
    Runs `onnx.checker` on the model and, when it fails, checks every node, initializer and
    value of every graph on its own so that all problems are reported, not only the first.
    Strict shape-inference errors (incompatible dims, wrong input types) are included, as
    `onnx.checker.check_model(full_check=True)` would raise them. Each complaint is matched to a
    class in `rules/data/validity.toml`, which records what ONNX Runtime, OpenVINO and TensorRT
    do with it: an **error** only where the target rejects such a model; a **warning** where the
    target runs it anyway (spec-only: the message names who tolerates it and which tools reject
    it, one finding per class and model) or where its behaviour is not recorded. Ops used
    outside their opsets are reported by GL2002, with what each engine does, not here.

    ## Why it matters
    Engines assume a valid model, and fail on many of these problems with messages far from the
    cause, often only at build time. Others (nodes out of topological order, a declared shape
    that disagrees with the inferred one) every engine tolerates, but onnx.checker, converters
    and other pipelines reject the file.

    ## Example
    An `Add` whose inputs have shapes `[1, 4]` and `[3, 5]` (an error on every target), or the
    output of `onnxruntime.transformers.float16.convert_float_to_float16(keep_io_types=True)`,
    which appends the input Casts after the nodes that read them (a warning: every engine
    sorts the nodes itself).

    ## Fix
    Re-export the model, or correct the node the finding names; unsorted graphs:
    `graphlint fix` (the `topological-sort` pass). Confirm with
    `python -c "import onnx; onnx.checker.check_model('model.onnx', full_check=True)"`.
    """

    id = "GL0001"
    name = "onnx-checker"
    severity = Severity.ERROR
    fixable = True
    source = ("onnx.checker and onnx.shape_inference (strict mode); what engines do with each complaint: "
              "rules/data/validity.toml")
    requires = ("onnx_checker",)
    waits_for = frozenset({"onnx_checker"})  # it may still run in the loader's child: this rule goes last

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        complaints = [c for c in self._complaints(ctx) if not _owned_by_gl2002(c)]
        unsorted = any(c.key == "topology:unsorted" for c in complaints)
        if any((classify(c.key) or {}).get("id") == "type-conflict" for c in complaints):
            complaints.extend(_types_behind_declarations(ctx.model))
        # graphlint's own checks first: a group's first complaint is the one its finding shows
        complaints.sort(key=lambda c: not c.key.startswith("topology:"))
        errors: dict[str, list[_Complaint]] = {}
        spec_only: dict[str, list[_Complaint]] = {}
        for c in complaints:
            entry = classify(c.key, unsorted)
            if entry is not None and entry.get("owner"):
                continue  # another rule reports it, with what it means (external data: GL0005)
            verdict = _verdict(entry, ctx) if entry else None
            if entry is None or verdict is None:
                yield _unknown(ctx, c, entry)
            else:
                (errors if verdict in C.FAILING else spec_only).setdefault(entry["id"], []).append(c)
        for cid, group in errors.items():
            located = [c for c in group if c.node is not None or c.value is not None]
            for c in located or group[:1]:  # strict inference often says the same without the node
                yield _error(ctx, c, fact(cid))
        for cid, group in spec_only.items():
            yield _tolerated(ctx, group, fact(cid))

    # --- what the checker and strict inference say, one complaint per problem and place ---------
    def _complaints(self, ctx: RuleContext) -> Iterator[_Complaint]:
        model = ctx.model
        seen: set[tuple[str | None, str]] = set()
        by_name: dict[str, Node] | None = None  # built on the first strict-inference issue (usually none)
        for issue in model.issues:
            if issue.kind == "shape-inference":
                if by_name is None:
                    by_name = {n.name: n for n in model.graph.walk() if n.name}
                node = by_name.get(issue.value or "")
                where = f"{quote_node(node)} fails" if node else "The model fails"
                yield _Complaint(node, None, f"{where} strict shape inference: {_clean(issue.message)}",
                                 issue.message)
        proto = model.proto
        if proto is None:
            return
        first = ctx.analysis("onnx_checker")
        if first is None:
            return
        found = False
        for c in _checker_complaints(model, ctx):
            key = (c.node.label if c.node else c.value, c.key)
            if key not in seen:
                seen.add(key)
                found = True
                yield c
        if not found:
            node = _node_from_message(model, first)
            yield _Complaint(node, None, f"{'Node ' + quote(node.label) + ' fails' if node else 'The model fails'} "
                                         f"onnx.checker: {_clean(first)}", first)


@dataclass
class _Complaint:
    node: Node | None
    value: str | None
    text: str  # sentence ending in a period: what is wrong, where
    key: str  # what is matched against the classes (checker text, or "topology:..." / "io:..." tags)


def _checker_complaints(model: Model, ctx: RuleContext) -> Iterator[_Complaint]:
    """Every node, graph input/output and initializer checked on its own, plus graph order."""
    proto = model.proto
    cctx = onnx.checker.C.CheckerContext()
    cctx.ir_version = proto.ir_version
    cctx.opset_imports = {o.domain: o.version for o in proto.opset_import}
    nodes = {(n.graph.path, n.index): n for n in model.graph.walk()}
    graphs = {g.path: g for g in model.graph.graphs()}
    inputs = {vi.name for vi in proto.graph.input}
    stack = [("main", proto.graph)]  # the protobuf graphs, walked in the order the IR was built
    while stack:
        path, gp = stack.pop()
        for i, np_ in enumerate(gp.node):
            node = nodes.get((path, i))
            try:
                onnx.checker.check_node(np_, cctx)
            except Exception as e:
                label = quote(node.label if node else np_.name)
                yield _Complaint(node, None, f"Node {label} ({np_.op_type}) fails onnx.checker: {_clean(e)}", str(e))
            if node is not None:
                for attr, sub in node.subgraphs.items():
                    a = next((a for a in np_.attribute if a.name == attr.split("[")[0]), None)
                    if a is not None and a.type == onnx.AttributeProto.GRAPH:
                        stack.append((sub.path, a.g))
        if path == "main":
            for vi in (*gp.input, *gp.output):
                try:
                    onnx.checker.check_value_info(vi, cctx)
                except Exception as e:
                    kind = "input" if vi.name in inputs else "output"
                    yield _Complaint(None, vi.name, f"Graph {kind} {quote(vi.name)} fails onnx.checker: {_clean(e)}",
                                     f"io:{kind} {e}")
        for tp in gp.initializer:
            try:
                onnx.checker.check_tensor(tp, cctx)
            except Exception as e:
                yield _Complaint(None, tp.name, f"Initializer {quote(tp.name)} fails onnx.checker: {_clean(e)}", str(e))
        graph = graphs.get(path)
        if graph is not None:
            yield from _topology(graph)


def _topology(graph: Graph) -> Iterator[_Complaint]:
    """Inputs nothing produced before use (onnx requires topological order), cycles, SSA violations."""
    inputs = {v.name for v in graph.inputs}
    known = inputs | {v.name for v in graph.values.values() if v.const is not None}
    outer = graph.owner
    while outer is not None:  # names visible from enclosing graphs
        known |= set(outer.graph.values)
        outer = outer.graph.owner
    produced: set[str] = set()
    stuck: set[Node] | None = None  # nodes no order can place (on or behind a cycle), found on demand
    for node in graph.nodes:
        for v in node.inputs:
            if v is not None and v.name not in known and v.name not in produced:
                if v.producer is not None:
                    if stuck is None:
                        stuck = _unplaceable(graph, known)
                    if node in stuck and v.producer in stuck:
                        yield _Complaint(node, v.name, f"{quote_node(node)} reads {quote(v.name)}, which node "
                                                       f"{quote(v.producer.label)} produces on a cycle through it.",
                                         "topology:cycle")
                        continue
                    yield _Complaint(node, v.name, f"{quote_node(node)} reads {quote(v.name)}, which the later node "
                                                   f"{quote(v.producer.label)} produces.", "topology:unsorted")
                else:
                    yield _Complaint(node, v.name, f"{quote_node(node)} input {quote(v.name)} is not produced by any "
                                                   "node, initializer or graph input.", "topology:undefined")
        for v in node.outputs:
            if v.name and (v.name in produced or v.name in inputs):
                yield _Complaint(node, v.name, f"{quote_node(node)} output {quote(v.name)} is assigned more than once "
                                               "(ONNX graphs are SSA).", "topology:duplicate")
            produced.add(v.name)


def _types_behind_declarations(model: Model) -> list[_Complaint]:
    """Declared element types that disagree with the inferred ones can hide a real type mismatch:
    a float16 converter that leaves a Cast to float in place and declares its output float16. Infer
    again with the declared intermediate types set aside; what still fails is the graph's own."""
    from onnx import shape_inference

    proto = _without_weights(model.proto)
    try:
        shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
        return []
    except Exception as e:
        text = _clean(e)
    if "inconsistent type" not in text and "TypeInferenceError" not in text:
        return []
    return [_Complaint(None, None, f"Set aside the declared value types and the graph's own types fail: {text}",
                       f"types-without-value-info: {text}")]


# Initializers up to this size stay (shape inputs, axes: what inference reads values of); larger
# ones become graph inputs of the same type and shape, so the copy does not hold the weights.
_KEEP_BYTES = 4096


def _without_weights(src: onnx.ModelProto) -> onnx.ModelProto:
    """What inference needs of ``src``: no value_info, and no data of large initializers."""
    proto = onnx.ModelProto(ir_version=src.ir_version)
    proto.opset_import.extend(src.opset_import)
    proto.functions.extend(src.functions)
    g, out = src.graph, proto.graph
    out.name = g.name
    out.node.extend(g.node)
    out.input.extend(g.input)
    out.output.extend(g.output)
    out.sparse_initializer.extend(g.sparse_initializer)
    inputs = {i.name for i in g.input}
    for t in g.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL and _nbytes(t) <= _KEEP_BYTES:
            out.initializer.append(t)
        elif t.name not in inputs:
            out.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return proto


def _nbytes(t: onnx.TensorProto) -> int:
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
    except (KeyError, TypeError, ValueError):  # strings, undefined or unknown types: keep the tensor as it is
        return 0
    return int(np.prod(t.dims, dtype=np.int64)) * itemsize


def _unplaceable(graph: Graph, known: set[str]) -> set[Node]:
    """Nodes of ``graph`` that no topological order can place: those on a cycle and those after one."""
    avail = set(known) | {""}
    waiting: dict[str, list[Node]] = {}
    missing: dict[Node, int] = {}
    ready: list[Node] = []
    for node in graph.nodes:
        need = {v.name for v in node.inputs if v is not None and v.name not in avail and v.producer is not None}
        missing[node] = len(need)
        for name in need:
            waiting.setdefault(name, []).append(node)
        if not need:
            ready.append(node)
    while ready:
        node = ready.pop()
        for v in node.outputs:
            for other in waiting.pop(v.name, ()):
                missing[other] -= 1
                if missing[other] == 0:
                    ready.append(other)
    return {n for n, k in missing.items() if k > 0}


def _verdict(entry: dict[str, Any], ctx: RuleContext) -> str | None:
    v = entry["verdict"].get(ctx.target.name)
    if v == "support-table":  # the op decides; GL1001 reports it where the table refuses it
        return C.TOLERATES
    return v


def _verdicts(entry: dict[str, Any], node: Node | None, model: Model) -> dict[str, str]:
    """Each built-in engine's verdict; "support-table" resolved with that engine's table for the node."""
    out = {}
    for name, v in entry["verdict"].items():
        if v == "support-table":
            ok = node is not None and _table_accepts(node, model, name)
            v = C.TOLERATES if ok else C.REJECTS
        out[name] = v
    return out


def _table_accepts(node: Node, model: Model, engine: str) -> bool:
    from graphlint.analysis.support import accepts

    return accepts(node, resolve(engine), model)


def _owned_by_gl2002(c: _Complaint) -> bool:
    """Ops used at an opset where they are deprecated or not yet defined: GL2002 names what each
    engine does with them, so the checker's "No Op registered" is not repeated here."""
    node = c.node
    if node is None or not any(D.applies(f, node) for f in D.facts_for("GL2002", node.op_type)):
        return False
    entry = classify(c.key)
    return entry is not None and entry["id"] in ("op-not-in-opset", "op-deprecated")


# --- findings --------------------------------------------------------------------------------------
def _error(ctx: RuleContext, c: _Complaint, entry: dict[str, Any]) -> Finding:
    verdicts = _verdicts(entry, c.node, ctx.model)
    return ctx.finding(
        c.node, f"{c.text[:-1]}; {C.rejected_note(verdicts, ctx.target)}.", value=c.value, kind=entry["id"],
        **C.props(C.fact_basis(TABLE, entry["id"]), complaint=entry["id"], verdict=entry["verdict"][ctx.target.name],
                  engines=entry.get("engines")),
    )


def _tolerated(ctx: RuleContext, group: list[_Complaint], entry: dict[str, Any]) -> Finding:
    t, first = ctx.target, group[0]
    verdicts = _verdicts(entry, first.node, ctx.model)
    more = f" ({len(group) - 1} more like it in this model)" if len(group) > 1 else ""
    head = f"{first.text[:-1]}{more}: {entry['what']}."
    note = C.spec_only_note(verdicts, t, entry.get("rejected_by", ()))
    if verdicts.get(t.name) != C.TOLERATES:  # support-table verdict: the table refuses the op itself
        note = f"{t.title} has no implementation of the op at this opset (GL1001 reports it)."
    rw = None
    if entry.get("rewrite"):
        rw = D.rewrite(entry["rewrite"], None, description="Sort the nodes of every graph topologically.")
    return ctx.finding(
        first.node, f"{head} Spec-only: {note}", value=first.value, rewrite=rw, severity=Severity.WARNING,
        kind=entry["id"], **C.props(complaint=entry["id"], verdict=verdicts.get(t.name), count=len(group),
                                    nodes=[c.node.label if c.node else c.value for c in group[:_LIST]],
                                    tolerated_by=C.who(verdicts, t)[0], engines=entry.get("engines"),
                                    rejected_by=C.who(verdicts, t, entry.get("rejected_by", ()))[1]),
    )


def _unknown(ctx: RuleContext, c: _Complaint, entry: dict[str, Any] | None) -> Finding:
    t = ctx.target
    tools = entry.get("rejected_by", ["onnx.checker"]) if entry else ["onnx.checker"]
    return ctx.finding(
        c.node, f"{c.text} What {t.title} does with such a model is not recorded (engine behaviour unknown); "
                f"rejected by {', '.join(tools)}.",
        value=c.value, severity=C.capped(Severity.ERROR, ["engine behaviour"]),
        kind=entry["id"] if entry else "checker",
        **C.props(unknown=["engine behaviour"], complaint=entry["id"] if entry else None),
    )


def _node_from_message(model: Model, message: str) -> Node | None:
    m = _NODE.search(message)
    if not m:
        return None
    name = m.group(1)
    return next((n for n in model.graph.walk() if n.name == name and name), None)


def _clean(e: object) -> str:
    text = " ".join(str(e).split())
    text = re.sub(r"==> Context:.*$", "", text).strip()
    return text.rstrip(".") + "."
