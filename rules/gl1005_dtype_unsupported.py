"""GL1005 dtype-unsupported: a node's element type the engine has no kernel for, or silently casts."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.support import DTYPE, emit
from graphlint.rule import Finding, Rule, RuleContext, Severity


class DtypeUnsupported(Rule):
    """The engine takes this op but not with these element types.

    ## What it checks
    ONNX Runtime: the node's element types must match one type combination of a registered CPU
    kernel for the op's version (e.g. `Add` on uint8 needs opset 14). TensorRT: the op's
    "Supported Types" column of the parser matrix (DOUBLE is cast down to FLOAT with clamping:
    a warning; other types: an error). OpenVINO: element types its ONNX frontend cannot load at
    all (float8 *fnuz*, int2/uint2, complex).

    ## Why it matters
    `Could not find an implementation for Add(13) node` at ORT session creation; TensorRT
    rejects the layer or computes in another precision; OpenVINO refuses to read the model.

    ## Example
    `Mul` on int8 tensors at opset 13 for `--target ort` (int8 `Mul` kernels start at opset 14).

    ## Fix
    Insert `Cast` to a supported type around the node, or export at an opset whose kernels take
    the type; for float64 models, convert weights and inputs to float32 (`double-to-float`).
    """

    id = "GL1005"
    name = "dtype-unsupported"
    severity = Severity.ERROR
    requires = ("support",)
    source = "rules/data/support/*.json element types (ORT kernel type constraints, TRT matrix, OpenVINO probes)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        yield from emit(ctx, DTYPE)
