"""``graphlint config``: the effective configuration and where each value came from."""

from __future__ import annotations

import click

from graphlint.commands.common import guarded, lint_options, split_values


@click.command("config")
@click.argument("models", nargs=-1)
@lint_options
@click.option("--fail-level", type=click.Choice(["error", "warning", "info"]), default=None)
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False), default=None)
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@guarded
def command(models, targets, select, ignore, shapes, config_path, repo_root, source_root, debug, fail_level,
            baseline_path, fmt) -> None:
    """Print the effective configuration and where each value came from.

    MODELS (optional) decide where the configuration file is looked for, as in 'check'.
    """
    from graphlint.config import effective_config, render_effective

    eff = effective_config(targets=list(targets), select=split_values(select), ignore=split_values(ignore),
                           shapes=list(shapes), config_path=config_path, repo_root=repo_root,
                           models=list(models), fail_level=fail_level, baseline=baseline_path,
                           source_root=source_root)
    click.echo(render_effective(eff, fmt), nl=False)
