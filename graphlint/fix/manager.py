"""The pass manager: order passes by their dependencies, apply, verify, bisect and drop what breaks.

Passes that keep results are applied in batches and verified together (one engine run per
batch); when a batch fails, the manager bisects over the batch's prefixes to the first pass that
breaks equivalence, refuses that pass, keeps the ones before it and continues with the rest.
Passes that change results on purpose are applied one at a time, checked structurally, and
their output difference is recorded rather than enforced; later passes compare against them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphlint.fix.base import FixContext, InputMap, Pass, PassResult
from graphlint.fix.provenance import carry_metadata
from graphlint.fix.verify import Comparison, Verifier, apply_input_map
from graphlint.rewrites import CATALOGUE

APPLIED, UNCHANGED, REFUSED, CRASHED = "applied", "unchanged", "refused", "crashed"


@dataclass
class Step:
    """What one pass did: status, its change lines, what it skipped, and the verification numbers."""

    name: str
    status: str = UNCHANGED
    changes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    reason: str = ""  # why it was refused / how it crashed
    max_abs_diff: dict[str, float] = field(default_factory=dict)
    intended_change: bool = False  # a results-changing pass: the diff is what it meant to do

    def to_dict(self) -> dict[str, Any]:
        return {"pass": self.name, "status": self.status, "changes": self.changes, "skipped": self.skipped,
                "reason": self.reason, "max_abs_diff": self.max_abs_diff, "intended_change": self.intended_change}


@dataclass
class FixOutcome:
    model: Any
    steps: list[Step]
    engine: str | None
    notes: list[str]
    max_abs_diff: dict[str, float]  # final model vs. the original, per output (results-keeping passes only)

    @property
    def changed(self) -> bool:
        return any(s.status == APPLIED for s in self.steps)

    @property
    def refused(self) -> list[Step]:
        return [s for s in self.steps if s.status in (REFUSED, CRASHED)]


def order(names: list[str], passes: dict[str, Pass]) -> list[str]:
    """Topological order by each pass's ``after`` (only among passes present), ties in catalogue order."""
    rank: dict[str, float] = {n: float(i) for i, n in enumerate(CATALOGUE)}
    for n in names:  # a pass outside the catalogue sorts right after the passes it runs after
        if n not in rank:
            rank[n] = max((rank.get(d, -1.0) for d in passes[n].after), default=len(CATALOGUE)) + 0.5
    todo = sorted(set(names), key=lambda n: (rank[n], n))
    done: list[str] = []
    while todo:
        ready = [n for n in todo if not any(d in todo and d != n for d in passes[n].after)]
        if not ready:  # a dependency cycle among third-party passes: fall back to catalogue order
            ready = todo[:1]
        done.append(ready[0])
        todo.remove(ready[0])
    return done


class PassManager:
    def __init__(self, passes: dict[str, Pass], verifier: Verifier,
                 progress: Callable[[str], None] | None = None) -> None:
        self.passes = passes
        self.verifier = verifier
        self.progress = progress or (lambda _msg: None)

    def run(self, model: Any, requests: dict[str, list[dict[str, Any]]], ctx: FixContext) -> FixOutcome:
        names = order([n for n in requests if n in self.passes], self.passes)
        steps = {n: Step(n) for n in names}
        self.progress("running the original")
        ref0 = self.verifier.prepare(model)
        self.ref = ref0
        self.feeds = self.verifier.feeds
        self.current = model
        self._last_diff: dict[str, float] = {}
        batch: list[str] = []
        for n in names:
            if self.passes[n].preserves_results:
                batch.append(n)
                continue
            self._flush(batch, requests, ctx, steps)
            batch = []
            self._results_changing(n, requests[n], ctx, steps[n])
        self._flush(batch, requests, ctx, steps)
        final_diff: dict[str, float] = {}
        if ref0 is not None and not any(s.intended_change and s.status == APPLIED for s in steps.values()):
            final_diff = dict(self._last_diff)
        return FixOutcome(self.current, [steps[n] for n in names], self.verifier.engine, self.verifier.notes,
                          final_diff)

    # -- helpers ------------------------------------------------------------------------------
    def _apply(self, name: str, model: Any, reqs: list[dict[str, Any]], ctx: FixContext,
               step: Step) -> PassResult | None:
        self.progress(f"pass {name}")
        try:
            res = self.passes[name].run(model, reqs, ctx)
        except Exception as e:  # a pass bug must not take the fix down: drop the pass, say which
            step.status, step.reason = CRASHED, f"{type(e).__name__}: {e}"
            return None
        if not isinstance(res, PassResult):
            step.status, step.reason = CRASHED, f"returned {type(res).__name__}, not a PassResult"
            return None
        step.skipped = list(res.skipped)
        if res.modified:  # nodes the pass made keep where in the code their originals came from
            carry_metadata(model, res.model)
        return res

    def _results_changing(self, name: str, reqs: list[dict[str, Any]], ctx: FixContext, step: Step) -> None:
        res = self._apply(name, self.current, reqs, ctx, step)
        if res is None or not res.modified:
            return
        try:
            feeds = apply_input_map(self.feeds, res.input_map)
        except ValueError as e:
            step.status, step.reason = REFUSED, f"the new input contract does not fit the feeds: {e}"
            return
        comp, out = self.verifier.check(res.model, feeds, self.ref, numeric=not res.changes_results)
        if not comp.ok:
            step.status, step.reason = REFUSED, comp.problem
            return
        step.status, step.changes, step.intended_change = APPLIED, res.changes, res.changes_results
        step.max_abs_diff = comp.max_abs_diff
        self.current, self.feeds = res.model, feeds
        if out is not None:
            self.ref = out  # later passes must keep *these* results

    def _flush(self, batch: list[str], requests: dict[str, list[dict[str, Any]]], ctx: FixContext,
               steps: dict[str, Step]) -> None:
        batch = list(batch)
        while batch:
            models, feeds_at, results = [self.current], [self.feeds], []
            live: list[str] = []
            for n in batch:
                res = self._apply(n, models[-1], requests[n], ctx, steps[n])
                if res is None:
                    continue
                if not res.modified:
                    steps[n].status = UNCHANGED
                    continue
                live.append(n)
                results.append(res)
                models.append(res.model)
                feeds_at.append(_map(feeds_at[-1], res.input_map))
            if not live:
                return
            self.progress(f"verifying {len(live)} pass(es)")
            comp = self._verify(models[-1], feeds_at[-1])
            if comp.ok:
                self._accept(live, results, models, feeds_at, steps, len(live), comp)
                return
            # Bisect: the smallest prefix length k whose model fails; pass live[k-1] broke it.
            lo, hi, bad = 1, len(live), comp
            while lo < hi:
                mid = (lo + hi) // 2
                c = self._verify(models[mid], feeds_at[mid])
                if c.ok:
                    lo = mid + 1
                else:
                    hi, bad = mid, c
            k = lo
            culprit = live[k - 1]
            steps[culprit].status, steps[culprit].reason = REFUSED, bad.problem
            if k > 1:
                good = self._verify(models[k - 1], feeds_at[k - 1])
                self._accept(live, results, models, feeds_at, steps, k - 1, good)
            batch = live[k:]  # re-applied on top of the last verified model

    def _verify(self, model: Any, feeds: dict[str, np.ndarray]) -> Comparison:
        comp, _ = self.verifier.check(model, feeds, self.ref)
        return comp

    def _accept(self, live, results, models, feeds_at, steps, k: int, comp: Comparison) -> None:
        for i in range(k):
            st = steps[live[i]]
            st.status, st.changes = APPLIED, results[i].changes
            st.max_abs_diff = comp.max_abs_diff
        self.current, self.feeds = models[k], feeds_at[k]
        self._last_diff = comp.max_abs_diff


def _map(feeds: dict[str, np.ndarray], imap: InputMap) -> dict[str, np.ndarray]:
    try:
        return apply_input_map(feeds, imap)
    except ValueError:
        return feeds  # the verifier will then report the contract mismatch
