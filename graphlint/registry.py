"""Discover rule packs through the ``graphlint.rules`` entry-point group.

The built-in pack (package ``graphlint_rules``, folder ``rules/``) registers itself in
pyproject.toml exactly as a third-party pack does:

    [project.entry-points."graphlint.rules"]
    mypack = "mypack:RULES"

An entry point may name an iterable of Rule classes, a module (its Rule subclasses are
collected), or a callable returning either.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

from graphlint.errors import UsageError
from graphlint.rule import Rule

GROUP = "graphlint.rules"


def _collect(obj: Any) -> list[type[Rule]]:
    if isinstance(obj, ModuleType):
        return [v for v in vars(obj).values() if inspect.isclass(v) and issubclass(v, Rule) and v is not Rule
                and v.__module__ == obj.__name__]
    if inspect.isclass(obj) and issubclass(obj, Rule):
        return [obj]
    if callable(obj):
        return _collect(obj())
    if isinstance(obj, Iterable):
        out: list[type[Rule]] = []
        for item in obj:
            out.extend(_collect(item))
        return out
    raise TypeError(f"not a rule, rule list or module: {obj!r}")


@functools.cache
def load_rules() -> tuple[type[Rule], ...]:
    """All rules of all installed packs, sorted by id; duplicate ids are an error."""
    by_id: dict[str, type[Rule]] = {}
    eps = list(entry_points(group=GROUP))
    if not any(ep.name == "builtin" for ep in eps):
        # Running from a source checkout that was not installed: use the pack directly.
        import graphlint_rules

        packs: list[tuple[str, Any]] = [("builtin", graphlint_rules.RULES)]
    else:
        packs = []
    for ep in eps:
        try:
            packs.append((ep.name, ep.load()))
        except Exception as e:
            raise UsageError(f"rule pack {ep.name!r} ({ep.value}) failed to load: {e}") from None
    for pack, obj in packs:
        for rule in _collect(obj):
            rule.pack = pack
            other = by_id.get(rule.id)
            if other is not None and other is not rule:
                raise UsageError(f"rule id {rule.id} is defined by both {other.pack!r} and {pack!r}")
            by_id[rule.id] = rule
    return tuple(sorted(by_id.values(), key=lambda r: r.id))


def find_rule(rule_id: str) -> type[Rule] | None:
    key = rule_id.strip().upper()
    for r in load_rules():
        if r.id.upper() == key or r.name == rule_id.strip().lower():
            return r
    return None


def select(rules: Iterable[type[Rule]], select: list[str] | None, ignore: list[str] | None) -> list[type[Rule]]:
    """Filter by id, id prefix (GL2, GL02), name or family (``drift``); unknown selectors are errors."""
    rules = list(rules)

    def matches(rule: type[Rule], sel: str) -> bool:
        s = sel.strip()
        return (rule.id.upper().startswith(s.upper()) or rule.name == s.lower()
                or rule.family_name() == s.lower() or s.upper() == "ALL")

    for sel in (select or []) + (ignore or []):
        if not any(matches(r, sel) for r in rules):
            raise UsageError(f"--select/--ignore {sel!r} matches no rule (see 'graphlint rules')")
    chosen = [r for r in rules if not select or any(matches(r, s) for s in select)]
    return [r for r in chosen if not any(matches(r, s) for s in (ignore or []))]
