"""GL5004 transpose-sandwich: Transpose pairs that cancel around layout-agnostic ops."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.shapes import ShapeFacts
from graphlint.ir import Node, Value
from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote

UNARY = frozenset({"Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Abs", "Neg", "Cast", "Clip", "LeakyRelu",
                   "Gelu", "HardSigmoid", "HardSwish", "Elu", "Softplus", "Identity", "Floor", "Ceil", "Round",
                   "Reciprocal", "Sin", "Cos", "Mish", "Not", "Sign"})
BINARY = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"})
MAX_BETWEEN = 16


def _scalar_const(v: Value | None, facts: ShapeFacts) -> bool:
    if v is None:
        return False
    s = facts.shape(v)
    return facts.is_build_constant(v) and s is not None and all(d is not None and d.value == 1 for d in s)


class TransposeSandwich(Rule):
    """Two Transposes cancel around ops that do not care about layout.

    ## What it checks
    A Transpose whose output passes, through a single-consumer chain of elementwise ops
    (unary activations, Cast, and arithmetic with a scalar constant), into a second Transpose
    whose permutation undoes the first.

    ## Why it matters
    Each Transpose is a full memory copy. Exporters leave these pairs when a model switches
    to channels-last for one activation (or TF-converted graphs wrap every op); ONNX Runtime's
    transpose optimizer folds many of them, but TensorRT and OpenVINO do not fold every
    pattern, and the pair also blocks fusions of the ops in between with their neighbours.

    ## Example
    `y = torch.sigmoid(x.permute(0, 2, 3, 1)) * 2; y = y.permute(0, 3, 1, 2)`.

    ## Fix
    Drop both Transposes (fold-transpose-pairs): the ops in between give the same result in
    the original layout.
    """

    id = "GL5004"
    name = "transpose-sandwich"
    severity = Severity.INFO
    op_types = frozenset({"Transpose"})
    requires = ("shapes",)
    fixable = True
    source = "ONNX Transpose semantics; onnxruntime transpose optimizer (what it folds is engine-specific)"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        facts: ShapeFacts = ctx.analysis("shapes")
        perm = node.attr("perm")
        if not perm or not node.outputs:
            return
        between: list[Node] = []
        cur = node.outputs[0]
        for _ in range(MAX_BETWEEN):
            if len(cur.consumers) != 1 or cur.is_output:
                return
            n = cur.consumers[0]
            if n.op_type == "Transpose":
                p2 = n.attr("perm") or []
                if len(p2) == len(perm) and [perm[i] for i in p2] == list(range(len(perm))):
                    names = [node.label, *(b.label for b in between), n.label]
                    rw = Rewrite("fold-transpose-pairs", {"nodes": [node.label, n.label]},
                                 description=f"Remove {quote(node.label)} and {quote(n.label)}; "
                                             f"{len(between)} op(s) between them are layout-agnostic.")
                    yield ctx.finding(
                        node,
                        f"Node {quote(node.label)} (Transpose) is undone by {quote(n.label)} after "
                        f"{len(between)} layout-agnostic op(s) ({', '.join(b.op_type for b in between) or 'none'}); "
                        f"both can be removed.",
                        value=node.outputs[0], rewrite=rw, nodes=names,
                    )
                return
            if n.op_type in UNARY:
                pass
            elif n.op_type in BINARY:
                others = [v for v in n.inputs if v is not cur]
                if not all(_scalar_const(v, facts) for v in others):
                    return
            else:
                return
            between.append(n)
            cur = n.outputs[0]
