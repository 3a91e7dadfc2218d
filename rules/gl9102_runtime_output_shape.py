"""GL9102 runtime-output-shape: under --confirm, an output came back in another shape than declared or than another engine gives."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rule, Severity


class RuntimeOutputShape(Rule):
    """An engine ran the model without error but returned an output of the wrong shape.

    ## What it checks
    With `--confirm`, each output of each run is held to the shape the graph declares, its dims
    bound by the input shapes of the run, and, where the declaration leaves a dim open, to what
    the other engines returned on the same feeds (an empty tensor where another engine returns
    data is wrong).

    ## Why it matters
    No error is raised, so nothing in the runtime notices until a downstream step reads nothing:
    OpenVINO with `INFERENCE_NUM_THREADS=1` returns an empty tensor for a broadcast it cannot do,
    where its default setting raises.

    ## Example
    A Whisper encoder exported with a dynamic frame count that its position table fixes, compiled
    with one thread: `last_hidden_state` comes back `[0, 64, 384]`.

    An empty output where data is due is an error; data of another shape than declared is a warning
    (an engine may lay an output out its own way on purpose: onnxruntime-genai's builds return the
    shared 128-position KV buffer).

    ## Fix
    Feed the size the model was exported for, or re-export with the dim static; the finding names
    the size and the output.
    """

    id = "GL9102"
    name = "runtime-output-shape"
    family = "runtime"
    severity = Severity.ERROR
    scope = "confirm"
    dialects = frozenset({ONNX, OPENVINO})
    source = "engine runs under --confirm (graphlint/confirm/outputs.py)"

    def check_confirm(self, ctx) -> Iterator[Finding]:
        from graphlint.confirm.plan import SAMPLE
        from graphlint.confirm.plan import guessed as guesses
        from graphlint.confirm.verdicts import basis

        seen: set[str] = set()
        for p in ctx.shape_problems:
            if p.output in seen:
                continue
            seen.add(p.output)
            sample = p.record.point.kind == SAMPLE
            value = next((v for v in ctx.model.graph.outputs if v.name == p.output), None)
            guessed = sorted(guesses(ctx.plan, p.record.point))
            unknown = ((["fed sizes"] if sample else []) + ([] if p.empty else ["whether the runtime reads the shape"])
                       + (["input values"] if guessed else []))
            tail = " The size is a sample graphlint chose." if sample else ""
            if guessed:
                tail += (f" The values of {', '.join(repr(n) for n in guessed)} were graphlint's guess (a range's "
                         "bounds, an index): give real inputs to know whether they are the cause.")
            if not p.empty:
                tail += (" It is data of another shape, not nothing: whether the runtime relies on the declared "
                         "shape is not known.")
            yield ctx.finding(
                value.producer if value is not None else None,
                f"{p.engine.engine.title} returns output '{p.output}' as {list(p.got)} at {p.record.point.text()}, "
                f"where {p.source} {list(p.expected)}; no error is raised.{tail}",
                value=p.output, severity=Severity.WARNING if unknown else Severity.ERROR,
                basis=None if unknown else basis(p.engine.engine),
                confirm={"verdict": "runtime", "engine": p.engine.engine.runner, "point": p.record.point.label,
                         "got": list(p.got), "expected": list(p.expected)},
                unknown=unknown or None)
