"""The code's shape: graphlint's modules import each other without cycles (data flows one way),
and no module is over ~600 lines."""

from __future__ import annotations

import ast
import os

import networkx as nx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = {"graphlint": os.path.join(ROOT, "graphlint"), "graphlint_rules": os.path.join(ROOT, "rules")}
MAX_LINES = 600


def _modules() -> dict[str, str]:
    """Module name -> file, for every .py file of graphlint and the built-in rule pack."""
    out = {}
    for package, folder in PACKAGES.items():
        for dirpath, _, files in os.walk(folder):
            for fn in files:
                if fn.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, fn), folder)[:-3].replace(os.sep, ".")
                    name = package if rel == "__init__" else f"{package}.{rel.removesuffix('.__init__')}"
                    out[name] = os.path.join(dirpath, fn)
    return out


def _import_graph() -> nx.DiGraph:
    """An edge a -> b when module a imports module b (anywhere in it, lazily or not)."""
    modules = _modules()
    g = nx.DiGraph()
    g.add_nodes_from(modules)
    for name, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        is_package = path.endswith("__init__.py")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".")[: len(name.split(".")) - node.level + is_package]
                    base = ".".join([*parts, base] if base else parts)
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    g.add_edge(name, target)
    return g


def test_no_import_cycles():
    g = _import_graph()
    assert g.number_of_edges() > 100  # the graph was really built
    cycles = list(nx.simple_cycles(g))
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join([*c, c[0]]) for c in cycles[:10])


def test_the_core_does_not_import_the_command_line():
    g = _import_graph()
    for core in ("graphlint.lint", "graphlint.config", "graphlint.workflow", "graphlint.engine", "graphlint.load",
                 "graphlint.analysis", "graphlint.report"):
        reached = nx.descendants(g, core)
        assert not {m for m in reached if m.startswith(("graphlint.cli", "graphlint.commands"))}, core


def test_no_module_is_too_long():
    long = {}
    for name, path in _modules().items():
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            long[name] = n
    assert long == {}
