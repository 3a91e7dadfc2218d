"""The install users get: graphlint from a wheel in a fresh venv without extras (no torch, no sympy).

Run by .ci/run with that venv's python, from the repository root:

    python3 -m venv /tmp/plain && /tmp/plain/bin/pip install . && /tmp/plain/bin/python tests/plain_install.py

Lints the example model and the first model of every export pipeline (testmodels/pipelines/*.toml)
for each target with the installed ``graphlint`` command, and the example through the library API
(``graphlint.check``), and fails when a run exits other than 0/1
(2 is a usage or input error, anything else a crash) or a finding speaks of graphlint's environment
(a missing package, GL3009 about a tool) instead of the model. Prints ``N passed, N failed``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIPELINES = os.path.join(ROOT, "testmodels", "pipelines")
ENVIRONMENT = re.compile(r"sympy|onnxruntime\.tools|symbolic_shape_infer|No module named|ModuleNotFoundError|"
                         r"ImportError|pip install", re.I)


def models() -> list[str]:
    out = [os.path.join(ROOT, "testmodels", "examples", "tiny_vlm.onnx")]
    for name in sorted(os.listdir(PIPELINES)):
        if name.endswith(".toml"):
            with open(os.path.join(PIPELINES, name), "rb") as f:
                rows = tomllib.load(f).get("model", [])
            if rows:
                out.append(os.path.join(PIPELINES, name[:-5], rows[0]["file"]))
    return out


def main() -> int:
    exe = shutil.which("graphlint", path=os.path.dirname(sys.executable))
    assert exe, "graphlint is not installed in this venv"
    for banned in ("torch", "sympy"):
        try:
            __import__(banned)
        except ImportError:
            continue
        print(f"{banned} is importable: this is not a plain install")
        return 1
    passed = failed = 0
    for path in models():
        targets = ["openvino"] if path.endswith(".xml") else ["trt", "ort", "openvino"]
        for target in targets:
            t0 = time.perf_counter()
            run = subprocess.run([exe, path, "--target", target, "--format", "json"], capture_output=True,
                                 text=True, cwd=ROOT, timeout=600)
            seconds = time.perf_counter() - t0
            problems = []
            if run.returncode not in (0, 1):
                problems.append(f"exit {run.returncode}: {run.stderr.strip()[:300]}")
            else:
                report = json.loads(run.stdout)
                for res in report["models"]:
                    for f in res["findings"]:
                        if ENVIRONMENT.search(f["message"]) or f["rule_id"] == "GL9002":
                            problems.append(f"{f['rule_id']}: {f['message'][:200]}")
            if ENVIRONMENT.search(run.stderr):
                problems.append(f"stderr: {run.stderr.strip()[:200]}")
            rel = os.path.relpath(path, ROOT)
            if problems:
                failed += 1
                print(f"FAIL {rel} --target {target}: {problems[0]}")
            else:
                passed += 1
                print(f"ok   {rel} --target {target} (exit {run.returncode}, {seconds:.1f} s)")
    import graphlint  # the library API, as an export script calls it

    report = graphlint.check(models()[0], ["trt", "ort", "openvino"])
    said = [f.message for f in report.findings if ENVIRONMENT.search(f.message) or f.rule_id == "GL9002"]
    if report.failures or said:
        failed += 1
        print(f"FAIL graphlint.check: {(said or [report.failures[0].message])[0][:200]}")
    else:
        passed += 1
        print(f"ok   graphlint.check on the example: {len(report.errors)} errors over 3 targets")
    ok, why = deployment_folders(exe)
    passed, failed = passed + ok, failed + (not ok)
    print(f"{'ok  ' if ok else 'FAIL'} deployment folders: {why}")
    ok, why = scan_without_ray(exe)
    passed, failed = passed + ok, failed + (not ok)
    print(f"{'ok  ' if ok else 'FAIL'} graphlint scan without the ray extra: {why}")
    ok, why = confirm_on_the_engines(exe)
    passed, failed = passed + ok, failed + (not ok)
    print(f"{'ok  ' if ok else 'FAIL'} --confirm on the installed engines: {why}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def deployment_folders(exe: str) -> tuple[bool, str]:
    """Every VLM deployment folder of the corpus (testmodels/vlm) lints as a pipeline without
    transformers: the processor arithmetic is graphlint's own; nothing speaks of the environment."""
    vlm = os.path.join(ROOT, "testmodels", "vlm")
    folders = [os.path.join(vlm, "optimum_intel"), os.path.join(vlm, "hand")]
    run = subprocess.run([exe, *folders, "--target", "openvino", "--target", "ort", "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=900)
    if run.returncode not in (0, 1):
        return False, f"exit {run.returncode}: {run.stderr.strip()[:300]}"
    report = json.loads(run.stdout)
    pipes = {p["folder"] for p in report["pipelines"]}
    every = [f for res in report["models"] + report["pipelines"] for f in res["findings"]]
    said = [f for f in every if ENVIRONMENT.search(f["message"]) or f["rule_id"] == "GL9002"]
    if said:
        return False, f"{said[0]['rule_id']}: {said[0]['message'][:200]}"
    if len(pipes) < 10 or not any(f["rule_id"].startswith("GL8") for f in every):
        return False, f"{len(pipes)} pipelines, GL8 findings: {sum(f['rule_id'].startswith('GL8') for f in every)}"
    return True, f"{len(pipes)} pipelines linted for openvino and ort"


def scan_without_ray(exe: str) -> tuple[bool, str]:
    """``graphlint scan`` works on the local pool; ``--ray`` says to install the extra (exit 2)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "fleet.db")
        args = [exe, "scan", os.path.join(ROOT, "testmodels", "examples"), "--targets", "trt,ort", "--store", store]
        run = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=600)
        if run.returncode not in (0, 1) or "1 linted" not in run.stderr:
            return False, f"local scan: exit {run.returncode}: {run.stderr.strip()[:200]}"
        run = subprocess.run([*args, "--ray", "auto"], capture_output=True, text=True, cwd=ROOT, timeout=600)
        if run.returncode != 2 or "pip install 'graphlint[ray]'" not in run.stderr or "Traceback" in run.stderr:
            return False, f"--ray without Ray: exit {run.returncode}: {run.stderr.strip()[:200]}"
    return True, "local scan stored, --ray asks for graphlint[ray]"


def confirm_on_the_engines(exe: str) -> tuple[bool, str]:
    """``--confirm`` runs the example on the engines the install brought (ONNX Runtime and OpenVINO
    are dependencies), in their child processes, and TensorRT is skipped with a reason."""
    model = models()[0]
    run = subprocess.run([exe, model, "-t", "ort", "-t", "openvino", "-t", "trt", "--confirm", "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    if run.returncode not in (0, 1) or "Traceback" in run.stderr:
        return False, f"exit {run.returncode}: {run.stderr.strip()[:300]}"
    records = {res["target"].split("@")[0]: res.get("confirm") or {} for res in json.loads(run.stdout)["models"]}
    ran = [t for t in ("ort", "openvino") if records.get(t, {}).get("points")
           and all(p["ok"] for p in records[t]["points"])]
    if ran != ["ort", "openvino"] or not records.get("trt", {}).get("skipped"):
        return False, f"confirm records: {records}"
    return True, f"ran on {', '.join(records[t]['engine'] + ' ' + records[t]['version'] for t in ran)}; " \
                 f"trt: {records['trt']['skipped']}"


if __name__ == "__main__":
    sys.exit(main())
