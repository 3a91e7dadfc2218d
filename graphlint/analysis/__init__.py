"""Analyses: facts about a model computed once per run and shared by every rule.

An analysis is a function ``(model, target) -> result`` registered under a name with
:func:`analysis`. Rules list the names they need in ``requires`` and read results with
``ctx.analysis(name)``; the first request computes, later ones hit the cache. Modules in
this package register themselves on import; a rule pack may register its own.

An analysis that does not depend on the target says so (``per_target=False``): it is then
computed once per model and shared by every ``--target`` of the run, instead of once per target.

Such an analysis may also register an ``early`` part, ``(model) -> Any``: work that needs no
inferred value types. While ONNX shape inference still runs in the loader's child process, the
linter computes the early parts (:func:`run_early`) instead of idling; the result waits in
``model.precomputed["early:<name>"]`` for the analysis proper, which reconciles it with the
inferred types. Without a pending child the early part never runs.
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
EarlyFn = Callable[["Model"], Any]
_REGISTRY: dict[str, AnalysisFn] = {}
_EARLY: dict[str, EarlyFn] = {}
_PER_MODEL: set[str] = set()  # analyses that ignore the target: one result per model
_loaded = False


def analysis(name: str, *, per_target: bool = True, early: EarlyFn | None = None,
             ) -> Callable[[AnalysisFn], AnalysisFn]:
    if early is not None and per_target:
        raise ValueError(f"analysis {name!r}: an early part needs per_target=False (it runs before any target)")

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
        shared = self.model.precomputed.setdefault(_SHARED, {}) if name in _PER_MODEL else None
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


_SHARED = "analyses"  # model.precomputed key: results of per-model analyses, shared by targets


def computed(model: Model, name: str) -> Any:
    """A per-model analysis' result if some target of the run has computed it, else None."""
    return model.precomputed.get(_SHARED, {}).get(name)


def run_early(model: Model, names: Iterable[str]) -> dict[str, float]:
    """Compute the early parts of the named analyses (those that have one); returns their times.

    None starts once inference has finished: the analysis proper then does the whole work,
    which costs no more than both parts (the early part reads the graph once more)."""
    _load_builtin()
    timings: dict[str, float] = {}
    for name in names:
        fn = _EARLY.get(name)
        done = early_key(name) in model.precomputed or computed(model, name) is not None
        if fn is None or done or model.types_arrived():
            continue
        t0 = time.perf_counter()
        # On a crash the analysis proper computes everything itself (and its crash is a finding).
        with contextlib.suppress(Exception):
            model.precomputed[early_key(name)] = fn(model)
        timings[f"early:{name}"] = time.perf_counter() - t0
    return timings
