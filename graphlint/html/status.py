"""What each target does with each node, read from the run's findings: statuses, islands, verdicts.

The report draws what the findings say (after suppressions and --select), so it needs no
analysis of its own: a node is *unsupported* on a target when a target-support (GL1xxx) error
names it, *fused* when GL1002 does (a fused contrib op: plugin or fallback), *drift* for a
GL2xxx finding, else as bad as its worst finding. Unsupported islands are the connected groups
of rejected nodes of the main graph, as the partition analysis defines them (nodes inside
If/Loop bodies count toward their owner); networkx's union-find joins them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from graphlint.analysis.partition import groups
from graphlint.engine import LintResult
from graphlint.ir import Model, Node
from graphlint.rule import FAMILIES, Finding, Rule, Severity

# Status codes, worst last; the page's script and CSS use the same numbers (static/report.js).
OK, INFO, WARNING, DRIFT, ERROR, FUSED, UNSUPPORTED = range(7)
STATUS_NAMES = ["supported", "info", "warning", "drift", "error", "fused op", "unsupported"]
SUPPORT_FAMILY = "target-support"
DRIFT_FAMILY = "drift"
FUSED_RULE = "GL1002"  # fused-contrib-op
ISLAND_RULE = "GL1010"  # partition-island: the island itself, drawn as an outline
ENGINE_VERB = {"trt": "build", "ort": "load", "openvino": "compile"}


def family(rule_id: str, rules: dict[str, type[Rule]]) -> str:
    rule = rules.get(rule_id)
    return rule.family_name() if rule is not None else FAMILIES.get(rule_id[:3], "other")


def status_of(f: Finding, fam: str) -> int:
    if f.rule_id == ISLAND_RULE:
        return OK
    if f.rule_id == FUSED_RULE:
        return FUSED
    if fam == SUPPORT_FAMILY and f.severity >= Severity.ERROR:
        return UNSUPPORTED
    if f.severity >= Severity.ERROR:
        return ERROR
    if fam == DRIFT_FAMILY:
        return DRIFT
    return WARNING if f.severity >= Severity.WARNING else INFO


def top_node(node: Node) -> Node:
    """The main-graph node a node belongs to (itself, or the If/Loop owning its body)."""
    while node.graph.owner is not None:
        node = node.graph.owner
    return node


class NodeIndex:
    """Finds the main-graph node a finding is about: its node, else its value's producer or consumer."""

    def __init__(self, model: Model) -> None:
        self.main = model.graph
        self.graphs = {g.path: g for g in model.graph.graphs()}
        self._by_label: dict[str, dict[str, Node]] = {}

    def _labels(self, path: str) -> dict[str, Node]:
        table = self._by_label.get(path)
        if table is None:
            g = self.graphs.get(path)
            table = self._by_label[path] = {n.label: n for n in g.nodes} if g is not None else {}
        return table

    def subject(self, f: Finding) -> Node | None:
        path = f.location.graph_path
        node = None
        if f.node:
            node = self._labels(path).get(f.node)
        elif f.value and path in self.graphs:
            v = self.graphs[path].values.get(f.value)
            if v is not None:
                node = v.producer or (v.consumers[0] if v.consumers else None)
        if node is None:
            return None
        node = top_node(node)
        return node if node.graph is self.main else None  # function bodies: not drawn


@dataclass
class TargetView:
    """One model on one target: per-node statuses and findings, islands, counts."""

    result: LintResult
    status: dict[int, int] = field(default_factory=dict)  # main-graph node index -> worst status
    findings: dict[int, list[int]] = field(default_factory=dict)  # node index -> finding ids
    unplaced: list[int] = field(default_factory=list)  # model-level finding ids
    islands: list[list[Node]] = field(default_factory=list)  # unsupported, in graph order
    island_of: dict[int, int] = field(default_factory=dict)  # node index -> island number (1-based)
    counts: Counter = field(default_factory=Counter)  # severity label -> n
    rules: Counter = field(default_factory=Counter)  # rule id -> n

    @property
    def errors(self) -> int:
        return self.counts.get("error", 0)

    @property
    def verb(self) -> str:
        return ENGINE_VERB.get(self.result.target.name, "load")

    @property
    def supported_pct(self) -> float:
        n = len(self.result.model.graph.nodes)
        rejected = sum(len(i) for i in self.islands)
        return round(100.0 * (n - rejected) / n, 1) if n else 100.0


def target_view(result: LintResult, index: NodeIndex, ids: dict[int, int], rules: dict[str, type[Rule]]) -> TargetView:
    """``ids`` maps id(finding) to its number in the page."""
    view = TargetView(result)
    rejected: dict[int, Node] = {}
    for f in result.findings:
        if f.suppressed:
            continue
        view.counts[f.severity.label] += 1
        view.rules[f.rule_id] += 1
        node = index.subject(f)
        if node is None:
            view.unplaced.append(ids[id(f)])
            continue
        fam = family(f.rule_id, rules)
        st = status_of(f, fam)
        i = node.index
        view.status[i] = max(st, view.status.get(i, OK))
        view.findings.setdefault(i, []).append(ids[id(f)])
        if fam == SUPPORT_FAMILY and f.severity >= Severity.ERROR:
            rejected[i] = node
    view.islands = islands(rejected.values())
    view.island_of = {n.index: k for k, comp in enumerate(view.islands, 1) for n in comp}
    return view


def islands(rejected: Iterable[Node]) -> list[list[Node]]:
    """Connected groups of the given main-graph nodes (joined by a tensor), in graph order of their
    first node: numbered as GL1010 numbers them."""
    nodes = sorted({n.index: n for n in rejected}.values(), key=lambda x: x.index)
    local = {n.index: i for i, n in enumerate(nodes)}
    pairs = [(local[n.index], local[c.index]) for n in nodes for v in n.outputs
             for c in map(top_node, v.consumers) if c.index in local and c.graph is n.graph]
    return [[nodes[i] for i in members] for members in groups(len(nodes), pairs)]
