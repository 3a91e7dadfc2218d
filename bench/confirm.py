"""What ``--confirm`` costs: seconds per model against what a user would run by hand.

The baselines are a fresh process that loads the model on the engine and runs it once (ONNX
Runtime: ``InferenceSession`` + ``run``; OpenVINO: ``read_model`` + ``compile_model`` + one
inference), on zeros at the declared shape (symbolic dims 1 on axis 0, else 8). graphlint's
confirm cost is ``graphlint check --confirm`` minus ``graphlint check`` on the same model and
target: the engine children, the feeds, the verdicts. Confirm runs every point of its plan (two
sample sizes when nobody said which are fed), so it does more than one run; the goal is that it
costs at most 1.5x the baseline. Commands run interleaved, ``--runs`` rounds, medians reported.

    python bench/make_models.py --only ci0 w200m     # models (if not there yet)
    python bench/confirm.py                          # the default models, 5 rounds
    python bench/confirm.py --runs 3 MODEL.onnx ...
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from run import HERE, PY, measure, precompile

ROOT = os.path.dirname(HERE)
ORT_RUN = (
    "import sys, numpy as np, onnxruntime as ort\n"
    "s = ort.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider'])\n"
    "T = {'tensor(float)': np.float32, 'tensor(int64)': np.int64, 'tensor(int32)': np.int32,\n"
    "     'tensor(bool)': np.bool_, 'tensor(float16)': np.float16, 'tensor(uint8)': np.uint8}\n"
    "f = {i.name: np.zeros([d if isinstance(d, int) else (1 if a == 0 else 8) for a, d in enumerate(i.shape)],\n"
    "                      T[i.type]) for i in s.get_inputs()}\n"
    "s.run(None, f)\n"
)
OV_RUN = (
    "import sys, numpy as np, openvino as ov\n"
    "c = ov.Core(); m = c.compile_model(c.read_model(sys.argv[1]), 'CPU')\n"
    "f = {}\n"
    "for p in m.inputs:\n"
    "    ps = p.get_partial_shape()\n"
    "    f[p] = np.zeros([d.get_length() if d.is_static else (1 if a == 0 else 8) for a, d in enumerate(ps)],\n"
    "                    p.get_element_type().to_dtype())\n"
    "m.create_infer_request().infer(f)\n"
)
DEFAULT = [os.path.join(ROOT, "testmodels", "examples", "tiny_vlm.onnx"),
           os.path.join(HERE, "out", "ci0.onnx"), os.path.join(HERE, "out", "w200m.onnx")]
GOAL = 1.5


def commands(model: str) -> dict[str, list[str]]:
    gl = [PY, "-m", "graphlint", model, "-f", "json"]
    return {
        "ort session+run": [PY, "-c", ORT_RUN, model],
        "openvino compile+run": [PY, "-c", OV_RUN, model],
        "graphlint ort": [*gl, "--target", "ort"],
        "graphlint ort --confirm": [*gl, "--target", "ort", "--confirm"],
        "graphlint openvino": [*gl, "--target", "openvino"],
        "graphlint openvino --confirm": [*gl, "--target", "openvino", "--confirm"],
    }


def bench(model: str, runs: int) -> dict:
    cmds = commands(model)
    samples: dict[str, list] = {k: [] for k in cmds}
    for _ in range(runs):
        for label, cmd in cmds.items():
            samples[label].append(measure(cmd, os.path.dirname(model) or "."))
    med = {k: statistics.median(s.wall for s in v) for k, v in samples.items()}
    cpu = {k: statistics.median(s.cpu for s in v) for k, v in samples.items()}
    print(f"\n== {os.path.relpath(model, ROOT)} (median of {runs}; load average {os.getloadavg()[0]:.1f})")
    for k, v in med.items():
        print(f"  {k:<30} wall {v:7.2f} s   cpu {cpu[k]:7.2f} s")
    out = {"model": os.path.relpath(model, ROOT), "median": med, "cpu": cpu, "ratios": {}, "cpu_ratios": {}}
    for engine, base in (("ort", "ort session+run"), ("openvino", "openvino compile+run")):
        cost = med[f"graphlint {engine} --confirm"] - med[f"graphlint {engine}"]
        paired = sorted((a.wall - b.wall) / c.wall for a, b, c in zip(
            samples[f"graphlint {engine} --confirm"], samples[f"graphlint {engine}"], samples[base], strict=True))
        r = cost / med[base]
        # CPU seconds (the process and its children): what the wall time would be on an idle machine
        rc = (cpu[f"graphlint {engine} --confirm"] - cpu[f"graphlint {engine}"]) / cpu[base]
        verdict = "ok" if r <= GOAL else "OVER GOAL"
        print(f"  confirm cost {engine:<9} {cost:6.2f} s = {r:4.2f}x {base} (goal <= {GOAL})  {verdict}"
              f"   per round: median {statistics.median(paired):.2f}, {paired[0]:.2f} to {paired[-1]:.2f};"
              f"   cpu {rc:4.2f}x")
        out["ratios"][engine] = round(r, 3)
        out["cpu_ratios"][engine] = round(rc, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=DEFAULT)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", help="write medians and ratios to this file")
    args = ap.parse_args(argv)
    precompile()
    missing = [m for m in args.models if not os.path.exists(m)]
    if missing:
        print(f"missing: {', '.join(missing)} (python bench/make_models.py --only ci0 w200m)", file=sys.stderr)
        return 2
    results = [bench(os.path.abspath(m), args.runs) for m in args.models]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
