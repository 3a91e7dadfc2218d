"""Which of a model's findings the text report folds into one block per rule and op type.

A model TensorRT rejects can have a hundred and more findings of one rule on one op type
(GL1004 on every DequantizeLinear of a QDQ model, GL1001 on every MatMulInteger of a dynamically
quantized one) whose messages differ only in the node's name. The text report shows such a run
once: a header with the count, the first few nodes, the message without the node's name and one
fix line. JSON, SARIF, GitHub annotations and the exit code always see every finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graphlint.rule import Finding, Rewrite, Severity, quote

GROUP_OVER = 3  # more findings than this of one rule on one op type are folded
SHOWN = 3  # nodes a folded block names


@dataclass
class Group:
    """Findings of one rule, severity and op type on one model, in finding order."""

    rule_id: str
    rule_name: str
    severity: Severity
    op_type: str
    findings: list[Finding] = field(default_factory=list)

    def nodes(self) -> list[Finding]:
        """The first finding on each node (a rule may report one node more than once)."""
        seen: dict[tuple[str, str | None], Finding] = {}
        for f in self.findings:
            seen.setdefault((f.location.graph_path, f.node), f)
        return list(seen.values())

    def tails(self) -> list[str]:
        """Each finding's message without its leading ``Node 'name' (Op)``."""
        return [message_tail(f) for f in self.findings]

    def shared_rewrite(self) -> Rewrite | None:
        """The rewrite every finding proposes (same name, safety and description), if any."""
        keys = {None if f.rewrite is None else (f.rewrite.name, f.rewrite.safe, f.rewrite.description)
                for f in self.findings}
        return self.findings[0].rewrite if len(keys) == 1 else None


def group_key(f: Finding) -> tuple | None:
    """Findings with the same key may be folded; findings on no node (values, the model) never are."""
    if not f.node or not f.op_type:
        return None
    return (f.rule_id, f.severity, f.op_type)


def fold(findings: list[Finding], over: int = GROUP_OVER) -> tuple[dict[tuple, Group], set[int]]:
    """The groups of more than ``over`` findings, and the ids of the findings they hold."""
    by_key: dict[tuple, list[Finding]] = {}
    for f in findings:
        key = group_key(f)
        if key is not None:
            by_key.setdefault(key, []).append(f)
    groups = {k: Group(fs[0].rule_id, fs[0].rule_name, fs[0].severity, fs[0].op_type or "", fs)
              for k, fs in by_key.items() if len(fs) > over}
    folded = {id(f) for g in groups.values() for f in g.findings}
    return groups, folded


def message_tail(f: Finding) -> str:
    """``f.message`` without the ``Node 'name' (Op)`` it starts with (rule.quote_node's wording)."""
    head = f"Node {quote(f.node)} ({f.op_type})"
    msg = f.message
    if not msg.startswith(head):
        return msg
    return msg[len(head):].lstrip(" ,;:")
