"""GL2002 op-outside-its-opsets: an op used at an opset where it is deprecated or does not yet exist."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _contract as C
from graphlint_rules import _drift as D

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote_node
from graphlint.target import Target

ID = "GL2002"


class OpOutsideItsOpsets(Rule):
    """A default-domain op is used at an opset where it is deprecated, removed or not yet defined.

    ## What it checks
    Each node whose op has an availability fact in `rules/data/drift.toml` (`rule = "GL2002"`):
    `Upsample` at opset >= 10 (deprecated for Resize), `Scatter` at >= 11 (deprecated for
    ScatterElements), and ops used before they entered the default domain:
    `LayerNormalization` < 17, `GroupNormalization` < 18, `Gelu` < 20. The fact's `verdict`
    table decides the severity: an **error** on a target that rejects the node (one finding per
    node), otherwise a **warning** per op and model that names the engines that run it and the
    tools that reject it. (An opset outside the target's range as a whole is GL0002's finding;
    this rule is about single ops.)

    ## Why it matters
    Engines disagree: onnxruntime refuses an opset-10 `Upsample` ("Op registered for Upsample
    is deprecated") while `onnx.reference`, OpenVINO and TensorRT run it; a `LayerNormalization`
    at opset 16 runs in onnxruntime (its own pre-standard kernel), OpenVINO and `onnx.reference`,
    yet `onnx.checker` rejects it, so the model works on one machine and fails in another
    pipeline.

    ## Example
    A hand-built graph that calls `Upsample(X, scales)` with `opset_import` 13 (an error for
    `--target ort`), or the `LayerNormalization` that `onnxruntime.transformers.optimizer` writes
    into an opset-14 model (a warning: ONNX Runtime, OpenVINO and TensorRT run it).

    ## Fix
    `Upsample` -> the `upsample-to-resize` rewrite (Resize with `asymmetric` coordinates and
    `nearest_mode=floor`, Upsample's meaning); ops used too early -> raise the model opset
    (`opset-upgrade` to the version in the suggestion) or re-export at that opset.
    """

    id = ID
    name = "op-outside-its-opsets"
    severity = Severity.ERROR
    requires = ("nodes_by_type",)
    fixable = True
    source = f"{D.SOURCE} (kind = availability); ONNX Changelog"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        index = ctx.analysis("nodes_by_type")
        target = ctx.target
        for f in D.facts(ID):
            nodes = [n for op in f["op"] for n in index.get(op, ()) if D.applies(f, n)]
            if not nodes:
                continue
            severity, extra = D.judged(f, target, self.severity)
            if severity >= Severity.ERROR:  # each node is a rejection: one finding each
                for node in nodes:
                    yield ctx.finding(node, f"{_what(f, node)}; {target.title} rejects it"
                                            f"{_note(f, target)}.", rewrite=D.fact_rewrite(f, node),
                                      **D.props(f, opset=node.opset), **extra)
                continue
            first = nodes[0]
            more = f" ({len(nodes) - 1} more {first.op_type} node(s) like it)" if len(nodes) > 1 else ""
            if extra.get("unknown"):
                tail = D.unknown_note(target)
            else:
                tail = " Spec-only: " + C.spec_only_note(f.get("verdict", {}), target, ["onnx.checker"])
            yield ctx.finding(
                first, f"{_what(f, first)}{more}.{tail}", severity=severity,
                rewrite=D.fact_rewrite(f, first if len(nodes) == 1 else None),  # no node: every such node
                **D.props(f, opset=first.opset, count=len(nodes), nodes=[n.label for n in nodes[:20]],
                          engines=f.get("engines")), **extra,
            )


def _what(f: dict, node: Node) -> str:
    lo = f["opsets"][0]
    when = (f"deprecated since opset {f['boundary']}" if lo >= f["boundary"]
            else f"defined in the default domain only from opset {f['boundary']}")
    return f"{quote_node(node)} is used at opset {node.opset} but is {when}"


def _note(f: dict, target: Target) -> str:
    note = f.get("engines", {}).get(target.name)
    return f" ({note})" if note else ""
