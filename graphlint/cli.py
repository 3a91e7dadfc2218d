"""Command line: ``graphlint MODEL... [options]`` lints; subcommands map to modules.

    graphlint check   (default)  graphlint.lint      lint models against targets
    graphlint rules              graphlint.registry  table of every installed rule
    graphlint explain ID         graphlint.rule      a rule's documentation

Other subcommands (fix, baseline, report, config) register from their own modules.
Exit codes: 0 clean, 1 findings at or above --fail-level, 2 usage or input error. Errors
are one line on stderr; a traceback only with --debug.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from graphlint import __version__
from graphlint.errors import GraphlintError, UsageError
from graphlint.rule import Severity

FORMATS = ["text", "json", "sarif", "github"]


class DefaultGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, goes to ``check``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["check", *args]
        elif not args:
            args = ["--help"]
        return super().parse_args(ctx, args)


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _debug_requested() -> bool:
    return "--debug" in sys.argv or os.environ.get("GRAPHLINT_DEBUG") == "1"


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn graphlint and unexpected errors into one stderr line and exit code 2."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except GraphlintError as e:
            if _debug_requested():
                raise
            click.echo(f"graphlint: error: {e}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("graphlint: interrupted", err=True)
            sys.exit(130)
        except Exception as e:
            if _debug_requested():
                raise
            click.echo(f"graphlint: internal error: {type(e).__name__}: {e} (run with --debug for a traceback)",
                       err=True)
            sys.exit(2)

    return wrapper


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="graphlint")
def cli() -> None:
    """graphlint: lint ONNX models and OpenVINO IR for engine contract failures."""


def lint_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by every command that lints (check, fix, baseline, report)."""
    opts = [
        click.option("-t", "--target", "targets", multiple=True,
                     help="trt, ort or openvino, optionally @version or @device (trt@10.1, openvino@npu). "
                          "Repeatable. Default: trt for .onnx, openvino for .xml."),
        click.option("--select", multiple=True, help="Rule ids, prefixes (GL2), names or families to run."),
        click.option("--ignore", multiple=True, help="Rule ids, prefixes, names or families to skip."),
        click.option("--shapes", "shapes", multiple=True,
                     help="Optimization profile NAME:MIN,OPT,MAX (e.g. input_ids:1x1,8x128,16x512) or NAME:SHAPE."),
        click.option("--config", "config_path", type=click.Path(dir_okay=False),
                     help="Configuration file (default: graphlint.toml or [tool.graphlint] in pyproject.toml)."),
        click.option("--repo-root", default=None, help="Root that SARIF paths are relative to (default: git root or cwd)."),
        click.option("--source-root", default=None, type=click.Path(file_okay=False),
                     help="Where the Python files that built the model are looked for, to point findings at "
                          "their lines (default: the repo root)."),
        click.option("--debug", is_flag=True, help="Show tracebacks for internal errors."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def build_options(targets, select, ignore, shapes, config_path, repo_root, source_root=None, models=()) -> Any:
    from graphlint.config import resolve_options

    return resolve_options(
        targets=list(targets), select=_split(select), ignore=_split(ignore), shapes=list(shapes),
        config_path=config_path, repo_root=repo_root, models=list(models), source_root=source_root,
    )


def emit(text: str, output: str | None) -> None:
    if output:
        from graphlint.fsutil import atomic_write_text

        atomic_write_text(output, text)
    else:
        click.echo(text, nl=False)


@cli.command("check")
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
@click.option("--time-budget", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Give up on a model (exit 2) after this long; 0 = no limit. Default: 300.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Processes to use: models linted at once, each in a worker, and a big model's "
                   "inference and checker. Default: one per core (or GRAPHLINT_JOBS); 1 = one process.")
@guarded
def check(models, targets, select, ignore, shapes, config_path, repo_root, source_root, debug, fmt, output, fail_level,
          baseline_path, stats, color, time_budget, jobs) -> None:
    """Lint MODELS (.onnx or OpenVINO .xml) against the target engines."""
    if _PROCESS_EXITS_AFTER:
        # No cyclic garbage collection: the run keeps every model it lints until the report is
        # written, then the process exits without teardown; with collection on, the first
        # allocation after a model is linted rescans its millions of IR objects (0.45 s for
        # 100k nodes). In-process callers keep their collector (see lint._gc_paused).
        gc.disable()
    from graphlint import forked, lint
    from graphlint.report import render

    if jobs:
        forked.set_jobs(jobs)
    if _PROCESS_EXITS_AFTER and len(models) == 1 and lint.model_kind(models[0]) == "onnx":
        from graphlint.load import onnx_loader

        onnx_loader.start_early(models[0])
    opts = build_options(targets, select, ignore, shapes, config_path, repo_root, source_root, models)
    if time_budget is not None:
        opts.time_budget = time_budget
    if not (baseline_path or opts.baseline):  # matching a baseline reads each model's graph
        opts.jobs = forked.jobs()
    if output:
        from graphlint.fsutil import check_output_path

        check_output_path(output)
    opts.on_model = _progress(len(models))
    run = lint.lint_paths(list(models), opts)
    from graphlint.workflow import apply_workflow

    apply_workflow(run, opts, baseline_path)
    if color is None:
        color = fmt == "text" and not output and sys.stdout.isatty()
    t_report = time.perf_counter()
    emit(render(run, fmt, color=color), output)
    t_report = time.perf_counter() - t_report
    for fail in run.failures:
        click.echo(f"graphlint: error: {fail.path}: {fail.message}", err=True)
    if stats:
        _print_stats(run, t_report)
    level = Severity.parse(fail_level or opts.fail_level)
    sys.exit(lint.exit_code(run, level))


def _progress(total: int) -> Callable[[str], None] | None:
    """A one-line bar on stderr for multi-model runs, only on a TTY (CI logs stay clean)."""
    if total < 2 or not sys.stderr.isatty():
        return None
    import shutil

    state = {"i": 0}

    def show(path: str) -> None:
        state["i"] += 1
        i = state["i"]
        cols = shutil.get_terminal_size((80, 20)).columns
        bar_w = max(10, min(30, cols // 4))
        filled = bar_w * (i - 1) // total  # the model named is being linted, not done
        head = f"[{'#' * filled}{'.' * (bar_w - filled)}] {i}/{total} "
        room = max(10, cols - len(head) - 1)
        name = path if len(path) <= room else "…" + path[-(room - 1):]
        click.echo(f"\r\x1b[2K{head}{name}", err=True, nl=False)
        if i == total:
            click.echo("", err=True)  # leave the last line; the report follows

    return show


def _print_stats(run, t_report: float = 0.0) -> None:
    """Time per phase on stderr: load (and its steps), each analysis, each rule family, report.

    A rule's time includes the analyses it was first to ask for; those are also listed on
    their own, so a rule pack author sees both what their rule costs and what it shares. Rules
    that read no types run while shape inference does: their time is in load's too.
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


@cli.command("rules")
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text")
@guarded
def rules_cmd(fmt: str) -> None:
    """List every installed rule: id, name, family, default severity, targets, pack."""
    import json

    from graphlint.registry import load_rules

    rules = load_rules()
    if fmt == "json":
        click.echo(json.dumps([{
            "id": r.id, "name": r.name, "family": r.family_name(), "severity": r.severity.label,
            "targets": sorted(r.targets) if r.targets else ["all"], "dialects": sorted(r.dialects),
            "fixable": r.fixable, "pack": r.pack, "summary": r.summary(),
        } for r in rules], indent=2))
        return
    if fmt == "markdown":
        from graphlint.docs import rules_table

        click.echo(rules_table(rules))
        return
    rows = [("ID", "NAME", "FAMILY", "SEVERITY", "TARGETS", "PACK")]
    for r in rules:
        rows.append((r.id, r.name, r.family_name(), r.severity.label,
                     ",".join(sorted(r.targets)) if r.targets else "all", r.pack))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


@cli.command("explain")
@click.argument("rule_id")
@guarded
def explain(rule_id: str) -> None:
    """Print a rule's documentation: what it checks, why, an example and the fix."""
    from graphlint.docs import rule_page
    from graphlint.registry import find_rule

    rule = find_rule(rule_id)
    if rule is None:
        raise UsageError(f"no rule {rule_id!r} (see 'graphlint rules')")
    click.echo(rule_page(rule))


def _register_subcommands() -> None:
    """Subcommands that live in their own modules (fix, baseline, report, config)."""
    import importlib

    for mod in ("graphlint.fix.command", "graphlint.workflow", "graphlint.html.command", "graphlint.config"):
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name and mod.startswith(e.name):
                continue  # that part is not built yet
            raise
        register = getattr(module, "register", None)
        if register:
            register(cli)


_PROCESS_EXITS_AFTER = False  # set by main(): this process ends with the command


def main() -> None:
    global _PROCESS_EXITS_AFTER
    _PROCESS_EXITS_AFTER = True
    _register_subcommands()
    code: int | str | None = 0
    try:
        cli.main(prog_name="graphlint", standalone_mode=True)
    except UsageError as e:  # raised while parsing, before a guarded command ran
        click.echo(f"graphlint: error: {e}", err=True)
        code = 2
    except SystemExit as e:
        code = e.code
    if not isinstance(code, int):
        if code is not None:
            click.echo(str(code), err=True)
        code = 0 if code is None else 1
    children = sys.modules.get("graphlint.forked")
    if children is not None:  # children of models whose background results nobody read
        children.cancel_all()
    # Every file is written and closed by now; skip tearing down millions of IR objects
    # (seconds on a 100k-node graph) and exit as soon as the output is flushed.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):  # reader went away (| head)
            stream.flush()
    os._exit(code)
