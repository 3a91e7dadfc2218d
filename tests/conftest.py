"""Shared fixtures: run the CLI in-process or as a real subprocess, validate SARIF."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("GRAPHLINT_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
SARIF_SCHEMA = os.path.join(SHARED, "reference", "sarif-schema-2.1.0.json")


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


def run_cli(*args: str, cwd: str | None = None, timeout: float = 300) -> CliResult:
    """Run graphlint as users do: a separate process, real exit code, real stderr."""
    proc = subprocess.run([sys.executable, "-m", "graphlint", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=timeout)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def findings_every_target(path: str, *extra: str) -> list[tuple[str, str, str]]:
    """(rule, severity, message) of every finding for ``-t trt -t ort -t openvino``, sorted, from a
    real process: a threaded one (pytest's) never forks ONNX inference into a child."""
    r = run_cli(path, "-t", "trt", "-t", "ort", "-t", "openvino", "-f", "json", *extra, timeout=600)
    assert r.code in (0, 1), r.err[-2000:]
    return sorted((f["rule_id"], f["severity"], f["message"]) for m in r.json()["models"] for f in m["findings"])


@pytest.fixture
def cli():
    return run_cli


def validate_sarif(doc: dict) -> None:
    """Validate against the SARIF 2.1.0 schema (Draft 4) from ../shared/reference."""
    import jsonschema

    with open(SARIF_SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft4Validator(schema).validate(doc)


@pytest.fixture
def sarif_validator():
    return validate_sarif


def earlier_engine_python(engine: str) -> str:
    """The interpreter of the earlier release's pinned venv (testmodels/engine_venvs.sh makes them):
    the test skips without it locally and fails in CI (CI=true), which must have it."""
    from testmodels.engine_versions import VENVS

    python = os.path.join(VENVS[engine], "bin", "python")
    if not os.path.exists(python):
        why = f"{VENVS[engine]} is missing: bash testmodels/engine_venvs.sh makes it"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return python
