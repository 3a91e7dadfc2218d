"""Rule documentation and registry conventions (ruff style: one rule per file, full docstring)."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys

import pytest

from graphlint.registry import load_rules
from graphlint.rewrites import CATALOGUE
from tests.conftest import ROOT

BUILTIN = [r for r in load_rules() if r.pack == "builtin"]


def test_generated_rule_reference_is_current():
    r = subprocess.run([sys.executable, "-m", "graphlint.docs", "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("rule", BUILTIN, ids=lambda r: r.id)
def test_rule_conventions(rule):
    assert re.fullmatch(r"GL\d{4}", rule.id)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    sections = rule.sections()
    for key in ("what it checks", "why it matters", "example", "fix"):
        assert sections.get(key), f"{rule.id} doc lacks '## {key}'"
    fname = os.path.basename(inspect.getfile(rule))
    assert fname == f"{rule.id.lower()}_{rule.name.replace('-', '_')}.py", fname
    assert rule.family_name() != "other"


def test_one_rule_per_file_and_unique_names():
    files = [inspect.getfile(r) for r in BUILTIN]
    assert len(files) == len(set(files))
    names = [r.name for r in BUILTIN]
    assert len(names) == len(set(names))


def test_rewrite_names_used_in_rules_are_catalogued():
    used = set()
    for r in BUILTIN:
        used |= set(re.findall(r'Rewrite\(\s*"([a-z0-9-]+)"', inspect.getsource(inspect.getmodule(r))))
    assert used <= set(CATALOGUE), used - set(CATALOGUE)
