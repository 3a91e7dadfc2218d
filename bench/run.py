"""Measure graphlint against onnx's own tools, as whole processes, in the same run.

Each command runs as a fresh process (``subprocess.Popen`` + ``os.wait4``, whose rusage
gives that child's own peak RSS and CPU time). Commands of a scenario run interleaved,
round-robin, ``--runs`` times, so background load hits baseline and graphlint alike;
the report shows medians and the ratios the performance goals are stated in:

    big100k   100k-node transformer-like graph, every rule, --target trt: wall <= 1.2x (1.3x with
              --busy) of onnx.load + checker + infer_shapes(data_prop=True), CPU <= 1.3x, peak RSS
              <= 1.8x bare onnx.load (issue 38); with
              --before TREE also another source tree of graphlint, with --doctor onnx-doctor
    dag100k   the same for a 100k-node DAG of residual MatMul/Add/Tanh/Sigmoid/Mul blocks
    llm64     the same for a 33k-node 64-layer decoder-only LLM with KV-cache inputs and external weights
    weights   ~5k nodes with ~0 / 200 MB / 2 GB external weights: wall and RSS flat (<= 1.10x)
    openvino  OpenVINO IR with tens of thousands of layers vs openvino's read_model
    ci        several mid-size models in one graphlint call vs one process running
              load + checker + infer_shapes over the same files (and vs graphlint -j 1)
    mixed     the big model and two mid-size ones in one call (reported only)

    python bench/make_models.py          # once (about 3 minutes, mostly the OpenVINO IR)
    python bench/run.py                  # every scenario, 5 runs each
    python bench/run.py big100k --runs 3 --stats
    python bench/run.py big100k dag100k --runs 7 --before ../arch-base --doctor DOCTOR_VENV/bin/onnx-doctor
    python bench/run.py big100k dag100k llm64 --busy    # every other core kept busy meanwhile

With ``--busy`` the script starts one pure-Python spin process per core but one before the rounds
(``stress``-like: a tight loop, no memory traffic) and kills them after, so the measured
commands share the machine the way a CI runner that shares its cores does.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import compare_outputs

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable

ONNX_LOAD = "import onnx,sys; onnx.load(sys.argv[1])"
ONNX_LOAD_NOEXT = "import onnx,sys; onnx.load(sys.argv[1], load_external_data=False)"
# What "onnx's own checker" costs for a user: load, check, infer shapes with data propagation.
ONNX_CHECK = (
    "import onnx,sys\n"
    "for p in sys.argv[1:]:\n"
    "    m = onnx.load(p, load_external_data=False)\n"
    "    onnx.checker.check_model(m)\n"
    "    onnx.shape_inference.infer_shapes(m, data_prop=True)\n"
)
OV_READ = "import openvino as ov,sys; ov.Core().read_model(sys.argv[1])"
# What both graphlint and the baseline pay before any work: the interpreter and ``import onnx``
# (0.14 s with ml_dtypes 0.6.0, 0.6 s with 0.7.0, whose import alone takes 0.48 s: bench/README.md).
IMPORT_ONNX = "import onnx"


@dataclass
class Sample:
    wall: float  # seconds
    cpu: float  # user + sys seconds of the child
    rss_mb: float  # peak resident set of the child


def measure(cmd: list[str], cwd: str) -> Sample:
    env = None
    if cmd[0].startswith("PYTHONPATH="):  # another source tree of graphlint (--before)
        env = dict(os.environ, PYTHONPATH=cmd[0].split("=", 1)[1])
        cmd = cmd[1:]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode not in (0, 1):  # graphlint exits 1 when it has findings
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{err[-2000:]}")
    return Sample(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024)


def graphlint(*args: str) -> list[str]:
    return [PY, "-m", "graphlint", *args, "-f", "json"]


# Set by --before and --doctor: another source tree of graphlint, and onnx-doctor's executable.
BEFORE: str | None = None
DOCTOR: str | None = None


def graphlint_before(*args: str) -> list[str]:
    return [f"PYTHONPATH={BEFORE}", PY, "-c", compare_outputs.RUN, *args, "-f", "json"]


def py(code: str, *args: str) -> list[str]:
    return [PY, "-c", code, *args]


def scenario_cmds(name: str, d: str) -> dict[str, list[str]]:
    """Label -> command for one scenario (paths relative to the models folder ``d``)."""
    if name in ("big100k", "dag100k", "llm64"):
        model = f"{name}.onnx"
        cmds = {
            "onnx.load": py(ONNX_LOAD, model),
            # external weights: onnx.load reads them, graphlint never does; this is the graph alone
            **({"onnx.load graph only": py(ONNX_LOAD_NOEXT, model)} if name == "llm64" else {}),
            "onnx check+infer": py(ONNX_CHECK, model),
            "graphlint trt": graphlint(model, "--target", "trt"),
            "import onnx": py(IMPORT_ONNX),
        }
        if BEFORE:
            cmds["graphlint trt (before)"] = graphlint_before(model, "--target", "trt")
        if DOCTOR:
            cmds["onnx-doctor check"] = [DOCTOR, "check", model]
        cmds["graphlint trt+ort+ov"] = graphlint(model, "-t", "trt", "-t", "ort", "-t", "openvino")
        # No analysis and one rule (onnx.checker's verdict): start-up, parse, IR and onnx's
        # own work in the child, the least any run with every rule can take.
        cmds["graphlint GL0001 only"] = graphlint(model, "--target", "trt", "--select", "GL0001")
        return cmds
    if name == "weights":
        out = {}
        for w in ("w0", "w200m", "w2g"):
            out[f"graphlint {w}"] = graphlint(f"{w}.onnx", "--target", "trt")
        out["onnx check+infer w2g"] = py(ONNX_CHECK, "w2g.onnx")
        return out
    if name == "openvino":
        return {
            "openvino read_model": py(OV_READ, "ov_large.xml"),
            "graphlint ov": graphlint("ov_large.xml", "--target", "openvino"),
        }
    if name == "ci":
        files = sorted(f for f in os.listdir(d) if f.startswith("ci") and f.endswith(".onnx"))
        return {
            "onnx check+infer xN": py(ONNX_CHECK, *files),
            "graphlint xN": graphlint(*files, "--target", "trt"),
            "graphlint xN -j 1": graphlint(*files, "--target", "trt", "-j", "1"),
        }
    if name == "mixed":  # the big model and two mid-size ones in one call
        files = ["big100k.onnx", "ci0.onnx", "ci1.onnx"]
        return {
            "onnx check+infer mix": py(ONNX_CHECK, *files),
            "graphlint mix": graphlint(*files, "--target", "trt"),
            "graphlint mix -j 1": graphlint(*files, "--target", "trt", "-j", "1"),
        }
    raise SystemExit(f"unknown scenario {name!r}")


# Issue 38's goals: wall <= 1.2x check+infer idle (1.3x with --busy: replaced in main()), CPU <= 1.3x,
# peak RSS <= 1.8x a bare onnx.load, onnx-doctor at least 5x graphlint's wall (shown, not judged here).
_BIG = [
    ("graphlint trt", "onnx check+infer", "wall", 1.2),
    ("graphlint trt", "onnx check+infer", "cpu", 1.3),
    ("graphlint trt", "onnx.load", "rss_mb", 1.8),
    ("graphlint trt", "graphlint trt (before)", "wall", None),
    ("graphlint trt", "graphlint trt (before)", "cpu", None),
    ("graphlint trt (before)", "onnx check+infer", "wall", None),
    ("onnx-doctor check", "onnx check+infer", "wall", None),
    ("onnx-doctor check", "graphlint trt", "wall", None),
    # the same ratios beyond what both pay to start (the environment's import onnx: ml_dtypes)
    ("graphlint trt", "onnx check+infer", "wall", None, "import onnx"),
    ("graphlint trt", "onnx check+infer", "cpu", None, "import onnx"),
]
# (numerator, denominator, metric, goal[, start]) per scenario; goal None = informative only; a ratio
# whose commands the run has not (--before, --doctor) is left out; ``start``: a command whose
# metric is taken off both sides first.
RATIOS = {
    "big100k": [
        *_BIG,
        ("graphlint trt+ort+ov", "onnx check+infer", "wall", None),
        ("graphlint trt+ort+ov", "graphlint trt", "wall", None),
        ("graphlint trt+ort+ov", "onnx.load", "rss_mb", None),
        ("onnx check+infer", "onnx.load", "wall", None),
        ("graphlint GL0001 only", "onnx check+infer", "wall", None),
        ("graphlint trt", "graphlint GL0001 only", "wall", None),
    ],
    "dag100k": [*_BIG, ("graphlint trt+ort+ov", "graphlint trt", "wall", None)],
    "llm64": [*_BIG, ("graphlint trt+ort+ov", "graphlint trt", "wall", None),
              ("graphlint GL0001 only", "onnx check+infer", "wall", None),
              ("graphlint trt", "onnx.load graph only", "rss_mb", None)],
    "weights": [
        ("graphlint w200m", "graphlint w0", "wall", 1.1),
        ("graphlint w2g", "graphlint w0", "wall", 1.1),
        ("graphlint w200m", "graphlint w0", "rss_mb", 1.1),
        ("graphlint w2g", "graphlint w0", "rss_mb", 1.1),
        # CPU time is what wall time would be on an idle machine: robust when others load the cores
        ("graphlint w200m", "graphlint w0", "cpu", 1.1),
        ("graphlint w2g", "graphlint w0", "cpu", 1.1),
        ("graphlint w2g", "onnx check+infer w2g", "wall", None),
    ],
    "openvino": [
        ("graphlint ov", "openvino read_model", "wall", None),
        ("graphlint ov", "openvino read_model", "cpu", None),
        ("graphlint ov", "openvino read_model", "rss_mb", None),
    ],
    "ci": [
        ("graphlint xN", "onnx check+infer xN", "wall", 1.0),
        ("graphlint xN", "onnx check+infer xN", "cpu", None),
        ("graphlint xN", "onnx check+infer xN", "rss_mb", None),
        ("graphlint xN", "graphlint xN -j 1", "wall", None),
    ],
    "mixed": [
        ("graphlint mix", "onnx check+infer mix", "wall", None),
        ("graphlint mix", "graphlint mix -j 1", "wall", None),
    ],
}


def run_scenario(name: str, d: str, runs: int) -> dict:
    cmds = scenario_cmds(name, d)
    load0 = os.getloadavg()[0]
    samples: dict[str, list[Sample]] = {k: [] for k in cmds}
    for _ in range(runs):
        for label, cmd in cmds.items():  # interleaved: load spikes hit every command alike
            samples[label].append(measure(cmd, d))
    med = {
        label: {m: statistics.median(getattr(s, m) for s in ss) for m in ("wall", "cpu", "rss_mb")}
        for label, ss in samples.items()
    }
    load1 = os.getloadavg()[0]
    print(f"\n== {name} (median of {runs}; load average {load0:.1f} at the start, {load1:.1f} at the end)")
    for label, m in med.items():
        print(f"  {label:<26} wall {m['wall']:7.2f} s   cpu {m['cpu']:7.2f} s   peak RSS {m['rss_mb']:8.0f} MB")
    ratios = []
    for num, den, metric, goal, *start in RATIOS[name]:
        if num not in med or den not in med or not all(s in med for s in start):
            continue
        off = [getattr(x, metric) for x in samples[start[0]]] if start else [0.0] * runs
        base = statistics.median(off)
        if start and min(med[num][metric], med[den][metric]) - base <= 0.1 * med[den][metric]:
            continue  # the work is lost in start-up's noise (tiny models): no ratio to tell
        r = (med[num][metric] - base) / (med[den][metric] - base)
        # The same ratio within each round (the two commands ran one after the other): robust to
        # the machine's speed drifting between rounds, which moves both sides of a pair alike.
        paired = sorted((getattr(a, metric) - o) / (getattr(b, metric) - o)
                        for a, b, o in zip(samples[num], samples[den], off, strict=True)
                        if getattr(b, metric) - o > 0) or [r]
        verdict = "" if goal is None else ("  ok" if r <= goal else "  OVER GOAL")
        goal_s = f"(goal <= {goal:.2f})" if goal is not None else ""
        spread = f"   per round: median {statistics.median(paired):.2f}, {paired[0]:.2f} to {paired[-1]:.2f}"
        minus = f" (each less {start[0]})" if start else ""
        print(f"  {metric:<6} {num} / {den}{minus} = {r:5.2f} {goal_s}{verdict}{spread if runs > 1 else ''}")
        ratios.append({"num": num, "den": den, "metric": metric, "ratio": round(r, 3), "goal": goal,
                       "per_round": [round(x, 3) for x in paired], **({"less": start[0]} if start else {})})
    return {"scenario": name, "runs": runs, "load_average": [load0, load1], "median": med, "ratios": ratios}


def _spin() -> None:  # pragma: no cover - runs in a --busy load process until killed
    x = 0
    while True:
        x += 1


def start_busy(n: int) -> list[multiprocessing.Process]:
    """``n`` processes each spinning a core (pure Python, no memory traffic), like ``stress -c n``."""
    procs = [multiprocessing.get_context("fork").Process(target=_spin, daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    time.sleep(0.5)  # let them reach the loop before the first round
    return procs


def stop_busy(procs: list[multiprocessing.Process]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.join()


def show_stats(d: str) -> None:
    """One --stats run of the big model, so the phase breakdown sits beside the ratios."""
    cmd = [PY, "-m", "graphlint", "big100k.onnx", "--target", "trt", "-f", "json", "--stats"]
    proc = subprocess.run(cmd, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    print("\n== graphlint --stats big100k.onnx --target trt")
    print(proc.stderr.rstrip())


def precompile(*roots: str) -> None:
    """Byte-compile graphlint as a regular ``pip install`` does. An editable install in an
    environment with PYTHONDONTWRITEBYTECODE set (CI images often do) would otherwise
    recompile every graphlint module in every measured process, about 0.2 s each time,
    while onnx, the baseline, comes precompiled from its wheel."""
    import compileall

    for root in (os.path.dirname(HERE), *roots):
        for d in ("graphlint", "rules"):
            compileall.compile_dir(os.path.join(root, d), quiet=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="*", default=list(RATIOS), help=f"default: {' '.join(RATIOS)}")
    ap.add_argument("--models", default=os.path.join(HERE, "out"), help="folder make_models.py wrote")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--stats", action="store_true", help="also print graphlint --stats for big100k")
    ap.add_argument("--json", help="write medians and ratios to this file")
    ap.add_argument("--before", help="also time this source tree of graphlint (a checkout: graphlint/, rules/)")
    ap.add_argument("--doctor", help="also time onnx-doctor check (path of its executable)")
    ap.add_argument("--busy", action="store_true",
                    help="keep every other core busy (one spin process per core but one) during the rounds")
    args = ap.parse_args(argv)
    global BEFORE, DOCTOR
    BEFORE = compare_outputs.tree_path(args.before, os.path.join(HERE, "out", "before")) if args.before else None
    DOCTOR = os.path.abspath(args.doctor) if args.doctor else None
    d = os.path.abspath(args.models)
    if not all(os.path.exists(os.path.join(d, f"{m}.onnx")) for m in ("big100k", "dag100k")):
        raise SystemExit(f"no models in {d}: run bench/make_models.py --out {d} first")
    precompile(*([args.before] if args.before else []))
    n_busy = max(1, (os.cpu_count() or 1) - 1) if args.busy else 0
    mode = f"busy ({n_busy} spin process{'es' if n_busy > 1 else ''} on the other cores)" if n_busy else "idle"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f} "
          f"before the rounds, mode: {mode}")
    if n_busy:  # the wall goal with the other cores busy
        for ratios in RATIOS.values():
            ratios[:] = [(*r[:3], 1.3, *r[4:]) if r == _BIG[0] else r for r in ratios]
    busy = start_busy(n_busy) if n_busy else []
    try:
        results = [run_scenario(s, d, args.runs) for s in args.scenarios]
    finally:
        stop_busy(busy)
    print(f"mode: {mode}; load average {os.getloadavg()[0]:.1f} after the rounds (1-minute, counts the spin processes)")
    for r in results:
        r["mode"] = mode
    if args.stats:
        show_stats(d)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
