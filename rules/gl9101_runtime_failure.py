"""GL9101 runtime-failure: under --confirm, an engine refused or failed the model and no rule predicted it."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rule, Severity


class RuntimeFailure(Rule):
    """An engine refused the model, failed running it, or crashed, and no static finding said so.

    ## What it checks
    With `--confirm`, graphlint runs the model on every installed engine that matches a requested
    target (ONNX Runtime CPU, OpenVINO CPU, TensorRT where a GPU is), in a child process, at the
    sizes that will be fed (`--shapes` corners, a deployment folder's processor sizes), at the
    export's own sizes, and at sample sizes where nobody said. A failure that a static finding
    predicted confirms that finding instead; this rule reports the rest: the load or compile
    error, or the run error with the size it happened at and the node the engine names.

    ## Why it matters
    Some failures are not decidable from the graph: a kernel's own limits, a shape only known at
    run time, an engine bug. Each one here is also a miss of the static rules, recorded in
    `docs/conformance.md` so that it can become a rule.

    ## Example
    OpenVINO's CPU plugin raising "Broadcast ... incorrect shapes" at a sequence length of 16 for
    a model that runs at 8, where no constant in the graph shows the limit.

    ## Fix
    Read the engine's message: the node and the size are named. Feed only sizes that run (and
    say so with `--shapes`), or change the export. An error means a size you said you feed (or
    the export's own) fails; a failure at a sample size only is a warning, and so is one on a node
    fed integers whose meaning graphlint could not tell (their values were a guess).
    """

    id = "GL9101"
    name = "runtime-failure"
    family = "runtime"
    severity = Severity.ERROR
    scope = "confirm"
    dialects = frozenset({ONNX, OPENVINO})
    source = "engine runs under --confirm (graphlint/confirm)"

    def check_confirm(self, ctx) -> Iterator[Finding]:
        from graphlint.confirm.verdicts import basis

        seen: set[tuple[str, str | None]] = set()
        for f in ctx.unpredicted:
            key = (f.stage, f.node)
            if key in seen:  # one finding per node and stage; the first failing size is named
                continue
            seen.add(key)
            node = ctx.node(f.node)
            guessed = _guessed_inputs(ctx, node, f.point) if f.stage == "run" else []
            unknown = (["fed sizes"] if f.sample_only else []) + (["input values"] if guessed else [])
            tail = (" The size is a sample graphlint chose; give the sizes you feed with --shapes to know "
                    "whether it matters." if f.sample_only else "")
            if guessed:
                tail += (f" The values of {', '.join(repr(n) for n in guessed)} were graphlint's guess (integers "
                         "with no contract it knows): give real inputs to know whether they are the cause.")
            yield ctx.finding(node, f"{f.text()}.{tail}", severity=Severity.WARNING if unknown else Severity.ERROR,
                              basis=None if unknown else basis(f.engine.engine),
                              confirm={"verdict": "runtime", **f.evidence()}, kind=f.stage, unknown=unknown or None)
        er = ctx.run
        if er.stopped and not er.skipped:  # a time budget or an outside kill: what the engine would do is unknown
            yield ctx.finding(None, f"{er.engine.title} did not finish: {er.crashed}; the sizes it had not run "
                              "are unconfirmed (raise [confirm] budget to run them).", severity=Severity.WARNING,
                              kind="stopped", unknown=["engine behaviour"])


def _guessed_inputs(ctx, node, point) -> list[str]:
    """Graph inputs fed values graphlint guessed (graphlint.confirm.plan.guessed) that reach the failing
    node (through shape-only ops), or, where the engine names no node, any such input."""
    from graphlint.confirm.feeds import PASS
    from graphlint.confirm.plan import guessed as guesses

    guessed = guesses(ctx.plan, point)
    if not guessed or node is None:
        return sorted(guessed)
    found, stack, seen = set(), list(node.inputs), set()
    while stack:
        v = stack.pop()
        if v is None or id(v) in seen:
            continue
        seen.add(id(v))
        if v.name in guessed and v.producer is None:
            found.add(v.name)
        elif v.producer is not None and v.producer.op_type in PASS:
            stack.extend(v.producer.inputs[:1])
    return sorted(found)
