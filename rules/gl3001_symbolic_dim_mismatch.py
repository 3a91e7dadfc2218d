"""GL3001 symbolic-dim-mismatch: dims of different inputs meet where they must be equal."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.shapes import ShapeFacts, describe_dim, input_symbols
from graphlint.analysis.symbolic import parse_dim
from graphlint.rewrites import spec
from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote_node


class SymbolicDimMismatch(Rule):
    """Two differently named dynamic dims meet at an op that needs them equal.

    ## What it checks
    The symbolic shape analysis follows every input dim through the graph. Where an op
    requires two dims to agree (broadcasting Add/Mul/Where, MatMul's contraction and batch
    dims, attention score products, Concat on any axis other than the concat axis) and the two
    dims are different symbols from the graph inputs, nothing in the graph proves them
    equal. Concatenating image patches and text tokens on the sequence axis is fine; the same
    Concat with differently named batch axes is not.

    ## Why it matters
    The model loads and runs on the shapes it was exported with, then fails at run time
    (ONNX Runtime: "Attempting to broadcast an axis by a dimension other than 1"; TensorRT:
    an optimization-profile or runtime dimension error) as soon as the two inputs differ,
    e.g. an attention_mask padded to another length than input_ids, or a different number of
    images than texts. TensorRT also cannot build one profile where the dims vary apart.

    ## Example
    `dynamic_axes={"input_ids": {1: "seq"}, "attention_mask": {1: "mask_seq"}}`: the mask is
    added to the attention scores, so `seq` and `mask_seq` must always be equal.

    ## Fix
    Give the dims one name at export (`dynamic_axes` with the same symbol, or one
    `torch.export.Dim` for both), or pad/align one input to the other's length explicitly
    before they meet.

    A dim whose declared name is an expression of another input's dim (optimum 1.x names the
    decoder mask's length `past_sequence_length + 1` while feeding past + sequence) is read as
    that arithmetic, which ONNX does not give dim names: such a finding is info, with the name as
    its unknown premise.
    """

    id = "GL3001"
    name = "symbolic-dim-mismatch"
    severity = Severity.WARNING
    requires = ("shapes",)
    fixable = True
    source = "symbolic shape analysis (graphlint/analysis/shapes.py); ONNX broadcasting rules (onnx/docs/Broadcasting.md)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        facts: ShapeFacts = ctx.analysis("shapes")
        seen: set[frozenset[str]] = set()
        counts: dict[frozenset[str], int] = {}
        firsts = []
        for e in facts.events:
            if e.kind != "mismatch" or not (input_symbols(facts, e.a) and input_symbols(facts, e.b)):
                continue
            key = frozenset({str(e.a), str(e.b)})
            counts[key] = counts.get(key, 0) + 1
            if key not in seen:
                seen.add(key)
                firsts.append((key, e))
        for key, e in firsts:
            n = e.node
            more = counts[key] - 1
            ia = facts.inputs_of(e.a.symbols)
            ib = facts.inputs_of(e.b.symbols)
            symbol = next((str(d) for d in (e.a, e.b) if len(d.symbols) == 1 and str(d) in d.symbols), str(e.a))
            rw = Rewrite(
                "share-symbol",
                {"inputs": sorted({f"{i}:{a}" for i, a in (*ia, *ib)}), "symbol": symbol},
                safe=spec("share-symbol").safe,
                description=(f"Name both dims '{symbol}' at export, or pad/align one input to the other "
                             "before they meet."),
            )
            where = "" if e.axis is None else f" (axis {e.axis})"
            tail = f"; {more} more node(s) combine the same pair" if more else ""
            labels = _expression_dims(ctx, (*ia, *ib))
            severity, extra = None, {}
            if labels:
                # ONNX dim_params are names; arithmetic in one is read by graphlint (torch.export writes
                # real ones), but a dynamic_axes label such as optimum's "past_sequence_length + 1" for
                # a mask fed past + sequence long is no constraint: every engine runs the fed shapes
                severity, extra = Severity.INFO, {"unknown": ["declared dim expression"]}
                tail += (f". The premise is the declared name {labels[0]}, an expression: ONNX gives dim names "
                         "no arithmetic and engines go by the fed shapes, so whether that name is meant is unknown")
            yield ctx.finding(
                n,
                f"{quote_node(n)} needs {describe_dim(facts, e.a)} and "
                f"{describe_dim(facts, e.b)} to be equal{where}, but nothing in the graph makes them equal, "
                f"so it fails at run time whenever they differ{tail}.",
                value=e.va,
                rewrite=rw,
                symbols=sorted(key),
                inputs=sorted({i for i, _ in (*ia, *ib)}),
                other_nodes=more,
                severity=severity,
                **extra,
            )


def _expression_dims(ctx: RuleContext, where: tuple[tuple[str, int], ...]) -> list[str]:
    """The declared input dims among ``where`` whose names are expressions ('past_sequence_length + 1')."""
    inputs = {v.name: v for v in ctx.model.graph.inputs}
    out = []
    for name, axis in sorted(set(where)):
        v = inputs.get(name)
        d = v.shape[axis] if v is not None and v.shape and axis < len(v.shape) else None
        if isinstance(d, str) and parse_dim(d).symbols and parse_dim(d).symbols != {d}:
            out.append(f"'{d}' (input '{name}' axis {axis})")
    return out
