"""Where graphlint's CPU time goes on the bench graphs, in CPU seconds (robust to other load).

Wall-clock phase times (``graphlint check --stats``) mean little on a machine others share. This
script reports CPU time instead, per graph:

* the parent: ``graphlint MODEL --target trt --stats`` with the parent's ``time.perf_counter``
  swapped for ``time.process_time``, so each phase shows the CPU it took (the wait for the
  child then shows about 0);
* the child's steps (what ``graphlint.load.inference`` runs there), each timed in-process with
  ``time.process_time``: ONNX shape inference file to file (with data propagation and without),
  reading the inferred model back, decoding its types, and onnx.checker on the file's bytes;
* the same work done by the baseline (``onnx.load`` + ``check_model`` + ``infer_shapes(data_prop=True)``);
* a floor for any IR: one pass over the main graph's nodes reading op type, domain, inputs and
  outputs, numbering the value names (no objects made).

    python bench/breakdown.py                  # big100k dag100k llm64 from bench/out
    python bench/breakdown.py llm64 --models /tmp/m

Run it with the source tree to measure first on PYTHONPATH (see compare_outputs.tree_path).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# The parent with a CPU clock: every phase graphlint --stats prints is then CPU seconds.
PARENT = (
    "import sys, time\n"
    "time.perf_counter = time.process_time\n"
    "sys.argv = ['graphlint', *sys.argv[1:]]\n"
    "from graphlint.cli import main\n"
    "main()\n"
)

CHILD = r'''
import os, sys, tempfile, time
import onnx
from graphlint.load.onnx_types import decode_types
path = sys.argv[1]
onnx.defs.has("Add")
def t(label, fn):
    c = time.process_time()
    r = fn()
    print(f"  {label:<52} {1000 * (time.process_time() - c):8.1f} ms")
    return r
d = tempfile.mkdtemp()
out = os.path.join(d, "i.onnx")
t("child: infer_shapes_path strict, data_prop", lambda: onnx.shape_inference.infer_shapes_path(
    path, out, check_type=True, strict_mode=True, data_prop=True))
t("child: infer_shapes_path strict, no data_prop", lambda: onnx.shape_inference.infer_shapes_path(
    path, out + "2", check_type=True, strict_mode=True))
m = t("child: onnx.load_model(inferred)", lambda: onnx.load_model(out, load_external_data=False))
t("child: decode_types", lambda: decode_types(m))
data = open(path, "rb").read()
t("child: onnx.checker.check_model(bytes)", lambda: onnx.checker.check_model(data, full_check=False))
p = t("baseline: onnx.load(load_external_data=False)", lambda: onnx.load(path, load_external_data=False))
t("baseline: check_model(model)", lambda: onnx.checker.check_model(p))
t("baseline: infer_shapes(model, data_prop=True)", lambda: onnx.shape_inference.infer_shapes(p, data_prop=True))
def read_once():
    ids = {}
    for n in p.graph.node:
        n.op_type, n.domain
        for x in n.input[:]:
            ids.setdefault(x, len(ids))
        for x in n.output[:]:
            ids.setdefault(x, len(ids))
t("floor: the nodes read once, value names numbered", read_once)
'''


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("graphs", nargs="*", default=["big100k", "dag100k", "llm64"])
    ap.add_argument("--models", default=os.path.join(HERE, "out"), help="folder make_models.py wrote")
    args = ap.parse_args(argv)
    d = os.path.abspath(args.models)
    print(f"load average {os.getloadavg()[0]:.1f}")
    for g in args.graphs:
        model = f"{g}.onnx"
        print(f"\n== {g}: parent, CPU ms per phase (graphlint --stats with a CPU clock)")
        proc = subprocess.run([sys.executable, "-c", PARENT, model, "--target", "trt", "-f", "json", "-o", os.devnull,
                               "--stats"], cwd=d, capture_output=True, text=True)
        print(proc.stderr.rstrip())
        print(f"== {g}: child steps and baseline, CPU ms each (in-process)")
        proc = subprocess.run([sys.executable, "-c", CHILD, model], cwd=d, capture_output=True, text=True)
        print(proc.stdout.rstrip() or proc.stderr.rstrip())
    print(f"\nload average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
