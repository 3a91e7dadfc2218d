"""``graphlint scan --ray`` on a local Ray cluster of 2 CPUs (``ray.init(num_cpus=2)``) over the test
fleet (testmodels/fleet.py): the store's rows equal a local scan's; a Ray worker killed mid-scan
still ends with every model scored; a scan interrupted and restarted lints each model once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from graphlint.scan import scan
from graphlint.scan.store import Store
from testmodels import fleet
from tests.conftest import ROOT

if os.environ.get("CI"):
    import ray  # CI installs graphlint[ray]: these tests must run there
else:
    ray = pytest.importorskip("ray")

TARGETS = ["trt@10.1", "trt@10.15", "openvino", "ort"]


@pytest.fixture(scope="module")
def cluster() -> str:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def local_rows(tmp_path_factory) -> dict:
    db = tmp_path_factory.mktemp("local") / "fleet.db"
    scan(fleet.sources(), TARGETS, str(db), jobs=2)
    return _rows(db)


def _rows(db: Path) -> dict:
    with Store(str(db), create=False) as s:
        return {(r.path, r.target): (r.status, r.key, r.findings) for r in s.rows()}


def _lints(db: Path) -> dict[str, int]:
    with Store(str(db), create=False) as s:
        return s.lint_counts()


def test_ray_scan_stores_what_a_local_scan_stores(cluster, local_rows, tmp_path):
    db = tmp_path / "ray.db"
    summary = scan(fleet.sources(), TARGETS, str(db), ray="auto")
    assert summary.linted > 100 and not summary.failed
    got = _rows(db)
    assert got.keys() == local_rows.keys()
    assert [k for k in got if got[k] != local_rows[k]] == []
    with Store(str(db), create=False) as s:
        workers = {w for (w,) in s.db.execute("SELECT DISTINCT worker FROM lints")}
        assert os.getpid() not in {int(w.rsplit(":", 1)[1]) for w in workers}  # linted in Ray's workers
    again = scan(fleet.sources(), TARGETS, str(db), ray="auto")
    assert again.linted == 0 and again.reused == len(again.paths)


def test_tasks_declare_memory_from_file_size(cluster):
    from graphlint.scan.ray_pool import BASE_MEMORY, MEMORY_PER_BYTE, task_memory
    from graphlint.scan.work import Task

    node = max(n["Resources"]["memory"] for n in ray.nodes() if n["Alive"])
    small, big = Task("a.onnx", ("trt",), size=10_000), Task("b.onnx", ("trt",), size=int(node) // MEMORY_PER_BYTE)
    assert BASE_MEMORY <= task_memory(small) < task_memory(big)
    assert task_memory(big) > node  # a model this big asks for more than this machine's Ray node holds...
    assert task_memory(big, node) == int(node)  # ...so it is capped to run alone there, not left waiting


def _busy_workers() -> list[int]:
    """Ray workers running one of our tasks (Ray titles a worker with the task's name, ``graphlint:<model>``,
    while it runs it)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().startswith(b"ray::graphlint:"):
                    out.append(int(pid))
        except OSError:
            continue
    return out


def test_a_worker_killed_mid_scan_is_retried(cluster, local_rows, tmp_path):
    db = tmp_path / "ray.db"
    done: dict = {}
    thread = threading.Thread(target=lambda: done.setdefault("summary", scan(fleet.sources(), TARGETS, str(db),
                                                                             ray="auto")))
    thread.start()
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and thread.is_alive() and time.monotonic() < deadline:
        busy = _busy_workers()
        stored = sum(_lints(db).values()) if db.exists() else 0
        if busy and stored >= 5:  # mid-scan: some models stored, a task running
            os.kill(busy[0], signal.SIGKILL)
            killed = busy[0]
        time.sleep(0.05)
    thread.join(600)
    assert killed is not None, "no busy Ray worker was seen to kill"
    summary = done["summary"]
    assert not summary.failed, summary.failed  # the killed task was retried, not recorded as crashed
    got = _rows(db)
    assert got.keys() == local_rows.keys()
    assert [k for k in got if got[k][0] != local_rows[k][0] or got[k][2] != local_rows[k][2]] == []


def test_interrupted_ray_scan_restarts_and_lints_each_model_once(cluster, local_rows, tmp_path):
    db = tmp_path / "ray.db"
    args = [sys.executable, "-m", "graphlint", "scan", *fleet.sources(), "--targets", ",".join(TARGETS),
            "--store", str(db), "--ray", cluster]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            if sum(_lints(db).values()) >= 20:
                break
        except Exception:  # the store is being created
            continue
    assert proc.poll() is None, "the scan ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130 and "run the same command to resume" in err, err
    deadline = time.monotonic() + 60  # the scan's job ended with its connection: so did its tasks
    while _busy_workers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _busy_workers() == [], "tasks of the interrupted scan still run"
    first = sum(_lints(db).values())
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode in (0, 1), r.stderr
    counts = _lints(db)
    linted = {p for (p, _), (status, _, _) in local_rows.items() if status != "n/a"}
    assert set(counts) == linted and set(counts.values()) == {1}, {k: v for k, v in counts.items() if v != 1}
    assert f"{len(linted) - first} linted" in r.stderr, r.stderr
    got = _rows(db)
    assert got.keys() == local_rows.keys() and all(got[k][2] == local_rows[k][2] for k in got)
