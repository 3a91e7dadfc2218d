"""Loaders: turn a model path into the normalized IR (graphlint.ir.Model)."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any

from graphlint.errors import InputError
from graphlint.ir import Model, freeze
from graphlint.load.files import os_problem

if TYPE_CHECKING:
    from graphlint.load.onnx_loader import StructureWork

SUFFIXES = {".onnx": "onnx", ".xml": "openvino"}


def load_model(path: str) -> Model:
    """The complete model at ``path``, by its suffix; InputError with one clear line when it cannot be read."""
    return load_with_background(path, child=False)[0]


def load_with_background(path: str, *, child: bool = True,
                         meanwhile: StructureWork | None = None) -> tuple[Model, dict[str, Any]]:
    """:func:`load_model`, and the results a child process still computes for the model
    (``"onnx_checker"``: onnx.checker's verdict; an object with ``result()`` and ``cancel()``).
    With ``child``, a big ONNX file's shape inference and checker run in a forked child, and
    the work in ``meanwhile`` on the main graph's structure while the parent waits for the
    types (its results in the background too: graphlint.load.onnx_loader.load_with_background)."""
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

        model, background = onnx_loader.load_with_background(path, child=child, meanwhile=meanwhile)
    elif kind == "openvino":
        from graphlint.load import openvino_loader

        model, background = openvino_loader.load(path), {}
    else:
        raise InputError(path, "unknown model format (expected .onnx or OpenVINO IR .xml)")
    freeze(model)
    return model, background

