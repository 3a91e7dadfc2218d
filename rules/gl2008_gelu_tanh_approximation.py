"""GL2008 gelu-tanh-approximation: a tanh-approximate GELU subgraph that Gelu-20 would compute exactly."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _drift as D

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote

ID = "GL2008"
SQRT_2_OVER_PI = 0.7978845608
CUBIC = 0.044715


class GeluTanhApproximation(Rule):
    """A tanh-approximate GELU subgraph: fusing it into Gelu-20 needs `approximate='tanh'`.

    ## What it checks
    The subgraph `0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` that torch writes for
    `gelu(approximate="tanh")` at every opset below 20 (legacy: `x*x*x`; dynamo: `Pow(x, 3)`),
    recognized from the Tanh node back through the `sqrt(2/pi)` Mul, the Add and the `0.044715`
    Mul. Reported as information on targets whose opset range reaches 20.

    ## Why it matters
    ONNX Gelu-20 computes the exact (erf) GELU unless `approximate="tanh"`. A fusion pass, a
    re-export at opset >= 20 or a hand edit that maps this subgraph to `Gelu` without the
    attribute changes every activation by up to about 5e-4 with no error; onnxruntime shows
    the subgraph matching `Gelu(approximate='tanh')` to 1e-6 but not the default `Gelu`.

    ## Example
    `torch.nn.functional.gelu(x, approximate="tanh")` (GPT-2 style MLPs) exported at opset 17.

    ## Fix
    Nothing to change while the model stays decomposed. To fuse, apply the `fuse-gelu` rewrite
    with `approximate="tanh"` (what the suggestion carries), or re-export at opset 20, where
    torch writes `Gelu(approximate="tanh")` itself.
    """

    id = ID
    name = "gelu-tanh-approximation"
    severity = Severity.INFO
    op_types = D.op_types(ID)
    fixable = True
    source = f"{D.SOURCE} (gelu-tanh-approximation); ONNX Changelog Gelu-20"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        rng = ctx.target.opset_range("ai.onnx")
        if rng is not None and rng[1] < 20:
            return
        scale = D.producer(node.input(0), "Mul")
        k, add_out = D.constant_operand(scale) if scale is not None else (None, None)
        if k is None or abs(k - SQRT_2_OVER_PI) > 1e-4:
            return
        add = D.producer(add_out, "Add")
        if add is None:
            return
        cubic = next((p for p in (D.producer(v, "Mul") for v in add.inputs[:2]) if p is not None
                      and (c := D.constant_operand(p)[0]) is not None and abs(c - CUBIC) < 1e-5), None)
        if cubic is None:
            return
        f = D.fact("gelu-tanh-approximation")
        yield ctx.finding(
            node,
            f"Node {quote(node.label)} (Tanh) belongs to a tanh-approximate GELU; ONNX Gelu (opset 20) "
            "computes the exact erf form unless approximate='tanh', so a fusion or re-export that drops the "
            "attribute shifts outputs by up to ~5e-4.",
            rewrite=D.fact_rewrite(f, node, nodes=[cubic.label, add.label, scale.label, node.label],
                                   approximate="tanh"),
            **D.props(f),
        )
