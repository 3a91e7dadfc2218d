"""Discover rule packs through the ``graphlint.rules`` entry-point group, and select rules.

The built-in pack (package ``graphlint_rules``, folder ``rules/``) registers itself in
pyproject.toml exactly as a third-party pack does:

    [project.entry-points."graphlint.rules"]
    mypack = "mypack:RULES"

An entry point may name an iterable of Rule classes, a module or package (its Rule subclasses
are collected; a package's from every module in it whose name does not start with ``_``), or a
callable returning either.

One selector language serves ``--select``/``--ignore``, the configuration and suppressions: a
rule id or id prefix (``GL0003``, ``GL2``), a rule name (``unknown-domain``), a family
(``drift``), or ``ALL``/``*`` for every rule (:func:`matches`).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
from collections.abc import Iterable
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

from graphlint.errors import UsageError
from graphlint.rule import FAMILIES, Rule

GROUP = "graphlint.rules"


def matches(rule_id: str, rule_name: str, family: str, selector: str) -> bool:
    """Whether ``selector`` names the rule (id, id prefix, name, family, ALL or ``*``)."""
    s = selector.strip()
    if s == "*" or s.upper() == "ALL":
        return True
    return rule_id.upper().startswith(s.upper()) or rule_name == s.lower() or family == s.lower()


def rule_matches(rule: type[Rule], selector: str) -> bool:
    return matches(rule.id, rule.name, rule.family_name(), selector)


def family_of(rule_id: str) -> str:
    """The family of an installed rule's id (else by the id's prefix, as for built-in ids)."""
    rule = find_rule(rule_id)
    return rule.family_name() if rule is not None else FAMILIES.get(rule_id[:3], "other")


def package_rules(package: str) -> list[type[Rule]]:
    """The Rule subclasses defined in the modules of ``package`` (names not starting with ``_``), by module name."""
    pkg = importlib.import_module(package)
    found: list[type[Rule]] = []
    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if not mod.name.startswith("_") and not mod.ispkg:
            found.extend(_module_rules(importlib.import_module(f"{package}.{mod.name}")))
    return found


def _module_rules(module: ModuleType) -> list[type[Rule]]:
    return [v for v in vars(module).values() if inspect.isclass(v) and issubclass(v, Rule) and v is not Rule
            and v.__module__ == module.__name__ and getattr(v, "id", None)]


def _collect(obj: Any) -> list[type[Rule]]:
    if isinstance(obj, ModuleType):
        return package_rules(obj.__name__) if hasattr(obj, "__path__") else _module_rules(obj)
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
    packs: list[tuple[str, Any]] = []
    if not any(ep.name == "builtin" for ep in eps):
        # Running from a source checkout that was not installed: use the pack directly.
        packs.append(("builtin", importlib.import_module("graphlint_rules")))
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
    """The installed rule with this id (any case) or name."""
    key = rule_id.strip().upper()
    for r in load_rules():
        if r.id.upper() == key or r.name == rule_id.strip().lower():
            return r
    return None


def select(rules: Iterable[type[Rule]], select: list[str] | None, ignore: list[str] | None) -> list[type[Rule]]:
    """Filter by selectors (see :func:`matches`); a selector that names no rule is an error."""
    rules = list(rules)
    for sel in (select or []) + (ignore or []):
        if not any(rule_matches(r, sel) for r in rules):
            raise UsageError(f"--select/--ignore {sel!r} matches no rule (see 'graphlint rules')")
    chosen = [r for r in rules if not select or any(rule_matches(r, s) for s in select)]
    return [r for r in chosen if not any(rule_matches(r, s) for s in (ignore or []))]
