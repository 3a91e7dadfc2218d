"""Analyses: facts about a model computed once per run and shared by every rule.

An analysis is a function ``(model, target) -> result`` registered under a name with
:func:`analysis`. Rules list the names they need in ``requires`` and read results with
``ctx.analysis(name)``; the first request computes, later ones hit the cache. Modules in
this package register themselves on import; a rule pack may register its own.

An analysis that does not depend on the target says so (``per_target=False``): it is then
computed once per model and shared by every ``--target`` of the run, instead of once per target.

An analysis may also register an ``early`` part: work that needs no inferred value types,
``(model) -> Any`` for a per-model analysis and ``(model, target) -> Any`` for a per-target one.
While ONNX shape inference still runs in the loader's child process, the linter computes the
early parts (:func:`run_early`) instead of idling; the result waits in ``model.precomputed`` for
the analysis proper (:func:`early_result`), which completes it with the inferred types. Without
a pending child the early part never runs.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphlint.ir import Model
    from graphlint.target import Target

AnalysisFn = Callable[["Model", "Target"], Any]
EarlyFn = Callable[..., Any]  # (model) per model, (model, target) per target
_REGISTRY: dict[str, AnalysisFn] = {}
_EARLY: dict[str, EarlyFn] = {}
_PER_MODEL: set[str] = set()  # analyses that ignore the target: one result per model
_loaded = False


def analysis(name: str, *, per_target: bool = True, early: EarlyFn | None = None,
             ) -> Callable[[AnalysisFn], AnalysisFn]:
    def register(fn: AnalysisFn) -> AnalysisFn:
        _REGISTRY[name] = fn
        if early is not None:
            _EARLY[name] = early
        else:
            _EARLY.pop(name, None)
        if per_target:
            _PER_MODEL.discard(name)
        else:
            _PER_MODEL.add(name)
        return fn

    return register


def _load_builtin() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for mod in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{mod.name}")


class Analyses:
    """Per-model cache of analysis results, with the time each took (for --stats)."""

    def __init__(self, model: Model, target: Target) -> None:
        _load_builtin()
        self.model = model
        self.target = target
        self._cache: dict[str, Any] = {}
        self.timings: dict[str, float] = {}

    def get(self, name: str) -> Any:
        if name in self._cache:
            return self._cache[name]
        fn = _REGISTRY.get(name)
        if fn is None:
            raise KeyError(f"no analysis named {name!r} (known: {', '.join(sorted(_REGISTRY))})")
        shared = self.model.precomputed.setdefault("analyses", {}) if name in _PER_MODEL else None
        if shared is not None and name in shared:  # computed for an earlier target of this run
            result = self._cache[name] = shared[name]
            return result
        t0 = time.perf_counter()
        result = self._cache[name] = fn(self.model, self.target)
        self.timings[name] = time.perf_counter() - t0
        if shared is not None:
            shared[name] = result
        return result


def early_key(name: str) -> str:
    return f"early:{name}"


def early_result(model: Model, name: str, target: Target | None = None) -> Any:
    """The early part's result of a per-target analysis for this very target object (the linter
    passes the same objects to run_early and to the rules), taken once; None if it did not run."""
    pending = model.precomputed.get(early_key(name))
    if not pending:
        return None
    for i, (for_target, result) in enumerate(pending):
        if for_target is target:
            del pending[i]
            return result
    return None


def run_early(model: Model, names: Iterable[str], targets: Iterable[Target] = ()) -> dict[str, float]:
    """Compute the early parts of the named analyses (those that have one), per-target ones for
    each of ``targets``, in the order named; returns their times.

    None starts once inference has finished: an early part costs a little more than the work
    it saves the analysis proper (it reads the graph once more), a price worth paying only
    while that core would otherwise wait."""
    _load_builtin()
    targets = list(targets)
    timings: dict[str, float] = {}
    for name in names:
        fn = _EARLY.get(name)
        if fn is None or model.types_arrived():
            continue
        per_model = name in _PER_MODEL
        if per_model and early_key(name) in model.precomputed:
            continue
        t0 = time.perf_counter()
        # On a crash the analysis proper computes everything itself (and its crash is a finding).
        with contextlib.suppress(Exception):
            if per_model:
                model.precomputed[early_key(name)] = fn(model)
            else:
                done = model.precomputed.setdefault(early_key(name), [])
                for target in targets:
                    done.append((target, fn(model, target)))
        timings[f"early:{name}"] = time.perf_counter() - t0
    return timings
