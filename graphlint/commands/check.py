"""``graphlint check MODELS`` (the default command): lint models against target engines."""

from __future__ import annotations

import sys
import time

import click

from graphlint.commands import common
from graphlint.commands.common import build_options, emit, guarded, lint_options, progress
from graphlint.rule import Severity

FORMATS = ["text", "json", "sarif", "github"]


@click.command("check")
@click.argument("models", nargs=-1, required=True)
@lint_options
@click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the report to FILE (atomically).")
@click.option("--fail-level", type=click.Choice(["error", "warning", "info"]), default=None,
              help="Lowest severity that makes the exit code 1 (default: error).")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False),
              help="Report only findings not recorded in this baseline file.")
@click.option("--stats", "--profile", "stats", is_flag=True, help="Print time per phase and per rule family on stderr.")
@click.option("--color/--no-color", default=None, help="Colour the text report (default: only on a TTY).")
@click.option("--show-info", is_flag=True,
              help="List info-level findings in the text report (default: one summary line per model; "
                   "JSON and SARIF always carry them).")
@click.option("--expand", is_flag=True,
              help="List every finding in the text report (default: more than 3 of one rule on one op type "
                   "are one block naming the first 3 nodes; JSON and SARIF always list each).")
@click.option("--time-budget", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Give up on a model (exit 2) after this long; 0 = no limit. Default: 300.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Processes to use: models linted at once, each in a worker, and a big model's "
                   "inference and checker. Default: one per core (or GRAPHLINT_JOBS); 1 = one process.")
@click.option("--confirm/--no-confirm", "confirm", default=None,
              help="Run each model on the installed engines of the requested targets (ONNX Runtime CPU, OpenVINO "
                   "CPU, TensorRT with a GPU) at the sizes to be fed, in a child process, and settle what static "
                   "analysis could not prove ([confirm] in the configuration sets it up).")
@click.option("--keep-fp32", "keep_fp32", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write the precision findings' keep-fp32 lists in each engine's syntax (JSON if FILE ends "
                   "in .json); the text report prints them too.")
@guarded
def command(models, targets, select, ignore, shapes, config_path, repo_root, source_root, debug, fmt, output, fail_level,
            baseline_path, stats, color, show_info, expand, time_budget, jobs, confirm, keep_fp32) -> None:
    """Lint MODELS (.onnx or OpenVINO .xml) against the target engines."""
    common.collector_off_until_exit()
    from graphlint import lint, procs
    from graphlint.api import lint_run
    from graphlint.report import render

    if jobs:
        procs.set_jobs(jobs)
    opts = build_options(targets, select, ignore, shapes, config_path, repo_root, source_root, models, confirm)
    if time_budget is not None:
        opts.time_budget = time_budget
    if not (baseline_path or opts.baseline):  # matching a baseline reads each model's graph
        opts.jobs = procs.jobs()
    if output:
        from graphlint.fsutil import check_output_path

        check_output_path(output)
    opts.on_model = progress(len(models))
    run = lint_run(list(models), opts, baseline_path)
    if color is None:
        color = fmt == "text" and not output and sys.stdout.isatty()
    t_report = time.perf_counter()
    level = Severity.parse(fail_level or opts.fail_level)
    emit(render(run, fmt, color=color, show_info=show_info or level <= Severity.INFO, expand=expand), output)
    keep_lists(run, fmt, output, keep_fp32)
    t_report = time.perf_counter() - t_report
    for fail in run.failures:
        click.echo(f"graphlint: error: {fail.path}: {fail.message}", err=True)
    if stats:
        print_stats(run, t_report)
    sys.exit(lint.exit_code(run, level))


def keep_lists(run, fmt: str, output: str | None, path: str | None) -> None:
    """The keep-fp32 lists: after a text report on stdout, and in FILE when asked."""
    from graphlint.report import keep_fp32

    lists = keep_fp32.collect(run)
    if fmt == "text" and not output and lists:
        click.echo("\n" + keep_fp32.render_text(lists), nl=False)
    if path:
        text = keep_fp32.render_json(lists) if path.endswith(".json") else keep_fp32.render_text(lists)
        emit(text, path)


def print_stats(run, t_report: float = 0.0) -> None:
    """Time per phase on stderr: load (and its steps), each analysis, each rule family, report.

    A rule's time excludes the analyses it was first to ask for; those are listed on their own,
    so a rule pack author sees both what their rule costs and what it shares.
    """
    def line(label: str, t: float) -> None:
        click.echo(f"  {label:<52} {t * 1000:10.1f} ms", err=True)

    seen_models: set[int] = set()
    for res in run.results:
        click.echo(f"{res.model.path} -> {res.target.spec}: {res.stats}", err=True)
        tm = res.timings
        first = id(res.model) not in seen_models  # the model is loaded once for every target
        seen_models.add(id(res.model))
        line("load" + ("" if first else " (shared with the first target)"), tm.get("load", 0.0))
        for k, t in tm.items():
            if k.startswith("load:"):
                line("  " + k[5:], t)
        for k, t in sorted(tm.items()):
            if k.startswith("analysis:"):
                line(k, t)
        fams = sorted((t, k) for k, t in tm.items() if k.startswith("rules:"))
        for t, k in reversed(fams):
            line(k, t)
        line("rules total", sum(t for t, _ in fams))
        slow = sorted(((t, k) for k, t in tm.items() if k.startswith("rule:")), reverse=True)[:5]
        for t, k in slow:
            line(f"  slowest {k}", t)
    click.echo(f"  {'report':<52} {t_report * 1000:10.1f} ms", err=True)
    try:
        import resource
    except ImportError:  # Windows
        return
    unit = 1 << 20 if sys.platform == "darwin" else 1 << 10  # ru_maxrss: bytes on macOS, KiB on Linux
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 // unit // 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 // unit // 1024
    # children: the loader's (shape inference, onnx.checker) and, for several models, the workers
    click.echo(f"  peak RSS {own} MB" + (f" (largest child process {child} MB)" if child else ""), err=True)
