"""The ``graphlint fix`` subcommand (registered by graphlint.cli)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from graphlint.errors import UsageError


def _parse_layouts(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in values:
        for spec in item.split(","):
            name, sep, layout = spec.strip().rpartition(":")
            if not sep or not name or not layout:
                raise UsageError(f"--layout {spec!r}: expected NAME:LAYOUT, e.g. pixel_values:NCHW")
            out[name] = layout
    return out


def _parse_rewrites(values: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    """``NAME`` or ``NAME:key=value;key=value`` (values parsed as JSON when they parse)."""
    out = []
    for spec in values:
        name, _, rest = spec.partition(":")
        params: dict[str, Any] = {}
        for kv in filter(None, (p.strip() for p in rest.split(";"))):
            k, sep, v = kv.partition("=")
            if not sep:
                raise UsageError(f"--rewrite {spec!r}: parameters are key=value separated by ';'")
            try:
                params[k.strip()] = json.loads(v)
            except json.JSONDecodeError:
                params[k.strip()] = v.strip()
        out.append((name.strip(), params))
    return out


def register(cli: click.Group) -> None:
    from graphlint.cli import build_options, guarded, lint_options

    @cli.command("fix")
    @click.argument("model")
    @lint_options
    @click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the fixed model here.")
    @click.option("--in-place", is_flag=True, help="Overwrite MODEL (atomically) instead of writing -o.")
    @click.option("--diff", is_flag=True, help="Show what would change (after verification); write nothing.")
    @click.option("--unsafe-fixes", is_flag=True, help="Also apply rewrites that change results on purpose.")
    @click.option("--rewrite", "rewrites", multiple=True,
                  help="Apply a pass by name even without a finding: NAME or NAME:key=value;key=value "
                       "(e.g. opset-upgrade:opset=17, unfuse-contrib). Counts as naming it explicitly.")
    @click.option("--layout", "layouts", multiple=True, help="OpenVINO layout NAME:LAYOUT (pixel_values:NCHW).")
    @click.option("--inputs", "inputs_path", type=click.Path(dir_okay=False, exists=True),
                  help="Verify on these inputs (.npz, one array per input name) instead of random ones.")
    @click.option("-f", "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
    @guarded
    def fix(model, targets, select, ignore, shapes, config_path, repo_root, source_root, debug, output, in_place, diff,
            unsafe_fixes, rewrites, layouts, inputs_path, fmt) -> None:
        """Apply the findings' suggested rewrites to MODEL as verified passes.

        Each pass is checked (onnx.checker, shape inference) and the rewritten model is run
        against the original on the same inputs; a pass that breaks equivalence is dropped
        and named. The model is written only once verified, atomically. Exit 0: done; 1: some
        pass was refused or findings for applied rewrites remain; 2: usage or input error.
        """
        from graphlint.fix.run import FixOptions, fix_path
        from graphlint.fix.verify import load_npz

        if in_place and output:
            raise UsageError("give either -o or --in-place, not both")
        opts = build_options(targets, select, ignore, shapes, config_path, repo_root, source_root)
        fopts = FixOptions(output=output, in_place=in_place, diff=diff, unsafe_fixes=unsafe_fixes,
                           layouts=_parse_layouts(layouts), rewrites=_parse_rewrites(rewrites))
        if inputs_path:
            try:
                fopts.inputs = load_npz(inputs_path)
            except Exception as e:
                raise UsageError(f"--inputs {inputs_path!r}: not a readable .npz ({e})") from None
        progress = None
        if sys.stderr.isatty():
            def progress(msg: str) -> None:
                click.echo(f"\r\033[K{msg[:70]}", err=True, nl=False)
        report = fix_path(model, fopts, opts, progress)
        if progress:
            click.echo("\r\033[K", err=True, nl=False)
        if fmt == "json":
            click.echo(json.dumps(report.to_dict(), indent=2))
        else:
            click.echo(render_text(report), nl=False)
        bad = bool(report.outcome.refused) or bool(report.remaining)
        sys.exit(1 if bad else 0)


def render_text(report) -> str:
    o = report.outcome
    lines = [f"graphlint fix: {report.path} (target {report.target})"]
    for s in o.steps:
        if s.status == "applied":
            diff = max(s.max_abs_diff.values(), default=None)
            how = ("changes results on purpose" if s.intended_change else
                   f"verified in {o.engine}" if o.engine else "checked structurally")
            num = f", max |diff| {diff:.3g}" if diff is not None else ""
            lines.append(f"  applied    {s.name}: {len(s.changes)} change(s), {how}{num}")
            lines.extend(f"      {c}" for c in s.changes)
        elif s.status in ("refused", "crashed"):
            lines.append(f"  {s.status:<10} {s.name}: {s.reason}")
        else:
            lines.append(f"  unchanged  {s.name}: nothing to do")
        lines.extend(f"      skipped: {k}" for k in s.skipped)
    for f, why in report.plan.held_back:
        lines.append(f"  held back  {f.rule_id} {f.node or f.value or ''}: {why}")
    for n in o.notes:
        lines.append(f"  note: {n}")
    if not o.steps:
        lines.append("  nothing to fix")
    if report.written:
        lines.append("wrote " + ", ".join(report.written))
    elif report.output is None:
        lines.append("--diff: nothing written")
    for f in report.remaining:
        lines.append(f"  remaining  {f.rule_id}: {f.message}")
    return "\n".join(lines) + "\n"
