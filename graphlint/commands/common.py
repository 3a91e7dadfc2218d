"""What the subcommands share: lint options, turning errors into one line and exit 2, output."""

from __future__ import annotations

import functools
import gc
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from graphlint.errors import GraphlintError
from graphlint.lint import LintOptions


def split_values(values: tuple[str, ...]) -> list[str]:
    """Repeated options that may also hold comma-separated lists (``--select GL1,GL2``)."""
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def debug_requested() -> bool:
    return "--debug" in sys.argv or os.environ.get("GRAPHLINT_DEBUG") == "1"


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn graphlint and unexpected errors into one stderr line and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except GraphlintError as e:
            if debug_requested():
                raise
            click.echo(f"graphlint: error: {e}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("graphlint: interrupted", err=True)
            sys.exit(130)
        except Exception as e:
            if debug_requested():
                raise
            click.echo(f"graphlint: internal error: {type(e).__name__}: {e} (run with --debug for a traceback)",
                       err=True)
            sys.exit(2)

    return wrapper


def lint_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by every command that lints (check, fix, baseline, report, config)."""
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
        click.option("--precision", type=click.Choice(["fp16", "bf16", "fp32"]), expose_value=False,
                     callback=_to_meta, help="Lint for the precision the engine computes in (default: each "
                     "target's own: OpenVINO GPU/NPU fp16, OpenVINO CPU bf16 on AVX512_BF16/AMX hosts, else fp32)."),
        click.option("--input-range", "input_range", multiple=True, expose_value=False, callback=_to_meta,
                     metavar="NAME:LO,HI", help="Known range of an input's values, for the value-range analysis "
                     "(e.g. pixel_values:-3,3). Repeatable."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _to_meta(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Options every lint command takes without naming them: kept in the click context for build_options."""
    ctx.meta[f"graphlint.{param.name}"] = value
    return value


def build_options(targets, select, ignore, shapes, config_path, repo_root, source_root=None, models=(),
                  confirm: bool | None = None) -> LintOptions:
    from graphlint.config import resolve_options

    ctx = click.get_current_context(silent=True)
    meta = ctx.meta if ctx is not None else {}
    return resolve_options(
        targets=list(targets), select=split_values(select), ignore=split_values(ignore), shapes=list(shapes),
        config_path=config_path, repo_root=repo_root, models=list(models), source_root=source_root,
        precision=meta.get("graphlint.precision"), input_ranges=list(meta.get("graphlint.input_range") or ()),
        confirm=confirm,
    )


def collector_off_until_exit() -> None:
    """No cyclic garbage collection for the rest of a command that lints, when the process ends
    with it (graphlint.cli.main; in-process callers keep theirs): the run keeps every model's IR
    until the report is written, and each collection would rescan its millions of objects,
    which hold no cycles worth freeing. The process exits without teardown."""
    if PROCESS_EXITS_AFTER:
        gc.disable()


def emit(text: str, output: str | None) -> None:
    if output:
        from graphlint.fsutil import atomic_write_text

        atomic_write_text(output, text)
    else:
        click.echo(text, nl=False)


def progress(total: int) -> Callable[[str], None] | None:
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
PROCESS_EXITS_AFTER = False  # set by graphlint.cli.main: this process ends with the command
