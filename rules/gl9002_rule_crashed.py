"""GL9002 rule-crashed: a rule raised an exception; the rest of the run went on."""

from __future__ import annotations

from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Rule, Severity


class RuleCrashed(Rule):
    """A rule raised an exception while checking this model.

    ## What it checks
    Emitted by the engine, not by analysis: when a rule (built-in or from a third-party
    pack) raises, the engine records this finding naming the rule and where it failed, and
    runs the remaining rules.

    ## Why it matters
    One broken rule must not hide every other finding, and must not pass silently either.

    ## Example
    A third-party rule that indexes `node.inputs[2]` on a node with two inputs.

    ## Fix
    Report it to the rule pack's authors with the model; `--ignore` the rule meanwhile.
    """

    id = "GL9002"
    name = "rule-crashed"
    severity = Severity.WARNING
    dialects = frozenset({ONNX, OPENVINO})
