"""GL2007 fp16-decomposed-normalization: hand-decomposed LayerNorm/softmax that overflows in fp16."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from graphlint_rules import _drift as D

from graphlint.ir import Node, Value
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote, quote_node
from graphlint.target import Target

ID = "GL2007"


class Fp16DecomposedNormalization(Rule):
    """A LayerNorm or softmax written out of elementary ops overflows when the target computes in fp16.

    ## What it checks
    On targets that compute in fp16 (OpenVINO GPU and NPU by default, flagged `fp16_default` in
    the target profile: warning; TensorRT, where `--fp16` is a common build flag: info):

    - the variance step of a decomposed LayerNorm: `Pow(x - ReduceMean(x), 2)` (or
      `Mul(d, d)`) feeding a ReduceMean, as torch's legacy exporter writes `nn.LayerNorm`
      below opset 17;
    - a softmax written as `Exp(x)` / `ReduceSum` / `Div` with no `x - ReduceMax(x)` before the
      Exp.

    ## Why it matters
    fp16 tops out at 65504: `(x - mean)^2` overflows once `|x - mean| > 256`, the variance
    becomes inf and the row normalizes to 0; `exp(x)` overflows for `x > 11.1` and the softmax
    becomes NaN. `onnx.reference` in fp16 shows both (the decomposed LayerNorm returns zeros
    where fp32 returns the normalized row) while onnxruntime's LayerNormalization-17 in fp16
    gives the fp32 answer. TensorRT warns "Running layernorm after self-attention in FP16 may
    cause overflow" (NVIDIA/TensorRT #2781, #3692) and recommends opset 17.

    ## Example
    `torch.onnx.export(nn.LayerNorm(768), x, opset_version=13, dynamo=False)` compiled for
    `openvino@gpu`.

    ## Fix
    Re-export at opset >= 17 so LayerNorm becomes one LayerNormalization node (the
    `fuse-layernorm` rewrite does this in place), subtract the row max before Exp (or use
    Softmax), or pin the nodes to fp32 (`keep-fp32`: OpenVINO rt_info
    `disable_fp16_compression`, TensorRT layer precision).
    """

    id = ID
    name = "fp16-decomposed-normalization"
    severity = Severity.WARNING
    op_types = D.op_types(ID)
    fixable = True
    source = f"{D.SOURCE} (fp16-*); NVIDIA/TensorRT#2781, #3692; target profiles (fp16_default)"

    _fp16: tuple[Target, tuple[str, str] | None] | None = None  # (target, its fp16 note), per run

    def check_node(self, node: Node, ctx: RuleContext) -> Iterable[Finding]:
        if node.op_type == "Mul" and node.input(1) is not node.input(0):
            return ()  # most Muls: not a square, nothing else to look at
        cached = self._fp16
        if cached is None or cached[0] is not ctx.target:  # the note depends on the target only
            cached = self._fp16 = (ctx.target, D.fp16_note(ctx.target))
        fp16 = cached[1]
        if fp16 is None or not node.outputs or (node.outputs[0].dtype and not D.is_float(node.outputs[0])):
            return ()
        sev = Severity.WARNING if fp16[0] == "warning" else Severity.INFO
        if node.op_type == "Exp":
            return list(self._softmax(node, ctx, sev, fp16[1]))
        return list(self._layernorm(node, ctx, sev, fp16[1]))

    def _layernorm(self, node: Node, ctx: RuleContext, sev: Severity, why: str) -> Iterator[Finding]:
        d = node.input(0)
        if node.op_type == "Pow":
            if D.scalar(node.input(1)) != 2.0:
                return
        elif node.input(1) is not d:  # Mul(d, d)
            return
        sub = D.producer(d, "Sub")
        mean = D.producer(sub.input(1), "ReduceMean") if sub is not None else None
        if sub is None or mean is None or mean.input(0) is not sub.input(0):
            return
        var = next((c for c in node.outputs[0].consumers if c.op_type == "ReduceMean"), None)
        if var is None:
            return
        f = D.fact("fp16-decomposed-layernorm")
        nodes = [mean, sub, node, var, *_chain(var.outputs[0], ("Add", "Sqrt", "Div"))]
        eps = next((D.constant_operand(n)[0] for n in nodes if n.op_type == "Add"), None)
        yield ctx.finding(
            node,
            f"{quote_node(node)} squares x - mean in a decomposed LayerNorm; {why}, where "
            "any |x - mean| > 256 overflows and the row normalizes to 0.",
            severity=sev,
            rewrite=D.fact_rewrite(f, node, nodes=[n.label for n in nodes], axis=_axes(mean), epsilon=eps),
            **D.props(f),
        )

    def _softmax(self, node: Node, ctx: RuleContext, sev: Severity, why: str) -> Iterator[Finding]:
        out = node.outputs[0]
        rsum = next((c for c in out.consumers if c.op_type == "ReduceSum"), None)
        if rsum is None or not any(c.op_type == "Div" and c.input(1) is rsum.outputs[0] for c in out.consumers):
            return
        sub = D.producer(node.input(0), "Sub")
        if sub is not None and D.producer(sub.input(1), "ReduceMax") is not None:
            return  # the stable form
        f = D.fact("fp16-unstable-softmax")
        yield ctx.finding(
            node,
            f"Node {quote(node.label)} (Exp) starts a softmax written as Exp/ReduceSum/Div without subtracting "
            f"the row max; {why}, where any input above about 11 overflows to inf and the softmax becomes NaN.",
            severity=sev,
            rewrite=D.fact_rewrite(f, node, nodes=[node.label, rsum.label]),
            **D.props(f),
        )


def _chain(value: Value, ops: tuple[str, ...]) -> list[Node]:
    """Follow single consumers through the given op types (Add -> Sqrt -> Div after the variance)."""
    out: list[Node] = []
    for op in ops:
        nxt = next((c for c in value.consumers if c.op_type == op), None)
        if nxt is None or not nxt.outputs:
            break
        out.append(nxt)
        value = nxt.outputs[0]
    return out


def _axes(mean: Node) -> list[int] | None:
    axes = mean.attr("axes")
    if axes is None:
        arr = D.const(mean.input(1))
        axes = arr.reshape(-1).tolist() if arr is not None else None
    return [int(a) for a in axes] if axes is not None else None
