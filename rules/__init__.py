"""graphlint's built-in rule pack (installed as the ``graphlint_rules`` package).

One rule per module, named after the rule (``gl0001_onnx_checker.py`` holds GL0001).
Every module here is imported and its Rule subclasses collected into RULES, which the
``graphlint.rules`` entry point in pyproject.toml publishes, the same way a third-party
pack registers. Data tables the rules read live in ``data/`` with their sources cited.
"""

from __future__ import annotations

from graphlint.registry import package_rules
from graphlint.rule import Rule

RULES: list[type[Rule]] = package_rules(__name__)
