"""The catalogue of rewrites findings may suggest, shared by the rules and `graphlint fix`.

A rule attaches ``Rewrite(name, params, safe)`` to a finding; ``graphlint fix`` looks the
name up among its passes. Keeping the names here (and a test that every name a rule uses
is catalogued and every catalogued name has a pass) keeps the two sides honest.

``safe`` is the default: True when the rewrite preserves results exactly. A rule may mark
an instance unsafe (e.g. a Resize mode change that alters numbers on purpose).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RewriteSpec:
    name: str
    safe: bool
    summary: str
    params: tuple[str, ...] = ()


CATALOGUE: dict[str, RewriteSpec] = {
    s.name: s
    for s in [
        RewriteSpec("explicit-attribute", True, "Write an attribute's implicit default explicitly.",
                    ("node", "attribute", "value")),
        RewriteSpec("resize-coordinate-mode", False,
                    "Set a Resize node's coordinate_transformation_mode (and nearest_mode) to the given values.",
                    ("node", "mode", "nearest_mode")),
        RewriteSpec("upsample-to-resize", True, "Replace a deprecated Upsample with the equivalent Resize.",
                    ("node",)),
        RewriteSpec("softmax-keep-2d-semantics", True,
                    "Wrap an opset<13 Softmax/LogSoftmax/Hardmax in Flatten/Reshape so an opset upgrade keeps its results.",
                    ("node",)),
        RewriteSpec("groupnorm-per-channel", True,
                    "Rewrite GroupNormalization-18 per-group scale/bias as opset-21 per-channel scale/bias.",
                    ("node",)),
        RewriteSpec("gridsample-mode-names", True,
                    "Rename GridSample-20 modes (linear/cubic) to the opset-16 names (bilinear/bicubic) for TensorRT.",
                    ("node",)),
        RewriteSpec("attribute-to-input", True,
                    "Move an attribute that became an input at the node's opset (axes, min/max, pads) into a "
                    "constant input.", ("node", "attribute", "input")),
        RewriteSpec("fuse-layernorm", True,
                    "Replace a decomposed LayerNorm (ReduceMean/Sub/Pow/ReduceMean/Sqrt/Div) with "
                    "LayerNormalization-17, whose statistics engines keep in fp32.", ("nodes", "axis", "epsilon")),
        RewriteSpec("fuse-gelu", True,
                    "Replace an erf or tanh GELU subgraph with Gelu-20 carrying the matching approximate attribute.",
                    ("nodes", "approximate")),
        RewriteSpec("keep-fp32", True,
                    "Pin nodes to fp32 on an engine that infers in fp16 (OpenVINO rt_info "
                    "disable_fp16_compression, TensorRT layer precision).", ("nodes",)),
        RewriteSpec("opset-upgrade", True,
                    "Convert the model to the given opset with onnx.version_converter after the drift fixes.",
                    ("opset",)),
        RewriteSpec("fold-constants", True,
                    "Evaluate constant subgraphs (shape computations) so the engine sees build-time constants.",
                    ("nodes",)),
        RewriteSpec("unfuse-contrib", True,
                    "Replace a com.microsoft fused op with the equivalent standard ONNX subgraph.",
                    ("node", "op_type")),
        RewriteSpec("trt-plugin", False, "Map a fused op onto the named TensorRT plugin (needs the plugin at build).",
                    ("node", "plugin")),
        RewriteSpec("input-cast-normalize", False,
                    "Make a uint8 image input float32 in [0,1] (or keep uint8 and insert Cast + Div by 255).",
                    ("input", "side")),
        RewriteSpec("int64-to-int32", False, "Narrow an int64 value to int32 where its range provably fits.",
                    ("value",)),
        RewriteSpec("double-to-float", False, "Store a float64 value as float32.", ("value",)),
        RewriteSpec("fix-input-shape", False, "Make a dynamic input's dims static (from --shapes).",
                    ("input", "shape")),
        RewriteSpec("pad-to-multiple", False, "Pad a dynamic sequence dim up to a multiple (bucketing).",
                    ("input", "axis", "multiple")),
        RewriteSpec("share-symbol", True, "Give two dims that must agree one shared symbolic name.",
                    ("inputs", "symbol")),
        RewriteSpec("set-layout", True, "Set an OpenVINO input/output layout (PrePostProcessor / rt_info).",
                    ("value", "layout")),
        RewriteSpec("remove-dead-nodes", True, "Remove nodes whose outputs reach no graph output.", ("nodes",)),
        RewriteSpec("fold-quantized-constant", True,
                    "Store a constant that a QuantizeLinear quantizes at run time as its quantized initializer "
                    "(the Q computed once; results unchanged).", ("nodes",)),
        RewriteSpec("relu-before-clamping-q", True,
                    "Put a Relu in front of a QuantizeLinear whose range clamps at 0 (an engine that strips the Q "
                    "keeps the clamp; results unchanged).", ("nodes",)),
        RewriteSpec("dequantize-dynamic", False,
                    "Replace DynamicQuantizeLinear + MatMulInteger/ConvInteger with float MatMul/Conv on the "
                    "dequantized weights (removes the activation quantization on purpose).", ("nodes",)),
        RewriteSpec("fold-transpose-pairs", True, "Remove Transpose pairs that cancel around layout-agnostic ops.",
                    ("nodes",)),
        RewriteSpec("space-to-depth-decompose", True,
                    "Replace a SpaceToDepth (mode=CRD) with the equivalent Reshape / Transpose / Reshape.",
                    ("node",)),
        RewriteSpec("maxpool-explicit-pads", True,
                    "Replace MaxPool ceil_mode=1 by ceil_mode=0 with the end padding that gives the spec's output size.",
                    ("node",)),
    ]
}


def spec(name: str) -> RewriteSpec:
    try:
        return CATALOGUE[name]
    except KeyError:
        raise KeyError(f"rewrite {name!r} is not in graphlint.rewrites.CATALOGUE") from None
