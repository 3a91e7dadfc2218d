"""GL7007 scale-dtype-opset: float16/bfloat16 Q/DQ scales before opset 19."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _quant as Q

from graphlint.ir import ONNX_DOMAIN
from graphlint.rule import Finding, Rule, RuleContext, Severity


class ScaleDtypeOpset(Rule):
    """QuantizeLinear/DequantizeLinear with a float16/bfloat16 scale at an opset that allows float only.

    ## What it checks
    Default-domain QuantizeLinear/DequantizeLinear nodes below opset 19 whose scale is float16 or
    bfloat16 (opset 13 allows float scales only; 19 added float16/bfloat16).

    ## Why it matters
    `onnxruntime.transformers.float16.convert_float_to_float16` converts Q/DQ scales of an
    opset-17 QDQ model to float16; ONNX Runtime then refuses to load it (`INVALID_GRAPH ... Type
    'tensor(float16)' of input parameter (..._scale) of operator (DequantizeLinear) ... is
    invalid`). OpenVINO tolerates it (a warning on that target; an error on ONNX Runtime).

    ## Example
    A ResNet quantized with `quantize_static` at opset 17, then converted to float16.

    ## Fix
    Convert after upgrading to opset 19 (`onnx.version_converter.convert_version(model, 19)`), or
    keep the Q/DQ nodes in float32: `convert_float_to_float16(model,
    op_block_list=["QuantizeLinear", "DequantizeLinear"])`.
    """

    id = "GL7007"
    name = "scale-dtype-opset"
    severity = Severity.WARNING
    targets = frozenset({"ort", "openvino"})  # TensorRT's parser casts such scales (onnx-tensorrt 10.15)
    requires = ("quantization",)
    source = Q.SOURCE

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        quant = ctx.analysis("quantization")
        nodes = [q.node for q in quant.qnodes if q.scale_dtype in ("float16", "bfloat16")
                 and q.node.domain == ONNX_DOMAIN and isinstance(q.node.opset, int) and q.node.opset < 19]
        if nodes:
            fid = "ort-fp16-scale-before-19" if ctx.target.name == "ort" else "ov-fp16-scale-before-19"
            sev = Severity.ERROR if ctx.target.name == "ort" else Severity.WARNING
            yield Q.scheme_finding(ctx, nodes, fid, f"float16 Q/DQ scales at opset {nodes[0].opset}",
                                   severity=sev)
