"""GL1001 unsupported-op: a node whose op, domain or opset version the target engine does not take."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.support import UNSUPPORTED, emit
from graphlint.rule import Finding, Rule, RuleContext, Severity


class UnsupportedOp(Rule):
    """The target engine has no implementation of this op at this opset.

    ## What it checks
    Every ONNX node against the target's support table: TensorRT's ONNX parser matrix (an
    importer for the op type, not marked `N`), ONNX Runtime's registered CPU kernels (a kernel
    whose version range covers the op's schema version at the model's opset), OpenVINO's ONNX
    frontend (a translator at or below the model's opset, probed on the installed wheel).
    ORT fused ops (com.microsoft) are GL1002's, name collisions GL1003's. The message cites the
    table row (`file:line`) the verdict comes from.

    ## Why it matters
    The engine refuses the model: `Could not find an implementation for X(13)` at ORT session
    creation, `No importer registered for op: X` from the TensorRT parser, `No conversion rule
    found for operations: X-N` from OpenVINO. Runners that partition (ORT with the TensorRT or
    OpenVINO EP) instead fall back to another device for the node (see GL1010).

    ## Example
    `Unique` for `--target trt`, `ai.onnx.ml.TreeEnsemble` for `--target openvino`,
    `DequantizeLinear` with float8 input at opset 28 for `--target ort`.

    ## Fix
    Re-export without the op (most exporters can decompose it), replace it with supported ops, or
    implement it as an engine plugin / custom op. Check `graphlint explain GL1010` for the island
    the node sits in.
    """

    id = "GL1001"
    name = "unsupported-op"
    severity = Severity.ERROR
    requires = ("support",)
    source = ("rules/data/support/*.json: trt-*.json (onnx-tensorrt docs/operators.md at each release tag), "
              "ort-*-cpu.json (onnxruntime kernel registry), openvino-*.json (ONNX frontend probes)")

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        yield from emit(ctx, UNSUPPORTED)
