"""``graphlint report MODELS --target trt -o report.html``: the findings as one offline HTML page."""

from __future__ import annotations

import gc
import sys


def register(cli) -> None:
    import click

    from graphlint import lint
    from graphlint.cli import _progress, build_options, guarded, lint_options

    @cli.command("report")
    @click.argument("models", nargs=-1, required=True)
    @lint_options
    @click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
                  help="HTML file to write (atomically).")
    @click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False),
                  help="Show findings recorded in this baseline as suppressed.")
    @click.option("--title", default="graphlint report", show_default=True)
    @guarded
    def report_cmd(models, targets, select, ignore, shapes, config_path, repo_root, source_root, debug, output,
                   baseline_path, title) -> None:
        """Write a self-contained HTML report: verdicts, the collapsed graph, findings by severity and rule."""
        from graphlint import cli as cli_module
        from graphlint.fsutil import atomic_write_text, check_output_path
        from graphlint.html import render_html
        from graphlint.workflow import apply_workflow

        if cli_module._PROCESS_EXITS_AFTER:
            # As for `graphlint check`: the run keeps every model's IR until the page is written,
            # and collections after each model would rescan it all (3 s on the 100k bench model).
            gc.disable()
            if len(models) == 1 and lint.model_kind(models[0]) == "onnx":
                from graphlint.load import onnx_loader

                onnx_loader.start_early(models[0])  # inference and checker children start first

        opts = build_options(targets, select, ignore, shapes, config_path, repo_root, source_root, models)
        check_output_path(output)
        opts.on_model = _progress(len(models))
        run = lint.lint_paths(list(models), opts)
        apply_workflow(run, opts, baseline_path)
        atomic_write_text(output, render_html(run, title))
        c = run.counts()
        for fail in run.failures:
            click.echo(f"graphlint: error: {fail.path}: {fail.message}", err=True)
        click.echo(f"graphlint: wrote {output} ({c.get('error', 0)} errors, {c.get('warning', 0)} warnings, "
                   f"{c.get('info', 0)} infos, {c.get('suppressed', 0)} suppressed)", err=True)
        sys.exit(2 if run.failures else 0)
