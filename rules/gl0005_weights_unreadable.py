"""GL0005 weights-unreadable: external data or .bin references that are refused or broken."""

from __future__ import annotations

from collections.abc import Iterator

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
        for issue in ctx.model.issues:
            if issue.kind in KINDS:
                yield ctx.finding(issue.node, issue.message[:1].upper() + issue.message[1:] + ".",
                                  value=issue.value, kind=issue.kind)
