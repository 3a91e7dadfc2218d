"""``graphlint scan``: lint a fleet of models for several targets into a results store (docs/scan.md).

Data flows one way: sources (graphlint.scan.sources) -> the models' keys (graphlint.scan.keys)
-> the store says which model × target rows are stale (graphlint.scan.store) -> the stale ones
are linted by an executor, this machine's worker processes (graphlint.scan.local) or a Ray
cluster (graphlint.scan.ray_pool), each task running graphlint.scan.work -> the driver writes
each model's rows as its outcome arrives -> the fleet reports read the store
(graphlint.scan.fleet, graphlint.scan.dashboard).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphlint import __version__
from graphlint.errors import UsageError
from graphlint.scan import keys, sources
from graphlint.scan.store import Key, Row, Store
from graphlint.scan.work import Outcome, Spec, Task, options_for

__all__ = ["ScanSummary", "scan"]


@dataclass
class ScanSummary:
    scan_id: int
    paths: list[str]  # every model the sources named, as the store names it
    targets: list[str]  # canonical target specs
    linted: int = 0  # models linted by this scan
    reused: int = 0  # models whose every row was fresh in the store
    failed: list[str] = field(default_factory=list)  # models stored as failed, crashed or timed out
    seconds: float = 0.0
    interrupted: bool = False
    confirm: bool = False  # the models were run on the installed engines (--confirm)


def scan(source_list: Sequence[str], targets: Sequence[str], store: str, *, select: Sequence[str] = (),
         ignore: Sequence[str] = (), shapes: Sequence[str] = (), config: str | None = None,
         root: str | None = None, time_budget: float = 300.0, jobs: int = 1, ray: str | None = None,
         retry_failed: bool = False, confirm: bool | None = None,
         progress: Callable[[int], Callable[[str], None] | None] | None = None) -> ScanSummary:
    """Lint every model ``source_list`` names for ``targets`` into the store at ``store``; models
    whose rows are fresh are not linted again. ``ray``: a Ray address (``auto``) to run on.
    ``confirm``: run each model on the installed engines after the rules (``check --confirm``; None: as
    the configuration's ``[confirm]`` table says); its rows are keyed by the confirm settings and the
    engines installed, so a static result is never reused for a confirm scan, nor the other way.
    ``progress(n)``: called with the number of models to lint, returns what to call as each starts."""
    from graphlint.config import effective_config
    from graphlint.lint import model_kind
    from graphlint.target import resolve

    t0 = time.perf_counter()
    specs = list(dict.fromkeys(resolve(t).spec for t in targets))
    if not specs:
        raise UsageError("graphlint scan needs --targets (e.g. --targets trt@10.1,trt@10.15,openvino)")
    if ray:  # before hashing a fleet: a scan that cannot run where asked says so at once
        from graphlint.scan.ray_pool import require_ray

        require_ray()
    items = sources.expand(list(source_list))
    spec = Spec(tuple(select), tuple(ignore), tuple(shapes), config and os.path.abspath(config),
                root and os.path.abspath(root), time_budget, os.getcwd(), confirm)
    eff = effective_config(targets=[], select=list(select), ignore=list(ignore), shapes=list(shapes),
                           config_path=config, repo_root=root, models=[], confirm=confirm)
    rules_hash = keys.rule_data_hash(options_for(spec, ())[1])
    settings = {"select": sorted(select), "ignore": sorted(ignore), "shapes": list(shapes)}
    # --confirm: its settings and the engines installed join the options (a static scan's keys stay as they were)
    engines = keys.engine_versions() if eff.values["confirm"] else None

    def key_of(item: sources.Item, sha: str, ran_on: dict[str, Any] | None = None) -> Key:
        doc = dict(settings, model_shapes=list(item.shapes))
        if engines is not None:
            doc["confirm"] = keys.confirm_settings(eff.values["_confirm"], ran_on or engines)
        return Key(sha, __version__, rules_hash, keys.options_hash(doc, eff.file))

    with Store(store) as db:
        executor = ("ray" if ray else f"local:{jobs}") + (" --confirm" if engines is not None else "")
        summary = ScanSummary(db.begin_scan(executor, specs, len(items)),
                              [i.path for i in items], specs, confirm=engines is not None)
        tasks, keyed = _plan(db, items, specs, key_of, summary, retry_failed)
        by_path = {i.path: i for i in items}

        def store_outcome(task: Task, outcome: Outcome) -> None:
            kind = "pipeline" if os.path.isdir(task.path) else model_kind(task.path)
            key = keyed[task.path]
            if engines is not None and outcome.engines is not None and outcome.engines != engines:
                # confirmed on a Ray node whose engines differ from this machine's: keyed by what ran it
                key = key_of(by_path[task.path], key.sha256, outcome.engines)
            db.put(_rows(task, outcome, key, kind, summary.scan_id),
                   worker=outcome.worker, attempts=outcome.attempts, seconds=outcome.seconds)
            summary.linted += 1
            if outcome.status != "linted":
                summary.failed.append(task.path)

        on_model = progress(len(tasks)) if progress else None
        try:
            if tasks and ray:
                from graphlint.scan.ray_pool import run_ray

                run_ray(tasks, spec, store_outcome, address=ray, on_model=on_model)
            elif tasks:
                from graphlint.scan.local import run_local

                run_local(tasks, spec, store_outcome, jobs=jobs, on_model=on_model)
        except KeyboardInterrupt:
            summary.interrupted = True
            raise
        finally:
            summary.seconds = time.perf_counter() - t0
            db.end_scan(summary.scan_id, summary.linted, summary.reused, summary.interrupted)
    return summary


def _plan(db: Store, items: list[sources.Item], specs: list[str], key_of: Callable[[sources.Item, str], Key],
          summary: ScanSummary, retry_failed: bool) -> tuple[list[Task], dict[str, Key]]:
    """The tasks to run: each model's targets whose stored row is stale. Rows that need no lint
    (a target that cannot take the format, a file that cannot be read) are stored here."""
    from graphlint.lint import model_kind
    from graphlint.target import resolve

    dialects = {t: resolve(t).dialects for t in specs}
    tasks: list[Task] = []
    keyed: dict[str, Key] = {}
    for item in items:
        kind = "pipeline" if item.pipeline else model_kind(item.path)
        try:
            sha, hashed = keys.model_digest(item.path, db)
        except OSError as e:
            sha, hashed = f"unreadable:{e.strerror}", []
        db.remember_digests(hashed)
        key = keyed[item.path] = key_of(item, sha)
        stale = [t for t in specs if t not in db.fresh_targets(item.path, key, specs, retry_failed)]
        applicable = [t for t in stale if any(k in dialects[t] for k in (item.kinds if item.pipeline else (kind,)))]
        what = "any stage of this pipeline" if item.pipeline else f"{kind} models"
        idle = [Row(item.path, t, key, kind, "n/a", [], f"{t} cannot take {what}", scan_id=summary.scan_id)
                for t in stale if t not in applicable]
        if applicable and sha.startswith("unreadable:"):
            idle += [Row(item.path, t, key, kind, "failed", [], f"cannot read the model ({sha[11:]})",
                         scan_id=summary.scan_id) for t in applicable]
            applicable = []
            summary.failed.append(item.path)
        db.put(idle, worker="", attempts=0, seconds=0.0)
        if applicable:
            tasks.append(Task(item.path, tuple(applicable), item.shapes, _size(item.path)))
        elif not stale:
            summary.reused += 1
    return tasks, keyed


def _rows(task: Task, outcome: Outcome, key: Key, kind: str, scan_id: int) -> list[Row]:
    if outcome.status == "linted":
        share = outcome.seconds / max(len(outcome.results), 1)
        return [Row(task.path, r.target, key, kind, "linted", r.findings, None, r.nodes, share, scan_id=scan_id,
                    confirm=r.confirm) for r in outcome.results]
    return [Row(task.path, t, key, kind, outcome.status, [], outcome.failure, None, outcome.seconds, scan_id=scan_id)
            for t in task.targets]


def _size(path: str) -> int:
    """The model file's bytes (not its external data, which the linter reads only when needed)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
