"""``graphlint report MODELS --target trt -o report.html``: the findings as one offline HTML page."""

from __future__ import annotations

import sys

import click

from graphlint.commands import common
from graphlint.commands.common import build_options, guarded, lint_options, progress


@click.command("report")
@click.argument("models", nargs=-1, required=True)
@lint_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="HTML file to write (atomically).")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False),
              help="Show findings recorded in this baseline as suppressed.")
@click.option("--title", default="graphlint report", show_default=True)
@guarded
def command(models, targets, select, ignore, shapes, config_path, repo_root, source_root, debug, output,
            baseline_path, title) -> None:
    """Write a self-contained HTML report: verdicts, the collapsed graph, findings by severity and rule."""
    common.collector_off_until_exit()
    from graphlint.api import lint_run
    from graphlint.fsutil import atomic_write_text, check_output_path
    from graphlint.html import render_html

    opts = build_options(targets, select, ignore, shapes, config_path, repo_root, source_root, models)
    check_output_path(output)
    opts.on_model = progress(len(models))
    run = lint_run(list(models), opts, baseline_path)
    atomic_write_text(output, render_html(run, title))
    c = run.counts()
    for fail in run.failures:
        click.echo(f"graphlint: error: {fail.path}: {fail.message}", err=True)
    click.echo(f"graphlint: wrote {output} ({c.get('error', 0)} errors, {c.get('warning', 0)} warnings, "
               f"{c.get('info', 0)} infos, {c.get('suppressed', 0)} suppressed)", err=True)
    sys.exit(2 if run.failures else 0)
