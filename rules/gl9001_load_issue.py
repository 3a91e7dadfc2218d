"""GL9001 load-issue: problems the loader worked around (IR structure, bodies, limits)."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.ir import ONNX, OPENVINO, SourceLoc
from graphlint.rule import Finding, Rule, RuleContext, Severity

# Load issue kinds other rules own.
OWNED = {"shape-inference", "external-data", "bin-range", "bin-missing", "xml-edge", "xml-port",
         "dim-refused", "impossible-dims"}


class LoadIssue(Rule):
    """The loader found a structural problem it had to work around.

    ## What it checks
    Problems recorded while building the graph that no other rule owns: duplicate OpenVINO IR
    layer ids, duplicate ONNX node names, and similar structural defects. (Edges OpenVINO's
    reader refuses are GL0006's; dimensions it refuses are GL0007's.)

    ## Why it matters
    Anything the loader had to skip is something the engine may choke on, and analysis of
    the surrounding nodes may be incomplete.

    ## Example
    Two `<layer id="1" ...>` elements in one OpenVINO IR `.xml`.

    ## Fix
    Regenerate the IR with `openvino.save_model` (or `ovc`) from the source model.
    """

    id = "GL9001"
    name = "load-issue"
    severity = Severity.WARNING
    dialects = frozenset({ONNX, OPENVINO})

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for issue in ctx.model.issues:
            if issue.kind in OWNED:
                continue
            kind = issue.kind if issue.key is None else f"{issue.kind} {issue.key}"
            f = ctx.finding(issue.node, issue.message[:1].upper() + issue.message[1:] + ".", kind=kind)
            if issue.line and issue.node is None:  # e.g. an <edge> line in the .xml
                f.location = SourceLoc(file=ctx.model.path, graph_path=issue.graph_path, line=issue.line)
            yield f
