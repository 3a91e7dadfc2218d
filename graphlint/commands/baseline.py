"""``graphlint baseline MODELS -o FILE``: record today's findings (see graphlint.workflow)."""

from __future__ import annotations

import json
import sys
from collections import defaultdict

import click

from graphlint.commands.common import build_options, guarded, lint_options, progress
from graphlint.workflow import DEFAULT_BASELINE


@click.command("baseline")
@click.argument("models", nargs=-1, required=True)
@lint_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help=f"Baseline file to write (default: the configured baseline, else {DEFAULT_BASELINE}).")
@guarded
def command(models, targets, select, ignore, shapes, config_path, repo_root, source_root, debug, output) -> None:
    """Record today's findings so later runs with --baseline report only new ones."""
    from graphlint import lint
    from graphlint.fsutil import atomic_write_text, check_output_path
    from graphlint.workflow import apply_suppressions, render_baseline

    opts = build_options(targets, select, ignore, shapes, config_path, repo_root, source_root, models)
    path = output or opts.baseline or DEFAULT_BASELINE
    check_output_path(path)
    opts.on_model = progress(len(models))
    run = lint.lint_paths(list(models), opts)
    apply_suppressions(run, list(opts.suppressions))
    for fail in run.failures:
        click.echo(f"graphlint: error: {fail.path}: {fail.message}", err=True)
    if run.failures:
        click.echo("graphlint: error: baseline not written because some models could not be read", err=True)
        sys.exit(2)
    text = render_baseline(run, path)
    atomic_write_text(path, text)
    n = len(json.loads(text)["findings"])
    per_rule: dict[str, int] = defaultdict(int)
    for f in run.findings():
        per_rule[f.rule_id] += 1
    detail = ", ".join(f"{k} x{v}" for k, v in sorted(per_rule.items()))
    click.echo(f"graphlint: recorded {n} finding(s) from {len(run.results)} model/target run(s) in {path}"
               + (f" ({detail})" if detail else ""), err=True)
