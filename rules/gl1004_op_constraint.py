"""GL1004 op-constraint: a node violates a documented per-op restriction of the target engine."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.support import CONSTRAINT, emit
from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rule, RuleContext, Severity


class OpConstraint(Rule):
    """A supported op is used with an attribute value, non-constant input or rank the engine rejects.

    ## What it checks
    The structured restrictions of the target's table, each citing its row: attribute values
    (TensorRT Resize modes, no `antialias`, `keep_aspect_ratio_policy` = `stretch`; TopK `sorted`
    = 1 and K < 3840; ScatterND `reduction` = none; LSTM `layout` = 0 and `input_forget` = 0),
    inputs that must be build-time constants (Reduce* and Squeeze/Unsqueeze `axes`, CumSum
    `axis`, OneHot `depth`, Dropout `training_mode` false), unsupported optional inputs/outputs
    (MaxPool `Indices`, LayerNormalization mean/inv_std_dev), rank limits (2-D/3-D pooling,
    4-D GridSample), and kernel-constructor checks of ONNX Runtime and OpenVINO (batch-wise RNN
    layout, frontend checks that an input is constant, an If whose output rank OpenVINO cannot
    infer). `seed` on random ops is a warning: it is ignored, not refused. On OpenVINO IR, the one
    check that survives conversion: an If whose bodies' Results differ in rank under a run-time
    condition, which OpenVINO's CPU plugin does not compile (optimum's merged T5/Whisper decoders,
    DeBERTa-v2/v3 exports, saved as IR).

    ## Why it matters
    The op exists on the engine, so op-level support tables say "fine"; the build still fails,
    or the result differs, because of how this node uses it.

    ## Example
    `ReduceMean` (opset 18) whose `axes` come from a `Shape`/`Gather` chain, for `--target trt`:
    "`axes` must be an initializer".

    ## Fix
    Fold constants (`graphlint fix` suggests `fold-constants` where the input is computable), set
    the attribute to a supported value at export, or drop the unused optional output.
    """

    id = "GL1004"
    name = "op-constraint"
    severity = Severity.ERROR
    requires = ("support",)
    dialects = frozenset({ONNX, OPENVINO})
    source = "rules/data/support/*.json constraints (TensorRT matrix restriction cells; ORT/OpenVINO checks)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        yield from emit(ctx, CONSTRAINT)
