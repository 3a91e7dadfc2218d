"""Analyses: facts about a model computed once per run and shared by every rule.

An analysis is a function ``(model, target) -> result`` registered under a name with
:func:`analysis`. Rules list the names they need in ``requires`` and read results with
``ctx.analysis(name)``; the first request computes, later ones hit the cache. Modules in
this package register themselves on import; a rule pack may register its own.

An analysis that does not depend on the target says so (``per_target=False``): it is then
computed once per model and shared by every ``--target`` of the run, instead of once per target.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphlint.ir import Model
    from graphlint.target import Target

AnalysisFn = Callable[["Model", "Target"], Any]
_REGISTRY: dict[str, AnalysisFn] = {}
_PER_MODEL: set[str] = set()  # analyses that ignore the target: one result per model
_loaded = False


def analysis(name: str, *, per_target: bool = True) -> Callable[[AnalysisFn], AnalysisFn]:
    def register(fn: AnalysisFn) -> AnalysisFn:
        _REGISTRY[name] = fn
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
