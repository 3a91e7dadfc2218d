"""GL4003 narrowed-dtype: float64 values and out-of-range int64 constants on targets that narrow them."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from graphlint.analysis.shapes import ShapeFacts
from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote, quote_node

INT32 = np.iinfo(np.int32)
# Consumers where INT64_MAX-style sentinels are conventional and engines clamp them correctly.
SENTINEL_OK = frozenset({"Slice", "Clip", "Range", "Min", "Max"})


class NarrowedDtype(Rule):
    """Values typed float64, or int64 constants outside the INT32 range, on a target that narrows them.

    ## What it checks
    On targets whose profile lists `cast_down` (TensorRT: DOUBLE to FLOAT) every graph input,
    output, initializer and Cast producing float64; on targets with `int64_narrowed`, int64
    constants (small enough to read) holding values outside the INT32 range, except the
    "to the end" sentinels of Slice/Clip/Range.

    ## Why it matters
    The TensorRT ONNX parser documents "limited support for DOUBLE type. TensorRT will attempt
    to cast DOUBLE down to FLOAT, clamping values to +-FLT_MAX"; INT64 weights were cast to
    INT32 by older parsers and many plugins still take INT32 only. Values that do not fit are
    clamped silently (large ids, hashes, timestamps), and float64 inputs need a host-side cast.

    ## Example
    `torch.arange(n, dtype=torch.float64)` or a float64 input from numpy defaults; an int64
    constant holding 2**40.

    ## Fix
    Export float32 (double-to-float) and keep int64 values inside the INT32 range or
    narrow them explicitly (int64-to-int32) where the range provably fits.
    """

    id = "GL4003"
    name = "narrowed-dtype"
    severity = Severity.WARNING
    requires = ("shapes", "nodes_by_type")
    fixable = True
    source = "https://github.com/onnx/onnx-tensorrt/blob/release/10.15-GA/docs/operators.md (DOUBLE note); rules/data/targets/trt-*.toml"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        t = ctx.target
        cast_down: dict = t.option("cast_down") or {}
        g = ctx.model.graph
        if "float64" in cast_down:
            to = cast_down["float64"]
            for v in (*g.inputs, *g.outputs):
                if v.dtype == "float64":
                    kind = "Input" if v.is_input and v.producer is None else "Output"
                    yield ctx.finding(
                        None,
                        f"{kind} {quote(v.name)} is float64; {t.title} casts DOUBLE down to {to.upper()} "
                        f"(clamping to +-FLT_MAX), so the binding must be converted on the host.",
                        value=v, rewrite=self._rw("double-to-float", v.name),
                    )
            for n in ctx.analysis("nodes_by_type").get("Cast", ()):  # every graph, in walk order
                if n.attr("to") == 11:
                    yield ctx.finding(
                        n,
                        f"Node {quote(n.label)} (Cast) produces float64; {t.title} computes it as {to}.",
                        value=n.outputs[0] if n.outputs else None,
                        rewrite=self._rw("double-to-float", n.outputs[0].name if n.outputs else n.label),
                    )
            for v in g.values.values():
                if v.const is not None and v.const.dtype == "float64" and not v.is_input:
                    yield ctx.finding(
                        v.consumers[0] if v.consumers else None,
                        f"Node {quote(v.consumers[0].label if v.consumers else v.name)} reads the float64 constant "
                        f"{quote(v.name)}; {t.title} narrows it to {to}.",
                        value=v, rewrite=self._rw("double-to-float", v.name),
                    )
        if t.option("int64_narrowed"):
            facts: ShapeFacts = ctx.analysis("shapes")
            for v in g.values.values():
                if v.const is None or v.const.dtype != "int64" or not v.consumers:
                    continue
                if all(c.op_type in SENTINEL_OK for c in v.consumers):
                    continue
                a = facts.const(v)
                if a is None or a.size == 0:
                    continue
                lo, hi = int(a.min()), int(a.max())
                if lo >= INT32.min and hi <= INT32.max:
                    continue
                n = v.consumers[0]
                yield ctx.finding(
                    n,
                    f"{quote_node(n)} reads int64 constant {quote(v.name)} with values up to "
                    f"{hi if hi > INT32.max else lo}, outside INT32; {t.title} plugins and older parsers clamp INT64 "
                    f"to INT32.",
                    value=v, rewrite=Rewrite("int64-to-int32", {"value": v.name}, safe=False,
                                             description="Only when the values fit INT32; these do not, "
                                                         "so change the computation instead."),
                )

    @staticmethod
    def _rw(name: str, value: str) -> Rewrite:
        return Rewrite(name, {"value": value}, safe=False, description=f"Store {value!r} as float32.")
