"""Without ``--confirm`` nothing of it runs: linting (the Python API, and ``graphlint check``) imports no
engine (ONNX Runtime, OpenVINO, TensorRT) and none of graphlint's engine runners (graphlint.runners.onnxruntime, .openvino, .tensorrt)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import ROOT
from tests.models import relu_model, save

IR = os.path.join(ROOT, "testmodels", "pipelines", "optimum_intel", "vit", "openvino_model.xml")
EXAMPLE = os.path.join(ROOT, "testmodels", "examples", "tiny_vlm.onnx")

_PROBE = """
import json, sys
{lint}
mods = sorted(m for m in sys.modules if m.split('.')[0] in ('onnxruntime', 'openvino', 'tensorrt')
              or m in ('graphlint.runners.tensorrt', 'graphlint.runners.onnxruntime', 'graphlint.runners.openvino'))
print(json.dumps(mods))
"""


def _imported(lint: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(lint=lint)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_python_api_lint_without_confirm_imports_no_engine(tmp_path):
    relu = save(relu_model(), str(tmp_path), "relu.onnx")
    lint = (
        "import graphlint\n"
        f"for path in ({relu!r}, {EXAMPLE!r}):\n"
        "    assert graphlint.check(path, target=['ort', 'openvino', 'trt']).run.results\n"
        f"assert graphlint.check({IR!r}, target='openvino').run.results\n"
    )
    assert _imported(lint) == []


def test_check_command_without_confirm_imports_no_engine(tmp_path):
    relu = save(relu_model(), str(tmp_path), "relu.onnx")
    lint = (
        "from graphlint.cli import cli\n"
        "try:\n"
        f"    cli.main(['check', {relu!r}, {EXAMPLE!r}, '--target', 'ort', '--target', 'openvino', '--target', 'trt',\n"
        "              '--format', 'json', '-o', {out!r}], prog_name='graphlint', standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
    ).replace("{out!r}", repr(str(tmp_path / "report.json")))
    assert _imported(lint) == []
    assert json.loads((tmp_path / "report.json").read_text())["models"]
