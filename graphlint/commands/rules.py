"""``graphlint rules``: every installed rule, as a table, JSON or Markdown."""

from __future__ import annotations

import click

from graphlint.commands.common import guarded


@click.command("rules")
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text")
@guarded
def command(fmt: str) -> None:
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
