"""Effective options: command-line flags over graphlint.toml / [tool.graphlint], over defaults."""

from __future__ import annotations

import os
import subprocess

from graphlint.lint import LintOptions
from graphlint.shapes_spec import parse_profiles


def repo_root(explicit: str | None) -> str:
    if explicit:
        return explicit
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=5)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return os.getcwd()


def resolve_options(*, targets, select, ignore, shapes, config_path, repo_root: str | None) -> LintOptions:
    opts = LintOptions(targets=targets, select=select, ignore=ignore, root=globals()["repo_root"](repo_root))
    opts.rule_options["shapes"] = parse_profiles(shapes)
    return opts
