"""Fleet scan throughput: models per minute through ``graphlint scan`` on the local pool and on a local
Ray cluster, side by side, each cold (a new store) and again served from the store.

    python bench/scan.py [--jobs N] [--tiny 200] [--no-ray]

Two fleets: the test fleet (testmodels/fleet.py: the committed export-pipeline models, the
example and a dynamo Llama; four targets) and a *tiny* fleet of ``--tiny`` copies of the example
under distinct names (what per-task overhead costs when the lint itself is nothing). Baseline from
the same run: ``graphlint check`` over the same models with the same ``--jobs`` (no store). Also
the driver's own limits: how many model rows a second the store takes (one transaction per model,
as a scan writes them) and how long a cold driver takes to hash and look up a fleet that is all
fresh. Prints; asserts nothing (tests/test_bench_smoke.py runs it small).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

TARGETS = ["trt@10.1", "trt@10.15", "openvino", "ort"]


def tiny_fleet(folder: str, n: int) -> list[str]:
    example = os.path.join(ROOT, "testmodels", "examples", "tiny_vlm.onnx")
    os.makedirs(folder, exist_ok=True)
    for i in range(n):
        shutil.copy(example, os.path.join(folder, f"m{i:05d}.onnx"))
    return [folder]


def timed_scan(sources: list[str], store: str, **kw) -> tuple[float, int, int]:
    from graphlint.scan import scan

    t0 = time.perf_counter()
    s = scan(sources, TARGETS, store, **kw)
    return time.perf_counter() - t0, len(s.paths), s.linted


def check_baseline(sources: list[str], jobs: int) -> float:
    """``graphlint check`` over the same models for the same targets, no store (fresh processes: the
    ONNX files for every target, the IR for OpenVINO, the only target that takes it)."""
    from graphlint.scan.sources import expand

    paths = [i.path for i in expand(sources)]
    runs = [([p for p in paths if not p.endswith(".xml")], TARGETS),
            ([p for p in paths if p.endswith(".xml")], ["openvino"])]
    t0 = time.perf_counter()
    for models, targets in runs:
        if models:
            cmd = [sys.executable, "-m", "graphlint", *models, "-j", str(jobs), "-f", "json", "-o", os.devnull]
            subprocess.run(cmd + [x for t in targets for x in ("-t", t)], cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - t0


def store_writes(folder: str, n: int = 2000) -> float:
    """Model rows (four targets each, ~30 findings) a second the driver commits."""
    from graphlint.scan.store import Key, Row, Store

    finding = {"rule_id": "GL1001", "rule_name": "unsupported-op", "severity": "error", "message": "x" * 200,
               "node": "n", "op_type": "Op", "fingerprint": "0" * 32, "location": {"file": "m.onnx"}}
    with Store(os.path.join(folder, "writes.db")) as db:
        t0 = time.perf_counter()
        for i in range(n):
            key = Key(f"{i:064x}", "0", "r", "o")
            db.put([Row(f"m{i}.onnx", t, key, "onnx", "linted", [finding] * 30) for t in TARGETS],
                   worker="bench", attempts=1, seconds=0.1)
        return n / (time.perf_counter() - t0)


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--tiny", type=int, default=200)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--fleet", action="append", help="scan these sources instead of the test fleet")
    args = ap.parse_args(argv)
    from testmodels import fleet

    tmp = tempfile.mkdtemp(prefix="graphlint-bench-scan-")
    fleets = {"test fleet": args.fleet or fleet.sources(), "tiny fleet": tiny_fleet(os.path.join(tmp, "tiny"),
                                                                                      args.tiny)}
    ray_mod = None
    if not args.no_ray:
        try:
            import ray as ray_mod
        except ImportError:
            print("ray is not installed (pip install 'graphlint[ray]'): local pool only")
    if ray_mod is not None:
        t0 = time.perf_counter()
        ray_mod.init(num_cpus=args.jobs, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        print(f"local Ray cluster of {args.jobs} CPUs started in {time.perf_counter() - t0:.1f} s (not counted)")
    try:
        print(f"{'fleet':<11} {'run':<26} {'models':>7} {'linted':>7} {'seconds':>8} {'models/min':>11} "
              f"{'vs check':>9}")
        for name, sources in fleets.items():
            base = check_baseline(sources, args.jobs)
            runs = [("local pool", {"jobs": args.jobs})] + ([("Ray", {"ray": "auto"})] if ray_mod else [])
            n_check = None
            for label, kw in runs:
                store = os.path.join(tmp, f"{name.split()[0]}-{label.split()[0]}.db")
                for attempt in ("cold", "from the store"):
                    secs, models, linted = timed_scan(sources, store, **kw)
                    n_check = n_check or models
                    print(f"{name:<11} {label + ', ' + attempt:<26} {models:>7} {linted:>7} {secs:>8.2f} "
                          f"{60 * models / secs:>11.0f} {secs / base:>8.2f}x")
            print(f"{name:<11} {'graphlint check (baseline)':<26} {n_check:>7} {'':>7} {base:>8.2f} "
                  f"{60 * n_check / base:>11.0f} {1:>8.2f}x")
        print(f"store: {store_writes(tmp):.0f} model rows/s committed (4 targets, 30 findings each, one "
              f"transaction per model)")
    finally:
        if ray_mod is not None:
            ray_mod.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
