"""Command line: ``graphlint MODEL... [options]`` lints; the subcommands live in graphlint.commands.

Exit codes: 0 clean, 1 findings at or above --fail-level, 2 usage or input error. Errors
are one line on stderr; a traceback only with --debug.
"""

from __future__ import annotations

import contextlib
import os
import sys

import click

from graphlint import __version__
from graphlint.commands import COMMANDS, common
from graphlint.errors import UsageError


class DefaultGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, goes to ``check``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["check", *args]
        elif not args:
            args = ["--help"]
        return super().parse_args(ctx, args)


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: graphlint's version and the engine releases its target tables come from."""
    if not value or ctx.resilient_parsing:
        return
    from graphlint.target import table_versions  # read only when asked: startup stays light

    click.echo(f"graphlint, version {__version__}")
    for line in table_versions():
        click.echo(f"  {line}")
    ctx.exit()


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="Show the version and the engine releases of the target tables, and exit.")
def cli() -> None:
    """graphlint: lint ONNX models and OpenVINO IR for engine contract failures."""


for _command in COMMANDS:
    cli.add_command(_command)


def main() -> None:
    common.PROCESS_EXITS_AFTER = True
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
    children = sys.modules.get("graphlint.procs")
    if children is not None:  # children of models whose background results nobody read
        children.cancel_all()
    # Every file is written and closed by now; skip tearing down millions of IR objects
    # (seconds on a 100k-node graph) and exit as soon as the output is flushed.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):  # reader went away (| head)
            stream.flush()
    os._exit(code)
