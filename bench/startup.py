"""Import and startup time of graphlint as users meet it, against baselines from the same run.

    python bench/startup.py [--rounds 7] [--python PATH]

Each case is a fresh interpreter (what a CI step or an editor integration pays), timed by wall
clock over ``--rounds`` alternating rounds, median reported, with ratios to ``python -c pass`` and
to ``python -c "import onnx"`` (the one import nothing can avoid). ``--python`` measures another
environment, e.g. the plain-install venv .ci/run builds (tests/plain_install.py). Prints; asserts
nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "testmodels", "examples", "tiny_vlm.onnx")


def cases(python: str) -> dict[str, list[str]]:
    graphlint = os.path.join(os.path.dirname(python), "graphlint")
    return {
        "python -c pass": [python, "-c", "pass"],
        "import onnx": [python, "-c", "import onnx"],
        "import graphlint": [python, "-c", "import graphlint"],
        "graphlint.check (import)": [python, "-c", "from graphlint import check"],
        "graphlint --version": [graphlint, "--version"],
        "graphlint example --target ort": [graphlint, EXAMPLE, "--target", "ort"],
        "graphlint.check(example, 'ort')": [python, "-c", f"import graphlint; graphlint.check({EXAMPLE!r}, 'ort')"],
    }


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args(argv)
    runs = cases(args.python)
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for name, cmd in runs.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False)
            times[name].append(time.perf_counter() - t0)
    base, onnx_t = statistics.median(times["python -c pass"]), statistics.median(times["import onnx"])
    print(f"{args.python}: median of {args.rounds} rounds")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"  {name:36s} {m * 1000:7.0f} ms   {m / base:5.1f}x python   {m / onnx_t:5.2f}x import onnx")


if __name__ == "__main__":
    main(sys.argv[1:])
