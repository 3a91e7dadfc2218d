"""GL5002 layout-contradicts-shape: an OpenVINO layout that does not fit the port's shape."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.layout import guess_layout, parse_layout, ppp_snippet
from graphlint.ir import OPENVINO
from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote

SMALL = (1, 3, 4)


class LayoutContradictsShape(Rule):
    """A port's layout does not match its shape (wrong rank, or C on an axis that is not channels).

    ## What it checks
    For OpenVINO IR inputs and outputs with a `layout` rt_info: the layout's rank against the
    shape's rank, and for image layouts whether the `C` axis has a channel-like static size
    (1, 3 or 4) when another spatial axis does and `C` does not (layout NHWC on `[?, 3, 224, 224]`).

    ## Why it matters
    PrePostProcessor and the plugins trust the layout: a wrong one makes `tensor().set_layout()`
    insert the wrong Transpose, resize the channel axis as if it were width, or reject the model
    when the layout's rank differs from the shape's. The result is silently wrong images. A
    warning: OpenVINO 2026.4 reads and compiles such IR as it is; what goes wrong is the
    preprocessing built on the layout.

    ## Example
    `ppp.input("image").model().set_layout(ov.Layout("NHWC"))` on an ONNX-converted NCHW model.

    ## Fix
    Set the layout that matches the model's shape (see the snippet in the suggested rewrite);
    describe what the application feeds with `tensor().set_layout()` instead.
    """

    id = "GL5002"
    name = "layout-contradicts-shape"
    severity = Severity.WARNING  # OpenVINO reads and compiles such IR (2026.4.1, run here); preprocessing goes wrong
    dialects = frozenset({OPENVINO})
    fixable = True
    source = "OpenVINO docs: Layout API overview"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        g = ctx.model.graph
        for kind, values in (("Input", g.inputs), ("Output", g.outputs)):
            for v in values:
                text = v.rt_info.get("layout")
                layout = parse_layout(text)
                if layout is None or v.shape is None:
                    continue
                problem = None
                if "..." not in layout and len(layout) != len(v.shape):
                    problem = f"has {len(layout)} axes but the shape has rank {len(v.shape)}"
                elif "C" in layout and "..." not in layout:
                    c = layout.index("C")
                    cd = v.shape[c]
                    others = [i for i, n in enumerate(layout) if n in ("H", "W", "D") and v.shape[i] in SMALL]
                    if isinstance(cd, int) and cd not in SMALL and others:
                        problem = (f"puts C on axis {c} (size {cd}) while axis {others[0]} "
                                   f"({layout[others[0]]}) has size {v.shape[others[0]]}, the channel count")
                if problem is None:
                    continue
                guess = guess_layout(v.shape)
                snippet = ppp_snippet(v.name, guess or "...", output=kind == "Output")
                rw = Rewrite("set-layout", {"value": v.name, "layout": guess, "ppp": snippet},
                             description=f"PrePostProcessor: ppp.{kind.lower()}('{v.name}').model()"
                                         f".set_layout(ov.Layout('{guess or '...'}')) (full snippet in params.ppp).")
                dims = "[" + ", ".join("?" if d is None else str(d) for d in v.shape) + "]"
                yield ctx.finding(
                    v.producer if kind == "Output" else None,
                    f"{kind} {quote(v.name)} {dims} has layout {text} that {problem}"
                    + (f"; the shape looks {guess}." if guess else "."),
                    value=v, rewrite=rw, layout=text, suggested_layout=guess,
                )
