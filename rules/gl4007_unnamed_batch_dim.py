"""GL4007 unnamed-batch-dim: an input's leading dynamic dim has no name (or an exporter's generated one)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote

GENERATED = re.compile(r"^(unk__\d+|s\d+|d\d+|dim_?\d+|DynamicDimension\w*|\?)$")


class UnnamedBatchDim(Rule):
    """An input's first dim is dynamic but unnamed (or auto-named), so it is probably an anonymous batch.

    ## What it checks
    Graph inputs whose axis 0 has neither a value nor a meaningful name: no `dim_param`, or
    an exporter-generated one (`unk__3`, `s0`, `dim_0`).

    ## Why it matters
    Unnamed dims are all different by definition: nothing ties this input's batch to the
    others', so shape inference cannot prove they agree (GL3001 stays silent where it should
    not), TensorRT profiles and OpenVINO reshape calls need per-input guesses, and generated
    names change between exports, breaking configs that refer to them.

    ## Example
    `make_tensor_value_info("x", FLOAT, [None, 3, 224, 224])`, or a dynamo export whose batch
    came out as `s0`.

    ## Fix
    Name the dim at export (`dynamic_axes={"x": {0: "batch"}}`, `Dim("batch")`), the same name
    on every input that shares it.
    """

    id = "GL4007"
    name = "unnamed-batch-dim"
    severity = Severity.INFO
    fixable = True
    source = "ONNX TensorShapeProto semantics (unnamed dims are distinct)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for v in ctx.model.graph.inputs:
            if v.const is not None or not v.shape:
                continue
            d = v.shape[0]
            if isinstance(d, int) or (isinstance(d, str) and not GENERATED.match(d)):
                continue
            what = "has no name" if d is None else f"has the generated name '{d}'"
            yield ctx.finding(
                None,
                f"Input {quote(v.name)} axis 0 is dynamic and {what}; it is probably the batch: name it "
                f"(e.g. 'batch') on every input that shares it.",
                value=v,
                rewrite=Rewrite("share-symbol", {"inputs": [f"{v.name}:0"], "symbol": "batch"},
                                description=f"Name '{v.name}' axis 0 'batch'."),
            )
