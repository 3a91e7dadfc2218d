"""Spec formulas shared by rules and fix passes (output sizes the ONNX operator docs define)."""

from __future__ import annotations

import math


def pool_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int = 1,
                     ceil_mode: bool = False) -> tuple[int, bool]:
    """Output length of MaxPool / AveragePool along one axis, and whether ceil mode dropped a window.

    ONNX (like torch) computes ``ceil((size + pads - effective_kernel) / stride) + 1`` in ceil mode,
    then drops the last window when it would start in the end padding (Operators.md, MaxPool).
    """
    ek = (kernel - 1) * dilation + 1
    span = size + pad_begin + pad_end - ek
    if not ceil_mode:
        return span // stride + 1, False
    out = math.ceil(span / stride) + 1
    if (out - 1) * stride >= size + pad_begin:
        return out - 1, True
    return out, False
