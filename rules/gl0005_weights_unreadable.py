"""GL0005 weights-unreadable: external data or .bin references that are refused or broken."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _contract as C
from graphlint_rules._validity import TABLE, fact

from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rule, RuleContext, Severity

KINDS = {"external-data", "bin-range", "bin-missing"}


class WeightsUnreadable(Rule):
    """A weight reference points outside the model folder, at a missing file, or past its end.

    ## What it checks
    ONNX external-data locations (absolute paths, `..` traversal, symlinks leaving the model
    folder, missing or non-regular files, offset/length past the end, length disagreeing with
    the tensor's declared size) and OpenVINO Const layers whose offset+size exceed the .bin.
    graphlint refuses such references and never opens them.

    ## Why it matters
    A model from a hub or a partner is untrusted input: an external-data path can make a
    loader read any file on the build machine. Broken references otherwise surface as a
    crash deep inside the engine build.

    ## Example
    An initializer whose `location` is `../../etc/passwd`, or a `model.onnx.data` that was
    truncated in transfer.

    ## Fix
    Re-save the model with `onnx.save_model(..., save_as_external_data=True, location="model.onnx.data")`
    so every location is a plain file name beside the model, and copy the data file with it.
    """

    id = "GL0005"
    name = "weights-unreadable"
    severity = Severity.ERROR
    dialects = frozenset({ONNX, OPENVINO})

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        f = fact("weights-unreadable")
        t = ctx.target
        for issue in ctx.model.issues:
            if issue.kind not in KINDS:
                continue
            text = issue.message[:1].upper() + issue.message[1:] + "."
            verdict = f["verdict"].get(t.name)
            if "(symlink)" in issue.message and t.name in f.get("follows_symlinks", ()):
                verdict = C.TOLERATES
            if verdict in C.FAILING:
                yield ctx.finding(issue.node, f"{text} {t.title} cannot read such weights either.", value=issue.value,
                                  **C.props(C.fact_basis(TABLE, f["id"]), kind=issue.kind))
            elif verdict == C.TOLERATES:
                yield ctx.finding(issue.node, f"{text} {t.title} reads them (its parser follows the symlink); "
                                              "graphlint refuses to, as the file is untrusted input.",
                                  value=issue.value, severity=Severity.WARNING, kind=issue.kind)
            else:
                yield ctx.finding(issue.node, f"{text} What {t.title} does with it is not recorded (engine behaviour "
                                              "unknown).", value=issue.value, severity=Severity.WARNING,
                                  **C.props(unknown=["engine behaviour"], kind=issue.kind))
