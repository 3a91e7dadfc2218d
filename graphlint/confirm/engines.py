"""Which installed engine runs a target, found without importing any engine.

A target is run by the engine it names, at the device it names, when that engine is installed at
the target's version (the major.minor of the profile: ``ort@1.20`` is not confirmed on an installed
ONNX Runtime 1.32, which would settle nothing about 1.20). OpenVINO runs on its CPU plugin only
(a GPU or NPU target is not confirmed on this machine's CPU), TensorRT only where a CUDA GPU is.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from importlib import metadata

from graphlint.target import Target

# target name -> runner module in graphlint.runners
RUNNERS = {"ort": "onnxruntime", "openvino": "openvino", "trt": "tensorrt"}
_DISTRIBUTIONS = {
    "onnxruntime": ("onnxruntime", "onnxruntime-openvino", "onnxruntime-gpu", "onnxruntime-directml"),
    "openvino": ("openvino",),
    "tensorrt": ("tensorrt", "tensorrt-cu12", "tensorrt-cu13"),
}
DEVICES = {"ort": ("", "cpu"), "openvino": ("", "cpu"), "trt": ("", "gpu")}


@dataclass(frozen=True)
class Engine:
    runner: str  # module name in graphlint.runners
    version: str
    device: str

    @property
    def title(self) -> str:
        return f"{self.runner} {self.version} ({self.device.upper()})"


def installed(runner: str) -> str | None:
    """The installed version of an engine's Python package, without importing it."""
    for dist in _DISTRIBUTIONS[runner]:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def has_gpu() -> bool:
    return os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi") is not None


def _major_minor(v: str) -> str:
    return ".".join(v.split(".")[:2])


def engine_for(target: Target) -> tuple[Engine | None, str]:
    """(the engine that runs ``target`` here, or None and why not)."""
    runner = RUNNERS.get(target.name)
    if runner is None:
        return None, f"graphlint has no runner for target {target.name}"
    version = installed(runner)
    if version is None:
        return None, f"{runner} is not installed"
    if target.device and target.device not in DEVICES[target.name]:
        return None, f"{target.title} is not on this machine ({runner} runs here on {DEVICES[target.name][1].upper()} only)"
    if runner == "tensorrt" and not has_gpu():
        return None, "tensorrt is installed but this machine has no CUDA GPU"
    if _major_minor(version) != _major_minor(target.version):
        return None, (f"the installed {runner} is {version}, not the target's {target.version} "
                      f"(confirm on {target.name}@{_major_minor(version)}, or install {target.version})")
    return Engine(runner, version, DEVICES[target.name][1]), ""
