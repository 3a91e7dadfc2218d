"""Loaders: turn a model path into the normalized IR (graphlint.ir.Model)."""

from __future__ import annotations

import os

from graphlint.errors import InputError
from graphlint.ir import Model

SUFFIXES = {".onnx": "onnx", ".xml": "openvino"}


def load_model(path: str) -> Model:
    """Load ``path`` by its suffix; raise InputError with one clear line when it cannot be read."""
    if os.path.isdir(path):
        raise InputError(path, "is a directory, not a model file")
    if not os.path.exists(path):
        raise InputError(path, "no such file")
    kind = SUFFIXES.get(os.path.splitext(path)[1].lower())
    if kind == "onnx":
        from graphlint.load import onnx_loader

        return onnx_loader.load(path)
    if kind == "openvino":
        from graphlint.load import openvino_loader

        return openvino_loader.load(path)
    raise InputError(path, "unknown model format (expected .onnx or OpenVINO IR .xml)")
