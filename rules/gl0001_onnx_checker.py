"""GL0001 onnx-checker: every problem onnx.checker reports."""

from __future__ import annotations

import re
from collections.abc import Iterator

import onnx

from graphlint.ir import Graph, Model, Node
from graphlint.load.shape_infer import checker_verdict
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote, quote_node

_UNSET = object()
_NODE = re.compile(r"Name:\s*(\S*)\s+OpType:\s*(\S+)")


class OnnxChecker(Rule):
    """The model fails ONNX's own checker or strict shape inference.

    ## What it checks
    Runs `onnx.checker` on the model and, when it fails, checks every node, initializer and
    value of every graph on its own so that all problems are reported, not only the first.
    Strict shape-inference errors (incompatible dims, wrong input types) are included, as
    `onnx.checker.check_model(full_check=True)` would raise them.

    ## Why it matters
    Engines assume a valid model. TensorRT's parser, ONNX Runtime and OpenVINO each fail on
    a subset of these problems with messages far from the cause, often only at build time.

    ## Example
    An `Add` whose inputs have shapes `[1, 4]` and `[3, 5]`, or a node that uses an
    attribute its opset does not define.

    ## Fix
    Re-export the model, or correct the node the finding names; run
    `python -c "import onnx; onnx.checker.check_model('model.onnx', full_check=True)"` to confirm.
    """

    id = "GL0001"
    name = "onnx-checker"
    severity = Severity.ERROR
    source = "onnx.checker and onnx.shape_inference (strict mode)"
    waits_for = frozenset({"onnx_checker"})

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        model = ctx.model
        by_name: dict[str, Node] | None = None  # built on the first strict-inference issue (usually none)
        for issue in model.issues:
            if issue.kind == "shape-inference":
                if by_name is None:
                    by_name = {n.name: n for n in model.graph.walk() if n.name}
                node = by_name.get(issue.value or "")
                where = f"{quote_node(node)} fails" if node else "The model fails"
                yield ctx.finding(node, f"{where} strict shape inference: {issue.message}", kind="shape-inference")
        proto = model.proto
        if proto is None:
            return
        first = model.precomputed_value("onnx_checker", _UNSET)  # the loader ran it in a child
        if first is _UNSET:
            first = checker_verdict(proto)
        if first is not None:
            yield from self._all_errors(model, ctx, first)

    def _all_errors(self, model: Model, ctx: RuleContext, first: str) -> Iterator[Finding]:
        proto = model.proto
        cctx = onnx.checker.C.CheckerContext()
        cctx.ir_version = proto.ir_version
        cctx.opset_imports = {o.domain: o.version for o in proto.opset_import}
        found = 0
        nodes = {(n.graph.path, n.index): n for n in model.graph.walk()}
        graphs = {g.path: g for g in model.graph.graphs()}
        # Walk the protobuf graphs in the same order the IR was built (path-addressed).
        stack = [("main", proto.graph)]
        while stack:
            path, gp = stack.pop()
            for i, np_ in enumerate(gp.node):
                node = nodes.get((path, i))
                try:
                    onnx.checker.check_node(np_, cctx)
                except Exception as e:
                    found += 1
                    yield ctx.finding(node, f"Node {quote(node.label if node else np_.name)} ({np_.op_type}) "
                                            f"fails onnx.checker: {_clean(e)}", kind="checker")
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
                        found += 1
                        yield ctx.finding(None, f"Graph input/output {quote(vi.name)} fails onnx.checker: {_clean(e)}",
                                          value=vi.name, kind="checker-io")
            for tp in gp.initializer:
                try:
                    onnx.checker.check_tensor(tp, cctx)
                except Exception as e:
                    found += 1
                    yield ctx.finding(None, f"Initializer {quote(tp.name)} fails onnx.checker: {_clean(e)}",
                                      value=tp.name, kind="checker-initializer")
            graph = graphs.get(path)
            for f in self._topology(ctx, graph) if graph is not None else ():
                found += 1
                yield f
        if not found:
            node = self._node_from_message(model, first)
            yield ctx.finding(node, f"{'Node ' + quote(node.label) + ' fails' if node else 'The model fails'} "
                                    f"onnx.checker: {_clean(first)}", kind="checker")

    def _topology(self, ctx: RuleContext, graph: Graph) -> Iterator[Finding]:
        """Inputs nothing produced before use (onnx requires topological order) and SSA violations."""
        inputs = {v.name for v in graph.inputs}
        known = inputs | {v.name for v in graph.values.values() if v.const is not None}
        outer = graph.owner
        while outer is not None:  # names visible from enclosing graphs
            known |= set(outer.graph.values)
            outer = outer.graph.owner
        produced: set[str] = set()
        for node in graph.nodes:
            for v in node.inputs:
                if v is not None and v.name not in known and v.name not in produced:
                    later = v.producer is not None
                    what = "is produced only by a later node (graph not topologically sorted)" if later \
                        else "is not produced by any node, initializer or graph input"
                    yield ctx.finding(node, f"{quote_node(node)} input {quote(v.name)} {what}.",
                                      value=v.name, kind="unsorted" if later else "unproduced")
            for v in node.outputs:
                if v.name and (v.name in produced or v.name in inputs):
                    yield ctx.finding(node, f"{quote_node(node)} output {quote(v.name)} "
                                            f"is assigned more than once (ONNX graphs are SSA).", value=v.name,
                                      kind="ssa")
                produced.add(v.name)

    @staticmethod
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
