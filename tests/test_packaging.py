"""Every package folder ships in the wheel; the built-in pack is found through its entry point."""

from __future__ import annotations

import os
from importlib.metadata import entry_points

from tests.conftest import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


def test_every_package_folder_is_listed_in_pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    found = set()
    for base, pkg in (("graphlint", "graphlint"), ("rules", "graphlint_rules")):
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, base)):
            if "__init__.py" in files and "__pycache__" not in dirpath:
                rel = os.path.relpath(dirpath, os.path.join(ROOT, base))
                found.add(pkg if rel == "." else f"{pkg}.{rel.replace(os.sep, '.')}")
    assert found == listed, (found - listed, listed - found)


def test_builtin_pack_registers_through_the_entry_point():
    eps = {ep.name: ep for ep in entry_points(group="graphlint.rules")}
    assert eps["builtin"].value == "graphlint_rules:RULES"
    rules = eps["builtin"].load()
    assert any(r.id == "GL0001" for r in rules)
