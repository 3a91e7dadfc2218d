"""The GitHub Action (action.yml at the root), its shell steps run here as the runner would.

The runner runs each `shell: bash` step as `bash --noprofile --norc -eo pipefail`, gives a composite action GITHUB_ACTION_PATH (the action's checkout) and GITHUB_OUTPUT
(a file of name=value lines) and expands ``${{ inputs.X }}`` / ``${{ steps.ID.outputs.X }}``; this
test does the same, runs the install step into a fresh venv (the action's own version, from this
checkout), then the lint and fail steps on the example model, and checks the SARIF it writes
against the SARIF 2.1.0 schema, the annotations mode, and the exit codes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import jsonschema
import pytest
import yaml

from tests.conftest import SARIF_SCHEMA

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join("testmodels", "examples", "tiny_vlm.onnx")
_EXPR = re.compile(r"\$\{\{\s*(inputs|steps\.(\w+)\.outputs)\.([\w-]+)\s*\}\}")


def action() -> dict:
    with open(os.path.join(ROOT, "action.yml")) as f:
        return yaml.safe_load(f)


def expand(text: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
    def value(m: re.Match) -> str:
        return inputs[m.group(3)] if m.group(1) == "inputs" else outputs.get(m.group(2), {}).get(m.group(3), "")

    return _EXPR.sub(value, text)


def run_steps(tmp_path, venv_bin: str, given: dict[str, str]) -> tuple[dict[str, dict[str, str]], list]:
    spec = action()
    inputs = {k: v.get("default", "") for k, v in spec["inputs"].items()} | given
    outputs: dict[str, dict[str, str]] = {}
    ran = []
    for i, step in enumerate(spec["runs"]["steps"]):
        if "uses" in step or "Install" in step["name"]:
            ran.append((step, None))
            continue
        out_file = tmp_path / f"out{i}"
        out_file.write_text("")
        env = {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}", "GITHUB_ACTION_PATH": ROOT,
               "GITHUB_OUTPUT": str(out_file), **{k: expand(str(v), inputs, outputs)
                                                   for k, v in step.get("env", {}).items()}}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", expand(step["run"], inputs, outputs)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        if "id" in step:
            outputs[step["id"]] = dict(line.split("=", 1) for line in out_file.read_text().splitlines() if line)
        ran.append((step, proc))
    return outputs, ran


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> str:
    """The install step, run as written, into a fresh venv (not the test's own environment)."""
    venv = tmp_path_factory.mktemp("action-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_dir = os.path.join(venv, "bin")
    (step,) = [s for s in action()["runs"]["steps"] if "Install" in s.get("name", "")]
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GITHUB_ACTION_PATH": ROOT}
    env.pop("VIRTUAL_ENV", None)
    subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=ROOT, env=env, check=True, capture_output=True,
                   timeout=900)
    assert os.path.exists(os.path.join(bin_dir, "graphlint"))
    return bin_dir


def test_docs_recipe_uses_the_action_with_its_inputs():
    from tests.test_ci_recipes_docs import recipe

    wf = yaml.safe_load(recipe("github-action"))
    (step,) = [s for s in wf["jobs"]["graphlint"]["steps"] if s.get("uses", "").startswith("graphlint/graphlint@")]
    assert set(step["with"]) <= set(action()["inputs"]) and "paths" in step["with"]
    assert wf["permissions"]["security-events"] == "write"


def test_action_declares_its_inputs_and_uploads_sarif():
    spec = action()
    assert spec["runs"]["using"] == "composite"
    assert set(spec["inputs"]) == {"paths", "targets", "fail-level", "config", "sarif"}
    (upload,) = [s for s in spec["runs"]["steps"] if s.get("uses", "").startswith("github/codeql-action/upload-sarif")]
    assert "always()" in upload["if"] and upload["with"]["sarif_file"] == "${{ inputs.sarif }}"


def test_action_writes_valid_sarif_and_fails_on_errors(tmp_path, installed):
    sarif = str(tmp_path / "graphlint.sarif")
    outputs, ran = run_steps(tmp_path, installed, {"paths": EXAMPLE, "targets": "trt ort", "sarif": sarif})
    lint = next(p for s, p in ran if s.get("id") == "lint")
    assert lint.returncode == 0, lint.stderr  # the lint step records the status, so the upload still runs
    assert outputs["lint"]["status"] == "1" and outputs["lint"]["sarif"] == sarif
    with open(sarif) as f:
        doc = json.load(f)
    with open(SARIF_SCHEMA) as f:
        jsonschema.Draft4Validator(json.load(f)).validate(doc)
    results = doc["runs"][0]["results"]
    assert results and {r["level"] for r in results} >= {"error"}
    assert "TensorRT" in lint.stdout  # the text report in the log, for people
    fail = ran[-1][1]
    assert fail.returncode == 1


def test_action_annotations_mode_and_fail_level(tmp_path, installed):
    outputs, ran = run_steps(tmp_path, installed, {"paths": "testmodels/examples/*.onnx", "targets": "ort",
                                                   "sarif": "", "fail-level": "error"})
    lint = next(p for s, p in ran if s.get("id") == "lint")
    assert outputs["lint"]["sarif"] == "" and re.search(r"^::(warning|notice|error) ", lint.stdout, re.M)
    assert outputs["lint"]["status"] == "0" and ran[-1][1].returncode == 0  # the example runs on ort
    outputs, ran = run_steps(tmp_path, installed, {"paths": "no/such/*.onnx", "sarif": ""})
    lint = next(p for s, p in ran if s.get("id") == "lint")
    assert lint.returncode == 2 and "no model matches" in lint.stderr
