"""GL5001 openvino-missing-layout: OpenVINO IR inputs/outputs without layout rt_info."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.layout import guess_layout, ppp_snippet
from graphlint.ir import OPENVINO
from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote


def _fmt(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in (shape or ())) + "]"


class OpenvinoMissingLayout(Rule):
    """An OpenVINO IR input (or image-like output) carries no layout.

    ## What it checks
    Every Parameter of rank 3 or more, and every rank-4 Result, for a `layout` entry in its
    rt_info (what `PrePostProcessor.input().model().set_layout()` or `ovc --layout` write).
    A note (info): OpenVINO compiles and runs such a model, and only layout-aware preprocessing
    needs the layout. The suggested layout is guessed from where the 1- or 3-sized channel dim sits.

    ## Why it matters
    OpenVINO assumes no default layout. Without one, `PrePostProcessor` cannot convert
    layouts, resize or reverse channels for you (`tensor().set_layout("NHWC")` fails to
    build), `ov::layout::batch_idx` and `set_batch()` cannot find the batch, and a pipeline
    feeding NHWC frames into an NCHW model with square, dynamic dims runs without an error and
    returns garbage.

    ## Example
    `ov.convert_model("model.onnx")` then `ov.save_model(...)` with no PrePostProcessor step.

    ## Fix
    Set the layout once at conversion (`ovc model.onnx --layout image[NCHW]`) or with the
    PrePostProcessor snippet in the suggested rewrite, then save the IR again.
    """

    id = "GL5001"
    name = "openvino-missing-layout"
    severity = Severity.INFO
    dialects = frozenset({OPENVINO})
    fixable = True
    source = "OpenVINO docs: Layout API overview, PrePostProcessor (openvino.preprocess)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        g = ctx.model.graph
        for v in g.inputs:
            if v.rank is None or v.rank < 3 or v.rt_info.get("layout"):
                continue
            yield self._finding(ctx, v, output=False)
        for v in g.outputs:
            if v.rank == 4 and not v.rt_info.get("layout"):
                yield self._finding(ctx, v, output=True)

    def _finding(self, ctx: RuleContext, v, *, output: bool) -> Finding:
        guess = guess_layout(v.shape)
        layout = guess or "?" * (v.rank or 0)
        kind = "Output" if output else "Input"
        snippet = ppp_snippet(v.name, guess or "...", output=output)
        rw = Rewrite("set-layout", {"value": v.name, "layout": guess, "ppp": snippet},
                     description=f"PrePostProcessor: ppp.{'output' if output else 'input'}('{v.name}').model()"
                                 f".set_layout(ov.Layout('{layout}')) (full snippet in params.ppp).")
        hint = f"; it looks like {guess}" if guess else "; set the one the model was trained with"
        sev = Severity.INFO  # OpenVINO compiles and runs it; only layout-aware preprocessing needs the layout
        return ctx.finding(
            v.producer if output else None,
            f"{kind} {quote(v.name)} {_fmt(v.shape)} has no layout in the IR; OpenVINO assumes none, so layout "
            f"conversion and batch detection cannot work{hint}.",
            value=v, rewrite=rw, severity=sev, suggested_layout=guess,
        )
