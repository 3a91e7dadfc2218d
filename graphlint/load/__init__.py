"""Loaders: turn a model path into the normalized IR (graphlint.ir.Model)."""

from __future__ import annotations

import os
import stat

from graphlint.errors import InputError
from graphlint.ir import Model
from graphlint.load.files import os_problem

SUFFIXES = {".onnx": "onnx", ".xml": "openvino"}


def load_model(path: str, defer_types: bool = False) -> Model:
    """Load ``path`` by its suffix; raise InputError with one clear line when it cannot be read.

    ``defer_types``: an ONNX model whose shape inference runs in a forked child is returned
    before the child finishes; values other than main-graph inputs and constants may lack
    their dtype/shape until ``model.ready()`` is called (OpenVINO models are always ready).
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError) as e:  # also ENOTDIR, ELOOP, ENAMETOOLONG, NUL in path
        raise InputError(path, os_problem(e)) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(path, "is a directory, not a model file")
    if not stat.S_ISREG(st.st_mode):
        # A FIFO would block the read forever and /dev/zero never ends: regular files only.
        raise InputError(path, "is not a regular file (device, FIFO or socket)")
    kind = SUFFIXES.get(os.path.splitext(path)[1].lower())
    if kind == "onnx":
        from graphlint.load import onnx_loader

        return onnx_loader.load(path, defer_types=defer_types)
    if kind == "openvino":
        from graphlint.load import openvino_loader

        return openvino_loader.load(path)
    raise InputError(path, "unknown model format (expected .onnx or OpenVINO IR .xml)")
