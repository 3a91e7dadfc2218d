"""GL4005 unsupported-io-dtype: graph inputs/outputs whose element type the target cannot bind."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _contract as C

from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote

# Element types each engine cannot bind as a network input/output, per its docs.
UNBINDABLE = {
    "trt": {"string", "complex64", "complex128", "uint16", "uint32", "uint64", "int16"},
    "openvino": {"complex64", "complex128"},
}


def _basis(ctx: RuleContext) -> str | None:
    """TensorRT: its operators.md lists the types it binds; OpenVINO: the frontend probe's element types."""
    if ctx.target.name == "trt":
        return C.document_basis(C.target_document(ctx.target))
    rel = ctx.target.profile.get("data", {}).get("support")
    return C.table_basis(rel, "element_types") if rel else None


class UnsupportedIODtype(Rule):
    """A graph input or output has an element type the target cannot bind.

    ## What it checks
    The element type of every graph input and output against what the engine binds:
    TensorRT takes DOUBLE, FLOAT32, FLOAT16, BFLOAT16, INT32, INT64, INT8, UINT8, BOOL (and
    quantized types), so string, int16 and unsigned 16/32/64-bit tensors cannot be network
    inputs; OpenVINO has no complex types.

    ## Why it matters
    Tokenizer-in-graph exports take string inputs, and numpy pipelines produce uint16/uint32
    masks; the engine refuses the network at parse time, after the rest of the integration
    is done.

    ## Example
    An input `text: string[batch]` feeding a tokenizer custom op, checked with `--target trt`.

    ## Fix
    Move string processing (tokenization) outside the engine and feed int32/int64 ids; cast
    unsigned masks to int32 or bool on the host.
    """

    id = "GL4005"
    name = "unsupported-io-dtype"
    severity = Severity.ERROR
    dialects = frozenset({ONNX, OPENVINO})
    source = "https://github.com/onnx/onnx-tensorrt/blob/release/10.15-GA/docs/operators.md (supported data types)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        bad = UNBINDABLE.get(ctx.target.name, set())
        g = ctx.model.graph
        for kind, values in (("Input", g.inputs), ("Output", g.outputs)):
            for v in values:
                if v.const is None and v.dtype in bad:
                    yield ctx.finding(
                        None,
                        f"{kind} {quote(v.name)} has element type {v.dtype}, which {ctx.target.title} cannot bind "
                        f"as a network {kind.lower()}.",
                        value=v, dtype=v.dtype, **C.props(_basis(ctx)),
                    )
