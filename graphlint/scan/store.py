"""The results store of ``graphlint scan``: one SQLite file (WAL), written by the scan's driver only.

One row per model × target holds what that lint found and what it was linted with: the model's
sha256, graphlint's version, the hash of the rules and their data, the hash of the options, the
findings as JSON (the objects of the JSON report, docs/json-report.md), the counts per severity,
the time it took and, when it could not be linted, why, and under ``--confirm`` what ran on the engines
(``confirm``: the record of graphlint.confirm.verdicts.run_note). A row is *fresh* when all four keys
match what the scan would lint with now; a re-scan lints only models with a stale or missing row.

Each model's rows are committed in one transaction as soon as its lint ends, so an interrupted
scan (Ctrl-C, a killed machine) loses only the models in flight. ``lints`` logs every lint that
ended (one line per model and attempt), which is how a scan counts what it actually did.
"""

from __future__ import annotations

import datetime
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from graphlint.errors import UsageError

SCHEMA_VERSION = "2"  # 2: results.confirm (a store of schema 1 is migrated when opened)
# Statuses of a row: linted (findings hold the result), failed (graphlint could not read the
# model), crashed (its worker died on every attempt), timeout (past the time budget), n/a (the
# target cannot take the model's format, e.g. TensorRT and OpenVINO IR).
STATUSES = ("linted", "failed", "crashed", "timeout", "n/a")
# Verdicts, worst first: what the dashboard counts and --diff compares.
VERDICTS = ("failed", "error", "warning", "clean", "n/a")

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    path TEXT NOT NULL, target TEXT NOT NULL,
    sha256 TEXT NOT NULL, graphlint_version TEXT NOT NULL, rule_data_hash TEXT NOT NULL,
    options_hash TEXT NOT NULL, format TEXT NOT NULL, status TEXT NOT NULL, verdict TEXT NOT NULL,
    errors INTEGER NOT NULL, warnings INTEGER NOT NULL, infos INTEGER NOT NULL,
    findings TEXT NOT NULL, failure TEXT, nodes INTEGER, seconds REAL NOT NULL,
    linted_at TEXT NOT NULL, scan_id INTEGER NOT NULL, confirm TEXT,
    PRIMARY KEY (path, target));
CREATE TABLE IF NOT EXISTS scans (
    id INTEGER PRIMARY KEY, started TEXT NOT NULL, finished TEXT, executor TEXT NOT NULL,
    targets TEXT NOT NULL, models INTEGER NOT NULL, linted INTEGER NOT NULL DEFAULT 0,
    reused INTEGER NOT NULL DEFAULT 0, interrupted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS lints (
    scan_id INTEGER NOT NULL, path TEXT NOT NULL, sha256 TEXT NOT NULL, targets TEXT NOT NULL,
    seconds REAL NOT NULL, worker TEXT NOT NULL, attempts INTEGER NOT NULL, ended TEXT NOT NULL);
"""

_COLUMNS = ("path, target, sha256, graphlint_version, rule_data_hash, options_hash, format, status, verdict, "
            "errors, warnings, infos, findings, failure, nodes, seconds, linted_at, scan_id, confirm")


@dataclass(frozen=True)
class Key:
    """What a result was linted with; a stored row is reused only when all of it matches."""

    sha256: str
    graphlint_version: str
    rule_data_hash: str
    options_hash: str


@dataclass
class Row:
    """One model × target, as stored."""

    path: str
    target: str
    key: Key
    format: str
    status: str
    findings: list[dict[str, Any]]
    failure: str | None = None
    nodes: int | None = None
    seconds: float = 0.0
    linted_at: str = ""
    scan_id: int = 0
    # --confirm: what ran on the engines (graphlint.confirm.verdicts.run_note; a deployment folder's:
    # {"stages": {stage path: record}}); None for a static-only lint
    confirm: dict[str, Any] | None = None

    @property
    def counts(self) -> dict[str, int]:
        c = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            if not f.get("suppressed") and f["severity"] in c:
                c[f["severity"]] += 1
        return c

    @property
    def verdict(self) -> str:
        if self.status == "n/a":
            return "n/a"
        if self.status != "linted":
            return "failed"
        c = self.counts
        return "error" if c["error"] else "warning" if c["warning"] else "clean"


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Store:
    """The SQLite results store at ``path`` (created when missing)."""

    def __init__(self, path: str, *, create: bool = True) -> None:
        if not create and not os.path.isfile(path):
            raise UsageError(f"store {path!r} does not exist (run graphlint scan SOURCES --store {path} first)")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise UsageError(f"store folder {os.path.dirname(path) or '.'!r} does not exist")
        self.path = path
        try:
            self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # with WAL: a commit survives a killed process
            self.db.executescript(_DDL)
            version = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.DatabaseError as e:
            raise UsageError(f"{path}: not a graphlint store ({e})") from None
        if version is None:
            self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        elif version[0] == "1":  # before --confirm: the same rows, no confirm record
            with self._transaction():
                self.db.execute("ALTER TABLE results ADD COLUMN confirm TEXT")
                self.db.execute("UPDATE meta SET value=? WHERE key='schema'", (SCHEMA_VERSION,))
        elif version[0] != SCHEMA_VERSION:
            raise UsageError(f"{path}: store schema {version[0]}, this graphlint writes {SCHEMA_VERSION}")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- the stat cache of digests

    def known_digest(self, path: str, size: int, mtime_ns: int) -> str | None:
        row = self.db.execute("SELECT sha256 FROM files WHERE path=? AND size=? AND mtime_ns=?",
                              (path, size, mtime_ns)).fetchone()
        return row[0] if row else None

    def remember_digests(self, entries: Iterable[tuple[str, int, int, str]]) -> None:
        with self._transaction():
            self.db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)", entries)

    # ---------------------------------------------------------------- scans and results

    def begin_scan(self, executor: str, targets: list[str], models: int) -> int:
        cur = self.db.execute("INSERT INTO scans (started, executor, targets, models) VALUES (?, ?, ?, ?)",
                              (now(), executor, ",".join(targets), models))
        return int(cur.lastrowid or 0)

    def end_scan(self, scan_id: int, linted: int, reused: int, interrupted: bool) -> None:
        self.db.execute("UPDATE scans SET finished=?, linted=?, reused=?, interrupted=? WHERE id=?",
                        (now(), linted, reused, int(interrupted), scan_id))

    def fresh_targets(self, path: str, key: Key, targets: list[str], retry_failed: bool = False) -> set[str]:
        """Which of ``targets`` have a stored row for ``path`` linted with ``key``."""
        rows = self.db.execute(
            "SELECT target, status FROM results WHERE path=? AND sha256=? AND graphlint_version=? "
            "AND rule_data_hash=? AND options_hash=?",
            (path, key.sha256, key.graphlint_version, key.rule_data_hash, key.options_hash)).fetchall()
        return {t for t, status in rows if t in targets and not (retry_failed and status in ("crashed", "timeout"))}

    def put(self, rows: list[Row], *, worker: str, attempts: int, seconds: float) -> None:
        """One model's rows, and the line in ``lints`` that says it was linted, in one transaction."""
        if not rows:
            return
        with self._transaction():
            for r in rows:
                c = r.counts
                self.db.execute(
                    f"INSERT OR REPLACE INTO results ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (r.path, r.target, r.key.sha256, r.key.graphlint_version, r.key.rule_data_hash,
                     r.key.options_hash, r.format, r.status, r.verdict, c["error"], c["warning"], c["info"],
                     json.dumps(r.findings, sort_keys=True, default=str), r.failure, r.nodes, r.seconds,
                     r.linted_at or now(), r.scan_id,
                     None if r.confirm is None else json.dumps(r.confirm, sort_keys=True, default=str)))
            linted = [r.target for r in rows if r.status != "n/a"]
            if linted:
                self.db.execute("INSERT INTO lints VALUES (?,?,?,?,?,?,?,?)",
                                (rows[0].scan_id, rows[0].path, rows[0].key.sha256, ",".join(linted), seconds,
                                 worker, attempts, now()))

    def rows(self, *, paths: Iterable[str] | None = None, targets: Iterable[str] | None = None) -> Iterator[Row]:
        """Stored rows, by path then target; only ``paths`` / ``targets`` when given."""
        want_paths = set(paths) if paths is not None else None
        want_targets = set(targets) if targets is not None else None
        for rec in self.db.execute("SELECT path, target, sha256, graphlint_version, rule_data_hash, options_hash, "
                                   "format, status, findings, failure, nodes, seconds, linted_at, scan_id, "
                                   "confirm FROM results ORDER BY path, target"):
            if want_paths is not None and rec[0] not in want_paths:
                continue
            if want_targets is not None and rec[1] not in want_targets:
                continue
            yield Row(rec[0], rec[1], Key(*rec[2:6]), rec[6], rec[7], json.loads(rec[8]), rec[9], rec[10],
                      rec[11], rec[12], rec[13], None if rec[14] is None else json.loads(rec[14]))

    def stored_targets(self) -> list[str]:
        return [t for (t,) in self.db.execute("SELECT DISTINCT target FROM results ORDER BY target")]

    def lint_counts(self) -> dict[str, int]:
        """How many times each model was linted, over every scan of this store."""
        return dict(self.db.execute("SELECT path, COUNT(*) FROM lints GROUP BY path").fetchall())

    def scans(self) -> list[dict[str, Any]]:
        cur = self.db.execute("SELECT * FROM scans ORDER BY id")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, rec, strict=True)) for rec in cur.fetchall()]

    def _transaction(self) -> Any:
        return _Transaction(self.db)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on an exception): one model's rows land whole or not at all."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")
