"""``graphlint explain ID``: a rule's documentation."""

from __future__ import annotations

import click

from graphlint.commands.common import guarded
from graphlint.errors import UsageError


@click.command("explain")
@click.argument("rule_id")
@guarded
def command(rule_id: str) -> None:
    """Print a rule's documentation: what it checks, why, an example and the fix."""
    from graphlint.docs import rule_page
    from graphlint.registry import find_rule

    rule = find_rule(rule_id)
    if rule is None:
        raise UsageError(f"no rule {rule_id!r} (see 'graphlint rules')")
    click.echo(rule_page(rule))
