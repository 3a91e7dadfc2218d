"""Analyses: facts about a model, computed once per run and shared by every rule.

An analysis is a function registered under a name with :func:`analysis`. Rules list the
names they need in ``requires`` and read results with ``ctx.analysis(name)``. One
:class:`Analyses` manager per model caches every result under ``(name, target)``; an
analysis that ignores the target (``per_target=False``) is keyed ``(name, None)`` and
shared by every ``--target`` of the run. An analysis reads the model, which it must not
change, and the results of the analyses it declares in ``requires``; it returns facts.

The function takes an :class:`AnalysisContext` (``fn(ctx)``): ``ctx.model``, ``ctx.target``
(None for a per-model analysis), ``ctx.analysis(name)`` for a declared dependency,
``ctx.background(key)`` for a result the loader computes in a child process, and
``ctx.record(key, value)`` for a statistic shown in reports (``stats``). A function of the
older form ``fn(model, target)`` is called that way.

Modules in this package register themselves on import; a rule pack may register its own.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphlint.ir import Model
    from graphlint.target import Target


@dataclass(frozen=True)
class Spec:
    """A registered analysis."""

    name: str
    fn: Callable[..., Any]
    per_target: bool
    requires: tuple[str, ...]
    takes_context: bool


_REGISTRY: dict[str, Spec] = {}
_loaded = False


def analysis(name: str, *, per_target: bool = True, requires: Iterable[str] = (),
             early: Any = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as the analysis ``name``, depending on the analyses in ``requires``.

    ``early`` is accepted for rule packs written against graphlint 0.1 and ignored: every
    analysis now runs on the complete, typed model.
    """
    del early

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
        _REGISTRY[name] = Spec(name, fn, per_target, tuple(requires), len(params) == 1)
        return fn

    return register


def early_key(name: str) -> str:
    """Kept for rule packs written against graphlint 0.1 (``model.precomputed`` is always empty)."""
    return f"early:{name}"


def names() -> list[str]:
    """Every registered analysis (the built-in ones and those rule packs registered), sorted."""
    _load_builtin()
    return sorted(_REGISTRY)


def registered(name: str) -> Spec:
    _load_builtin()
    spec = _REGISTRY.get(name)
    if spec is None:
        raise KeyError(f"no analysis named {name!r} (known: {', '.join(sorted(_REGISTRY))})")
    return spec


def required(names: Iterable[str]) -> set[str]:
    """The analyses ``names`` need, themselves included (what they declare in ``requires``,
    transitively). A name nobody registered is left for the rule that asks to fail on (GL9002)."""
    _load_builtin()
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            spec = _REGISTRY.get(name)
            todo.extend(spec.requires if spec is not None else ())
    return seen


def _load_builtin() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for mod in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{mod.name}")


class AnalysisContext:
    """What one analysis sees while it computes."""

    def __init__(self, manager: Analyses, spec: Spec, target: Target | None) -> None:
        self._manager, self._spec = manager, spec
        self.model = manager.model
        self.target = target

    def analysis(self, name: str) -> Any:
        """The result of an analysis this one declared in ``requires``."""
        if name not in self._spec.requires:
            raise KeyError(f"analysis {self._spec.name!r} reads {name!r} without declaring it in requires")
        return self._manager.get(name, self.target)

    def background(self, key: str, default: Any = None) -> Any:
        """A result the loader computes off the critical path (waited for), else ``default``."""
        return self._manager.background(key, default)

    def record(self, key: str, value: Any) -> None:
        """A statistic of the model for reports (``stats`` in the JSON report, --stats)."""
        self._manager.stats[key] = value


class Analyses:
    """The analysis results of one model, keyed by (name, target); per-model ones by (name, None).

    ``stats`` holds what the loader counted and what analyses recorded, in the order they did;
    ``background`` the results the loader still computes in a child (key -> an object with
    ``result()``), which an analysis asks for with ``ctx.background(key)``.
    """

    def __init__(self, model: Model, background: Mapping[str, Any] | None = None) -> None:
        self.model = model
        self._background = dict(background or {})
        self._results: dict[tuple[str, int | None], Any] = {}
        self._targets: dict[int, Target] = {}  # keeps each keyed target alive (keys use its id)
        self._running: list[str] = []
        self.stats: dict[str, Any] = dict(model.stats)
        self.timings: dict[tuple[str, int | None], float] = {}

    def get(self, name: str, target: Target | None) -> Any:
        spec = registered(name)
        key = (name, id(target) if spec.per_target and target is not None else None)
        if key in self._results:
            return self._results[key]
        if name in self._running:
            raise RuntimeError(f"analyses depend on each other in a cycle: {' -> '.join([*self._running, name])}")
        self._running.append(name)
        try:
            for dep in spec.requires:
                self.get(dep, target)
            scope = target if spec.per_target else None
            t0 = time.perf_counter()
            if spec.takes_context:
                result = spec.fn(AnalysisContext(self, spec, scope))
            else:
                result = spec.fn(self.model, scope)
            self.timings[key] = time.perf_counter() - t0
        finally:
            self._running.pop()
        if target is not None:
            self._targets[id(target)] = target
        self._results[key] = result
        return result

    def computed(self, target: Target | None) -> dict[str, float]:
        """Time per analysis computed for ``target`` (per-model ones included), by name."""
        return {name: t for (name, tid), t in self.timings.items() if tid is None or tid == id(target)}

    def background(self, key: str, default: Any = None) -> Any:
        later = self._background.pop(key, None)
        if later is None:
            return default
        result = later.result()
        self._background[key] = _Done(result)
        return result

    def close(self) -> None:
        """Stop background work nobody asked for (its child must not outlive the model)."""
        for later in self._background.values():
            later.cancel()
        self._background.clear()


class _Done:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value

    def cancel(self) -> None:
        pass
