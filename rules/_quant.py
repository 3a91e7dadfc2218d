"""Shared helpers of the quantization rules (GL7xxx): the facts table and one way to word a finding.

The facts live in ``data/quantization.toml`` (per engine and scheme: verdict, claim, remedy,
source, evidence). How the family meets the per-node support rules: a node GL1001/GL1004/GL1005
already rejects is never counted again as an error -- when every node a scheme finding names is
already rejected there, the finding is ``info`` and explains the scheme and the remedy for them.
Not a rule module (leading underscore: rule discovery skips it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from graphlint_rules import _contract as C

from graphlint.analysis.quantization import TABLE, table
from graphlint.ir import Node
from graphlint.rule import Finding, Rewrite, RuleContext, Severity, quote

SOURCE = TABLE


def fact(fid: str) -> dict[str, Any]:
    for f in table()["fact"]:
        if f["id"] == fid:
            return f
    raise KeyError(f"no fact {fid!r} in {TABLE}")


def remedy(fid: str) -> str:
    """The remedy of a fact: a tool call from [tools] or the fact's own sentence."""
    r = fact(fid).get("remedy", "")
    return table()["tools"].get(r, r)


def names(nodes: Iterable[Node], n: int = 3) -> str:
    nodes = list(nodes)
    shown = ", ".join(quote(x.label) for x in nodes[:n])
    return shown + (f" and {len(nodes) - n} more" if len(nodes) > n else "")


def uncovered(ctx: RuleContext, nodes: Iterable[Node]) -> list[Node]:
    """The nodes the target's support table does not already reject (per-node GL1xxx errors)."""
    if ctx.target.data("support") is None:
        return list(nodes)
    sup = ctx.analysis("support")
    return [n for n in nodes if not sup.rejected(n)]


def scheme_finding(ctx: RuleContext, nodes: list[Node], fid: str, what: str, *,
                   severity: Severity | None = None, rewrite: Rewrite | None = None, **props: Any) -> Finding:
    """One finding for a scheme on the model: the first node as location, all of them in properties.

    ``severity`` None: error when the target rejects and some node is not already rejected by
    the support rules, else info (the per-node findings carry the error)."""
    f = fact(fid)
    if severity is None:
        rejects = f["verdict"] in ("rejects", "wrong-results")
        severity = Severity.ERROR if rejects and uncovered(ctx, nodes) else Severity.INFO
    covered = len(nodes) - len(uncovered(ctx, nodes))
    tail = f" ({covered} of them already reported per node by the support rules)" if covered else ""
    message = (f"{what}: {len(nodes)} node(s), e.g. {names(nodes)}{tail}. {ctx.target.title}: {f['claim']} "
               f"Fix: {remedy(fid)}")
    if severity >= Severity.ERROR:  # the severity contract (docs/severity.md): the fact that shows it
        props["basis"] = C.fact_basis("quantization.toml", fid)
    return ctx.finding(nodes[0] if nodes else None, message, severity=severity, rewrite=rewrite, fact=fid,
                       nodes=[n.label for n in nodes], source=f["source"], **props)
