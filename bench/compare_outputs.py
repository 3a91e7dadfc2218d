"""Run two source trees of graphlint over one set of models and compare every output byte for byte.

A refactor that must keep every report unchanged is checked here: the same command lines run
with each tree's ``graphlint`` and ``graphlint_rules`` first on ``PYTHONPATH`` (the installed
interpreter and its libraries are shared), from the same neutral working folder, so any
difference in stdout, stderr or exit code is the trees' own.

    python bench/compare_outputs.py run /work/wt/arch-base /tmp/cmp/base     # a checkout's outputs
    python bench/compare_outputs.py run . /tmp/cmp/new
    python bench/compare_outputs.py diff /tmp/cmp/base /tmp/cmp/new           # exit 1 on a difference

The comparison set: the bench models (``bench/make_models.py``, in ``--bench``), every model the
testmodels/ builders cached in ``testmodels/out`` (run the test suite once to build them), every
``--node-step``-th ONNX backend node test model from the same cache, a few malformed files made
here, checked with ``-t trt -t ort -t openvino`` (OpenVINO IR: ``-t openvino -t openvino@npu``)
in json, sarif and text; the test models also with each target alone (json), and the other
subcommands (rules, explain, config, baseline, report, fix --diff) on a few of them.
"""

from __future__ import annotations

import argparse
import filecmp
import glob
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FORMATS = ("json", "sarif", "text")
ONNX_TARGETS = ("-t", "trt", "-t", "ort", "-t", "openvino")
OV_TARGETS = ("-t", "openvino", "-t", "openvino@npu")
BATCH = 40  # models per graphlint call (the big bench models go one per call)
RUN = "import sys; sys.argv[0] = 'graphlint'; from graphlint.cli import main; main()"


def tree_path(checkout: str, workdir: str) -> str:
    """A folder holding only ``graphlint`` and ``graphlint_rules`` of ``checkout`` (symlinks),
    to put first on PYTHONPATH: the checkout's own folder would also shadow the libraries."""
    shim = os.path.join(workdir, ".tree")
    os.makedirs(shim, exist_ok=True)
    for name, src in (("graphlint", "graphlint"), ("graphlint_rules", "rules")):
        link = os.path.join(shim, name)
        if os.path.islink(link):
            os.unlink(link)
        os.symlink(os.path.join(os.path.abspath(checkout), src), link)
    return shim


def malformed(folder: str) -> list[str]:
    """A few files every tree must refuse the same way (exit 2, one line)."""
    os.makedirs(folder, exist_ok=True)
    out = []
    for name, data in (("empty.onnx", b""), ("text.onnx", b"not a model\n"), ("garbage.onnx", bytes(range(256)) * 8),
                       ("bad.xml", b"<net><layers><layer id='0' type='Parameter'/></layers>")):
        path = os.path.join(folder, name)
        with open(path, "wb") as f:
            f.write(data)
        out.append(path)
    sys.path.insert(0, REPO)
    from tests import models
    from tests.hostile_support import nested_if_model

    for depth in (3, 40):
        path = os.path.join(folder, f"nested_if_{depth}.onnx")
        with open(path, "wb") as f:
            f.write(nested_if_model(depth))
        out.append(path)
    for fn in (models.relu_model, models.two_bad_nodes, models.contrib_model):
        out.append(models.save(fn(), folder, f"{fn.__name__}.onnx"))
    out.append(models.external_data_model(folder, "../outside.bin"))
    return sorted(out)


def model_set(bench: str, cache: str, node_step: int, scratch: str) -> dict[str, list[str]]:
    """Groups of model paths: name -> paths (absolute, sorted)."""
    groups: dict[str, list[str]] = {}
    for name in ("big100k", "dag100k", "llm64"):
        path = os.path.join(bench, f"{name}.onnx")
        if os.path.exists(path):
            groups[f"bench-{name}"] = [path]
    small = [os.path.join(bench, f"{n}.onnx") for n in ("w0", "w200m", "w2g", "ci0", "ci1", "ci2", "ci3", "ci4", "ci5")]
    groups["bench-small"] = [p for p in small if os.path.exists(p)]
    groups["bench-ov"] = [p for p in (os.path.join(bench, "ov_large.xml"),) if os.path.exists(p)]
    tm = [p for p in sorted(glob.glob(os.path.join(cache, "*", "**", "*.*"), recursive=True))
          if p.endswith((".onnx", ".xml")) and "/onnx-backend-node-" not in p]
    groups["testmodels-onnx"] = [p for p in tm if p.endswith(".onnx")]
    groups["testmodels-ov"] = [p for p in tm if p.endswith(".xml")]
    nodes = sorted(glob.glob(os.path.join(cache, "onnx-backend-node-*", "*.onnx")))
    groups["node-tests"] = nodes[::node_step]
    groups["malformed"] = malformed(os.path.join(scratch, "malformed"))
    return {k: v for k, v in groups.items() if v}


def commands(groups: dict[str, list[str]], scratch: str) -> list[tuple[str, list[str]]]:
    """(output name, graphlint arguments) for every call."""
    cmds: list[tuple[str, list[str]]] = []
    for group, paths in groups.items():
        for kind in ("onnx", "ov"):
            mine = [p for p in paths if p.endswith(".onnx" if kind == "onnx" else ".xml")]
            if group == "malformed":
                mine = [p for p in paths if kind == "onnx"]  # each file on its own, below
            targets = ONNX_TARGETS if kind == "onnx" else OV_TARGETS
            for k in range(0, len(mine), BATCH):
                chunk = mine[k:k + BATCH]
                for fmt in FORMATS:
                    cmds.append((f"{group}-{kind}{k // BATCH}.{fmt}", ["check", *chunk, *targets, "-f", fmt,
                                                                        "--no-color", "--repo-root", REPO]))
    for path in groups.get("malformed", []):
        cmds.append((f"malformed-{os.path.basename(path)}.json", ["check", path, "-f", "json", "--repo-root", REPO]))
    tm = groups.get("testmodels-onnx", [])
    for target in ("trt", "ort", "openvino"):  # each target alone: the same findings as beside others
        for k in range(0, len(tm), BATCH):
            cmds.append((f"single-{target}{k // BATCH}.json", ["check", *tm[k:k + BATCH], "-t", target, "-f", "json",
                                                               "--repo-root", REPO]))
    for fmt in ("text", "json", "markdown"):
        cmds.append((f"rules.{fmt}", ["rules", "-f", fmt]))
    for rule in ("GL0001", "GL1004", "GL3001", "unknown-domain"):
        cmds.append((f"explain-{rule}.txt", ["explain", rule]))
    workflow = [p for p in groups.get("testmodels-onnx", []) if "/workflow-" in p]
    fixes = [p for p in groups.get("testmodels-onnx", []) if "/fix-" in p]
    if workflow:
        cmds.append(("config.json", ["config", workflow[0], "-t", "trt", "--select", "GL1,drift", "-f", "json"]))
        base = os.path.join(scratch, "baseline.json")
        cmds.append(("baseline.txt", ["baseline", *workflow, "-t", "trt", "-t", "ort", "-o", base]))
        cmds.append(("baseline-file.json", ["__cat__", base]))
        cmds.append(("with-baseline.json", ["check", *workflow, "-t", "trt", "-t", "ort", "--baseline", base,
                                            "-f", "json"]))
        html = os.path.join(scratch, "report.html")
        cmds.append(("report.txt", ["report", *workflow[:2], "-t", "trt", "-o", html]))
        cmds.append(("report-file.html", ["__cat__", html]))
    for path in fixes:
        cmds.append((f"fix-{_slug(path)}.json", ["fix", path, "--diff", "-f", "json"]))
    return cmds


def _slug(path: str) -> str:
    parts = path.split(os.sep)
    return "_".join(parts[-2:]).replace(".", "_")


def run(args: argparse.Namespace) -> int:
    out = os.path.abspath(args.out)
    # Paths in reports must be the same for every tree: one scratch folder (made files, outputs
    # of baseline and report, the working folder), emptied first.
    scratch = os.path.abspath(args.scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    cwd = os.path.join(scratch, "cwd")
    for d in (out, scratch, cwd):
        os.makedirs(d, exist_ok=True)
    shim = tree_path(args.checkout, out)
    groups = model_set(os.path.abspath(args.bench), os.path.abspath(args.cache), args.node_step, scratch)
    if args.models_from:  # the same models as an earlier run (the cache may have grown since)
        with open(args.models_from) as f:
            groups = json.load(f)
    with open(os.path.join(out, "models.json"), "w") as f:
        json.dump(groups, f, indent=1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHLINT_")}
    env.update(PYTHONPATH=shim, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONHASHSEED="0")
    cmds = commands(groups, scratch)
    if args.only:
        cmds = [c for c in cmds if any(c[0].startswith(o) for o in args.only)]
    t_all = time.perf_counter()
    for i, (name, argv) in enumerate(cmds, 1):
        t0 = time.perf_counter()
        if argv[0] == "__cat__":
            proc = subprocess.CompletedProcess(argv, 0, _read(argv[1]), b"")
        else:
            proc = subprocess.run([args.python, "-c", RUN, *argv], cwd=cwd, env=env, capture_output=True)
        with open(os.path.join(out, name), "wb") as f:
            f.write(proc.stdout)
        with open(os.path.join(out, name + ".stderr"), "wb") as f:
            f.write(proc.stderr + f"\nexit {proc.returncode}\n".encode())
        print(f"[{i}/{len(cmds)}] {name}: exit {proc.returncode}, {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"{len(cmds)} calls in {time.perf_counter() - t_all:.0f} s; outputs in {out}")
    return 0


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return f"(missing: {e})".encode()


def diff(args: argparse.Namespace) -> int:
    a, b = os.path.abspath(args.a), os.path.abspath(args.b)
    names = sorted({n for d in (a, b) for n in os.listdir(d) if not n.startswith(".") and n != "models.json"})
    differ = [n for n in names if not (os.path.exists(os.path.join(a, n)) and os.path.exists(os.path.join(b, n))
                                       and filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False))]
    for n in differ:
        print(f"differs: {n}")
    print(f"{len(names) - len(differ)} of {len(names)} outputs byte-identical")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a checkout over the comparison set")
    r.add_argument("checkout", help="source checkout (holding graphlint/ and rules/)")
    r.add_argument("out", help="folder for the outputs")
    r.add_argument("--python", default=sys.executable, help="interpreter with graphlint's dependencies")
    r.add_argument("--bench", default=os.path.join(HERE, "out"), help="bench/make_models.py's folder")
    r.add_argument("--cache", default=os.path.join(REPO, "testmodels", "out"), help="testmodels cache")
    r.add_argument("--node-step", type=int, default=2, help="take every N-th ONNX backend node test")
    r.add_argument("--only", nargs="*", help="output name prefixes to run")
    r.add_argument("--models-from", help="models.json of an earlier run: compare exactly its models")
    r.add_argument("--scratch", default="/tmp/graphlint-compare", help="scratch folder, the same for every tree")
    d = sub.add_parser("diff", help="compare two output folders byte for byte")
    d.add_argument("a")
    d.add_argument("b")
    args = ap.parse_args(argv)
    return run(args) if args.cmd == "run" else diff(args)


if __name__ == "__main__":
    sys.exit(main())
