"""Graph clean-up passes: node order, constant folding, dead-node removal, cancelling Transpose pairs."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from graphlint.fix import graphutil as gu
from graphlint.fix.base import FixContext, Pass, PassResult, register_pass

# Never folded: nondeterministic, or with side effects on the engine's view of the model.
_NO_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
            "Bernoulli", "If", "Loop", "Scan", "Constant", "Identity", "DequantizeLinear", "QuantizeLinear"}
_MAX_FOLDED_ELEMENTS = 1 << 20  # a folded tensor larger than this bloats the file; engines fold it anyway


def _evaluate(node: onnx.NodeProto, inputs: list[np.ndarray | None], opset: int) -> list[np.ndarray] | None:
    from onnx.reference import ReferenceEvaluator

    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    n = onnx.NodeProto()
    n.CopyFrom(node)
    del n.input[:]
    n.input.extend(names)
    outs = [f"out{i}" for i in range(len(node.output))]
    del n.output[:]
    n.output.extend(outs)
    try:
        ev = ReferenceEvaluator(n, opsets={"": opset})  # type: ignore[arg-type]
        res = ev.run(None, {k: v for k, v in zip(names, inputs, strict=True) if k})
    except Exception:  # an op the reference cannot evaluate: leave it to the engine
        return None
    return [np.asarray(r) for r in res]


@register_pass
class FoldConstants(Pass):
    """Evaluate nodes whose inputs are all constants (and Shape of static shapes) into initializers."""

    name = "fold-constants"
    after = ("fix-input-shape", "unfuse-contrib", "opset-upgrade", "upsample-to-resize",
             "softmax-keep-2d-semantics", "groupnorm-per-channel")

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        op = gu.opset(model)
        inferred = gu.infer(model)
        shapes = {k: gu.shape_of(v) for k, v in gu.value_info(inferred).items()}
        consts: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in g.initializer
                                         if t.data_location != onnx.TensorProto.EXTERNAL or t.raw_data}
        graph_outputs = {o.name for o in g.output}
        folded: list[str] = []
        keep: list[onnx.NodeProto] = []
        new_inits: list[onnx.TensorProto] = []
        for node in g.node:
            value: list[np.ndarray] | None = None
            if node.op_type == "Constant" and gu.is_default(node.domain) and node.output[0] not in graph_outputs:
                v = gu.const_value(g, node.output[0])
                if v is not None:
                    consts[node.output[0]] = v
                keep.append(node)  # Constant nodes stay as they are (already build-time constants)
                continue
            if gu.is_default(node.domain) and node.op_type == "Shape":
                shp = shapes.get(node.input[0])
                if shp is not None and all(isinstance(d, int) and d > 0 for d in shp):
                    start, end = gu.attr(node, "start", 0), gu.attr(node, "end", None)
                    value = [np.array(shp[start:end], dtype=np.int64)]
            elif (gu.is_default(node.domain) and node.op_type not in _NO_FOLD
                  and all(i in consts for i in node.input if i) and len(node.input) > 0
                  and not any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                              for a in node.attribute)):
                value = _evaluate(node, [consts[i] if i else None for i in node.input], op)
            if (value is None or len(value) != len(node.output)
                    or any(v.size > _MAX_FOLDED_ELEMENTS or v.dtype == object for v in value)
                    or any(o in graph_outputs for o in node.output)):
                keep.append(node)
                continue
            for name, v in zip(node.output, value, strict=True):
                if name:
                    consts[name] = v
                    new_inits.append(numpy_helper.from_array(v, name))
            folded.append(gu.label(node))
        if not folded:
            return PassResult(model, False)
        del g.node[:]
        g.node.extend(keep)
        g.initializer.extend(new_inits)
        gu.prune(model)
        return PassResult(model, True, [f"folded {len(folded)} constant node(s) into initializers: "
                                        + ", ".join(folded[:8]) + (" ..." if len(folded) > 8 else "")])


@register_pass
class TopologicalSort(Pass):
    """Put the nodes of every graph in topological order (onnx.checker requires it; engines sort
    anyway). onnxruntime's fp16 converter with keep_io_types=True appends its input Casts last."""

    name = "topological-sort"

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        changes: list[str] = []

        def visit(g: onnx.GraphProto, outer: set[str]) -> None:
            late = _read_before_made(g)
            if late:
                gu.topo_sort(g)
                changes.append(f"moved {len(late)} node(s) of graph {g.name or 'main'!r} ahead of the nodes that "
                               f"read their outputs: {', '.join(late[:5])}" + (" ..." if len(late) > 5 else ""))
            seen = outer | {i.name for i in g.input} | {t.name for t in g.initializer}
            seen.update(o for n in g.node for o in n.output)
            for n in g.node:
                for a in n.attribute:
                    for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                        visit(sub, seen)

        visit(model.graph, set())
        return PassResult(model, bool(changes), changes)


def _read_before_made(g: onnx.GraphProto) -> list[str]:
    """Labels of the nodes whose outputs an earlier node of ``g`` reads."""
    made = {o: i for i, n in enumerate(g.node) for o in n.output if o}
    late: dict[int, None] = {}
    for i, n in enumerate(g.node):
        reads = set(n.input)
        for a in n.attribute:  # a subgraph may read the enclosing graph's values too
            for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                reads |= gu.outer_names(sub)
        for name in reads:
            j = made.get(name)
            if j is not None and j > i:
                late[j] = None
    return [gu.label(g.node[j]) for j in sorted(late)]


@register_pass
class RemoveDeadNodes(Pass):
    """Remove nodes (and initializers) whose outputs reach no graph output."""

    name = "remove-dead-nodes"
    after = ("fold-constants", "fold-transpose-pairs", "unfuse-contrib", "input-cast-normalize",
             "int64-to-int32", "double-to-float")

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        n_inits = len(model.graph.initializer)
        removed = gu.prune(model)
        dropped = n_inits - len(model.graph.initializer)
        if not removed and not dropped:
            return PassResult(model, False)
        changes = [f"removed dead node {r!r}" for r in reversed(removed)]
        if dropped:
            changes.append(f"removed {dropped} unused initializer(s)")
        return PassResult(model, True, changes)


# Unary ops that commute with any Transpose (elementwise, no axis attribute).
_ELEMENTWISE = {"Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Log", "Sqrt", "Erf", "Cast", "Identity",
                "LeakyRelu", "Elu", "Selu", "HardSigmoid", "Softplus", "Clip", "Floor", "Ceil", "Round",
                "Reciprocal", "Sin", "Cos", "Gelu", "Mish", "HardSwish", "Not", "Sign"}


def _is_inverse(p1: list[int], p2: list[int]) -> bool:
    return len(p1) == len(p2) and all(p1[p2[i]] == i for i in range(len(p2)))


@register_pass
class FoldTransposePairs(Pass):
    """Remove Transpose(p) → [elementwise unary ops] → Transpose(inverse p) chains."""

    name = "fold-transpose-pairs"

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        changes: list[str] = []
        while True:
            cons = gu.consumers(g)
            outputs = {o.name for o in g.output}
            hit = self._find(g, cons, outputs, requests)
            if hit is None:
                break
            t1, chain, t2 = hit
            # t1's input feeds the chain directly; t2's consumers read the chain's end.
            first_in = t1.input[0]
            if chain:
                chain[0].input[0] = first_in
                end = chain[-1].output[0]
            else:
                end = first_in
            for c in cons.get(t2.output[0], []):
                for k, name in enumerate(c.input):
                    if name == t2.output[0]:
                        c.input[k] = end
            gu.remove_node(g, t1)
            gu.remove_node(g, t2)
            changes.append(f"removed cancelling Transpose pair {gu.label(t1)!r} / {gu.label(t2)!r}"
                           + (f" around {', '.join(n.op_type for n in chain)}" if chain else ""))
        if not changes:
            return PassResult(model, False)
        gu.clear_value_info(model)
        return PassResult(model, True, changes)

    def _find(self, g, cons, outputs, requests):
        named: set[str] = set()
        for r in requests:
            v = r.get("nodes") or r.get("node") or []
            named.update([v] if isinstance(v, str) else v)
        for t1 in g.node:
            if t1.op_type != "Transpose" or not gu.is_default(t1.domain):
                continue
            chain = []
            cur = t1
            while True:
                users = cons.get(cur.output[0], [])
                if len(users) != 1 or cur.output[0] in outputs:
                    break
                nxt = users[0]
                if nxt.op_type == "Transpose" and gu.is_default(nxt.domain):
                    p1, p2 = gu.attr(t1, "perm"), gu.attr(nxt, "perm")
                    if (p1 and p2 and _is_inverse(list(p1), list(p2)) and nxt.output[0] not in outputs
                            and (not named or gu.label(t1) in named or gu.label(nxt) in named)):
                        return t1, chain, nxt
                    break
                if nxt.op_type in _ELEMENTWISE and gu.is_default(nxt.domain) and nxt.input[0] == cur.output[0] \
                        and len(nxt.output) == 1:
                    chain.append(nxt)
                    cur = nxt
                    continue
                break
        return None
