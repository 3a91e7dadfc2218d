"""GL3008 pad-to-multiple: dims that tensor cores want padded to a multiple (per target)."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.shapes import ShapeFacts, describe_dim
from graphlint.analysis.symbolic import Poly
from graphlint.ir import Node
from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote, quote_node


class PadToMultiple(Rule):
    """A dynamic sequence dim or a hidden/channel size is not padded to the target's multiple.

    ## What it checks
    On targets whose profile sets `pad_multiple` (TensorRT: 8, OpenVINO GPU/NPU: 16):
    dynamic non-batch input dims (sequence lengths) that reach a MatMul/Gemm (attention score
    and projection products), once per dim; and constant MatMul/Gemm/Conv weights whose
    reduction (K) or output (N, out-channels) size is not a multiple. First-layer Conv input
    channels (1, 3, 4) are exempt.

    ## Why it matters
    Tensor-core GEMM kernels run on tiles of 8 (FP16) or 16 elements; a hidden size of 37 or a
    sequence of 77 falls back to slower kernels or pads internally on every call. With dynamic
    sequences, bucketing lengths to a multiple also lets one engine profile serve all requests.

    ## Example
    `seq` of `input_ids` feeding attention with `--target trt`; a Linear(768, 1001) head.

    ## Fix
    Pad sequences in the tokenizer (`pad_to_multiple_of=8`) or bucket them, and pad weight
    dims to the multiple (zero rows/columns, sliced off after) when the layer is hot.
    """

    id = "GL3008"
    name = "pad-to-multiple"
    severity = Severity.INFO
    requires = ("shapes", "nodes_by_type")
    fixable = True
    source = "rules/data/targets/*.toml pad_multiple; NVIDIA tensor-core alignment guidance (multiples of 8)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        m = int(ctx.target.option("pad_multiple") or 0)
        if m <= 1:
            return
        facts: ShapeFacts = ctx.analysis("shapes")
        index = ctx.analysis("nodes_by_type")
        seen: set[str] = set()
        done: set[Poly] = set()
        verdicts: dict[tuple, dict[str, int]] = {}  # weight dims not a multiple, per (op, shape, transB)
        # the symbols a sequence finding can name (input dims past the batch axis): once all are
        # reported, the remaining MatMuls need no shape lookup
        left = {sym for sym, where in facts.origins.items() if any(a >= 1 for _, a in where)}
        for node in (*index.get("MatMul", ()), *index.get("Gemm", ())):
            if left:
                shape = facts.shape(node.input(0))
                # most MatMuls see only dims already looked at (or static ones): skip them cheaply
                if shape and len(shape) >= 2 and any(d is not None and not d.is_const and d not in done
                                                     for d in shape[-2:]):
                    yield from self._sequence(ctx, facts, node, shape, m, seen, done)
                    left -= seen
            if (found := self._weights(ctx, node, m, verdicts)) is not None:
                yield found
        for node in index.get("Conv", ()):
            if (found := self._weights(ctx, node, m, verdicts)) is not None:
                yield found

    def _sequence(self, ctx: RuleContext, facts: ShapeFacts, node: Node, shape: tuple, m: int, seen: set[str],
                  done: set[Poly]) -> Iterator[Finding]:
        for d in shape[-2:]:
            if d is None or d in done or d.is_const:
                continue
            done.add(d)  # after this pass each of its symbols is reported or has no origin to report
            for sym in sorted(d.symbols):
                if sym in seen:  # one finding per dynamic dim, at its first MatMul/Gemm
                    continue
                where = [(i, a) for i, a in facts.origins.get(sym, ()) if a >= 1]
                if not where:
                    continue
                seen.add(sym)
                inp, axis = where[0]
                rw = Rewrite("pad-to-multiple", {"input": inp, "axis": axis, "multiple": m}, safe=False,
                             description=f"Pad '{inp}' axis {axis} up to a multiple of {m} (or bucket lengths).")
                yield ctx.finding(
                    node,
                    f"{quote_node(node)} multiplies over the dynamic dim "
                    f"{describe_dim(facts, Poly.sym(sym))}; on {ctx.target.title} pad it to a multiple of {m} "
                    f"(tokenizer pad_to_multiple_of={m}) or bucket lengths.",
                    value=node.input(0), rewrite=rw, symbol=sym, multiple=m,
                )

    def _weights(self, ctx: RuleContext, node: Node, m: int, verdicts: dict[tuple, dict[str, int]]) -> Finding | None:
        ins = node.inputs
        w = ins[1] if len(ins) > 1 else None
        if w is None or w.const is None:
            return None
        shp = w.const.shape
        key = (node.op_type, tuple(shp), node.op_type == "Gemm" and bool(node.attr("transB", 0)))
        bad = verdicts.get(key)
        if bad is None:
            bad = verdicts[key] = _not_multiples(*key, m)
        if bad:
            bad = dict(bad)  # each finding its own
            what = ", ".join(f"{k} {v}" for k, v in bad.items())
            return ctx.finding(
                node,
                f"{quote_node(node)} has weight {quote(w.name)} with {what}, not a multiple "
                f"of {m}; {ctx.target.title} tensor-core kernels want multiples of {m}.",
                value=w, multiple=m, dims=bad,
            )
        return None


def _not_multiples(op_type: str, shp: tuple, trans: bool, m: int) -> dict[str, int]:
    """A weight's dims that tensor cores want as multiples of ``m`` and that are not (by name)."""
    if op_type == "Conv":
        if len(shp) < 2:
            return {}
        dims = {"output channels": shp[0]}
        if shp[1] not in (1, 3, 4):
            dims["input channels"] = shp[1]
    elif len(shp) == 2:
        k, n = (shp[1], shp[0]) if trans else shp
        dims = {"K (reduction)": k, "N (output)": n}
    else:
        return {}
    return {k: v for k, v in dims.items() if v % m and v > 1}
