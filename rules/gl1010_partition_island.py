"""GL1010 partition-island: connected islands of nodes the target rejects, with a partition summary."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.partition import Partition
from graphlint.analysis.support import Support
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote_node

_LIST = 50  # node names listed in properties per island


class PartitionIsland(Rule):
    """A maximal connected group of nodes the target rejects: one engine fallback and device copies.

    ## What it checks
    Like `polygraphy inspect capability`: groups the main graph's nodes into maximal connected
    islands of supported and unsupported nodes (from the GL1001-GL1005 verdicts; nodes of If/Loop
    bodies count toward their owner). Each unsupported island is reported once, on its first
    node, with its nodes, op types and boundary tensors; the model's `stats.partition` (JSON, and
    the text report's header) gives the share of supported nodes and the island counts.

    ## Why it matters
    With a partitioning runner (ONNX Runtime with the TensorRT/OpenVINO execution provider,
    OpenVINO HETERO) each unsupported island runs elsewhere, and every boundary tensor is a copy
    between devices. Ten scattered islands cost far more than one; a fix that removes one op
    can merge two engines into one.

    ## Example
    A fused BERT for `--target trt`: one island per layer's `Attention`, `SkipLayerNormalization`
    and `BiasGelu`, splitting the graph into many TensorRT engines.

    ## Fix
    Fix the per-node findings of the island's nodes (GL1001-GL1005); start with islands that have
    the most boundary tensors.
    """

    id = "GL1010"
    name = "partition-island"
    severity = Severity.INFO
    requires = ("partition",)
    source = "graphlint.analysis.partition over the GL1001-GL1005 verdicts"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        sup: Support = ctx.analysis("support")
        if not sup.evaluated:
            return
        part: Partition = ctx.analysis("partition")  # its summary is in the model's stats
        summary = part.summary(ctx.target)
        total = len(part.unsupported)
        for k, island in enumerate(part.unsupported, 1):
            first = island.first
            n = len(island.nodes)
            ops = island.op_types
            ins = [v.name for v in island.inputs]
            outs = [v.name for v in island.outputs]
            what = "it alone" if n == 1 else f"{n} nodes ({', '.join(ops[:6])}{', ...' if len(ops) > 6 else ''})"
            yield ctx.finding(
                first,
                f"{quote_node(first)} starts unsupported island {k} of {total} on "
                f"{ctx.target.title}: {what}, {len(ins)} input and {len(outs)} output boundary tensor(s); "
                f"{summary['supported_pct']}% of nodes are supported.",
                island=k, islands=total, size=n, op_types=ops,
                nodes=[x.label for x in island.nodes[:_LIST]],
                inputs=ins[:_LIST], outputs=outs[:_LIST],
            )
