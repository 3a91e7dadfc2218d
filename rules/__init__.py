"""graphlint's built-in rule pack (installed as the ``graphlint_rules`` package).

One rule per module, named after the rule (``gl0001_onnx_checker.py`` holds GL0001).
Every module here is imported and its Rule subclasses collected into RULES, which the
``graphlint.rules`` entry point in pyproject.toml publishes, the same way a third-party
pack registers. Data tables the rules read live in ``data/`` with their sources cited.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from graphlint.rule import Rule


def _discover() -> list[type[Rule]]:
    found: list[type[Rule]] = []
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if mod.name.startswith("_") or mod.ispkg:
            continue
        module = importlib.import_module(f"{__name__}.{mod.name}")
        found.extend(
            v for v in vars(module).values()
            if inspect.isclass(v) and issubclass(v, Rule) and v.__module__ == module.__name__
            and getattr(v, "id", None)
        )
    return found


RULES: list[type[Rule]] = _discover()
