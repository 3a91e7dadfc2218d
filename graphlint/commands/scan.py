"""``graphlint scan SOURCES --targets T1,T2 --store fleet.db``: a fleet into a results store, and
what people read of it (``--report fleet.html``, ``--diff trt@10.1 trt@10.15``); docs/scan.md.

Exit codes: 2 usage or input error; with ``--diff``, 1 when a model's verdict is worse for the
second target; else 1 when a model in view has a finding at or above ``--fail-level`` or could
not be linted; 0 otherwise.
"""

from __future__ import annotations

import sys

import click

from graphlint.commands.common import emit, guarded, progress, split_values
from graphlint.errors import UsageError


@click.command("scan")
@click.argument("sources", nargs=-1)
@click.option("-t", "--targets", "targets", multiple=True, metavar="T1,T2,...",
              help="Targets to lint for, comma-separated or repeated (trt@10.1,trt@10.15,openvino@2026.4).")
@click.option("--store", required=True, type=click.Path(dir_okay=False),
              help="SQLite results store (created when missing). Without SOURCES: report on what it holds.")
@click.option("--select", multiple=True, help="Rule ids, prefixes, names or families to run.")
@click.option("--ignore", multiple=True, help="Rule ids, prefixes, names or families to skip.")
@click.option("--shapes", "shapes", multiple=True, help="Optimization profile NAME:MIN,OPT,MAX for every model "
              "(a manifest gives per-model ones).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Configuration file (default: the one found from the working folder).")
@click.option("--repo-root", default=None, help="Root that findings' paths are relative to.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Local worker processes (default: one per core, or GRAPHLINT_JOBS).")
@click.option("--ray", "ray_address", default=None, metavar="auto|ADDRESS",
              help="Run the models as tasks on an existing Ray cluster (pip install 'graphlint[ray]').")
@click.option("--time-budget", type=click.FloatRange(min=0), default=300.0, show_default=True, metavar="SECONDS",
              help="Give up on a model after this long (recorded as timeout); 0 = no limit.")
@click.option("--retry-failed", is_flag=True, help="Lint again the models stored as crashed or timed out.")
@click.option("--confirm/--no-confirm", "confirm", default=None,
              help="After the rules, run each model on the installed engines (ONNX Runtime CPU, OpenVINO CPU, "
                   "TensorRT with a GPU) and store the findings as settled ([confirm] in the configuration "
                   "sets it up); with --ray, in the Ray tasks.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), metavar="FILE.html",
              help="Write the fleet dashboard (and a page per model, in FILE's folder).")
@click.option("--diff", "diff_targets", nargs=2, metavar="BEFORE AFTER",
              help="The models whose verdict changes from target BEFORE to AFTER (trt@10.1 trt@10.15).")
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the summary or diff to FILE.")
@click.option("--fail-level", type=click.Choice(["error", "warning", "info"]), default="error", show_default=True)
@click.option("--title", default="graphlint fleet", show_default=True, help="The dashboard's title.")
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
@guarded
def command(sources, targets, store, select, ignore, shapes, config_path, repo_root, jobs, ray_address, time_budget,
            retry_failed, confirm, report_path, diff_targets, fmt, output, fail_level, title, debug) -> None:
    """Lint a fleet of models for several targets into a results store; re-scans lint only what changed."""
    import json

    from graphlint import procs
    from graphlint.fsutil import check_output_path
    from graphlint.rule import Severity
    from graphlint.scan import fleet, scan
    from graphlint.scan.store import Store
    from graphlint.target import resolve

    for path in (report_path, output):
        if path:
            check_output_path(path)
    diff_specs = [resolve(t).spec for t in diff_targets] if diff_targets else None
    paths = None
    if sources:
        summary = _run_scan(scan, sources, split_values(targets), store, select, ignore, shapes, config_path,
                            repo_root, jobs or procs.jobs(), ray_address, time_budget, retry_failed, confirm)
        paths = summary.paths
    elif targets or ray_address or confirm:
        raise click.UsageError("--targets, --ray and --confirm need SOURCES to scan")
    with Store(store, create=bool(sources)) as db:
        rows = list(db.rows(paths=paths))
        scans = db.scans()
    d = None
    if diff_specs:
        held = {r.target for r in rows}
        for t in diff_specs:
            if t not in held:
                raise UsageError(f"the store holds no results for {t} (it has {', '.join(sorted(held)) or 'none'}); "
                                 f"scan with --targets {t} first")
        d = fleet.diff(rows, *diff_specs)
    if report_path:
        from graphlint.scan.dashboard import write_dashboard

        pages = write_dashboard(report_path, fleet.summarize(rows, scans), rows, title, d)
        click.echo(f"graphlint: wrote {report_path} and {pages} model page(s)", err=True)
    if d is not None:
        emit(json.dumps(d, indent=2) + "\n" if fmt == "json" else fleet.render_diff_text(d), output)
        sys.exit(1 if d["worse"] else 0)
    s = fleet.summarize(rows, scans)
    if fmt == "json" or not report_path or output:
        emit(json.dumps(s, indent=2) + "\n" if fmt == "json" else fleet.render_summary_text(s), output)
    level = Severity.parse(fail_level)
    sys.exit(1 if any(m["failed"] or _at_or_above(m, level) for m in s["models"]) else 0)


def _at_or_above(model: dict, level) -> int:
    """How many of a model's findings are at or above ``level``."""
    from graphlint.rule import Severity

    return model["errors"] + (model["warnings"] if level <= Severity.WARNING else 0) + (
        model["infos"] if level <= Severity.INFO else 0)


def _run_scan(scan, sources, targets, store, select, ignore, shapes, config_path, repo_root, jobs, ray_address,
              time_budget, retry_failed, confirm):
    try:
        summary = scan(sources, targets, store, select=split_values(select), ignore=split_values(ignore),
                       shapes=list(shapes), config=config_path, root=repo_root, time_budget=time_budget, jobs=jobs,
                       ray=ray_address, retry_failed=retry_failed, confirm=confirm, progress=progress)
    except KeyboardInterrupt:
        click.echo(f"graphlint: interrupted; every model that finished is in {store}: run the same command "
                   f"to resume", err=True)
        sys.exit(130)
    failed = f", {len(summary.failed)} could not be linted" if summary.failed else ""
    engines = " and run on the installed engines (--confirm)" if summary.confirm else ""
    click.echo(f"graphlint: scanned {len(summary.paths)} model(s) for {', '.join(summary.targets)}{engines} in "
               f"{summary.seconds:.1f} s: {summary.linted} linted, {summary.reused} from the store{failed}", err=True)
    return summary
