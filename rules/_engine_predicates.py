"""Named predicates of the engine-drift conditions (``{pred = NAME}`` in data/engine_drift.toml).

Each takes a node and returns True, False, or None when the model does not tell (a shape or a
value is not static). Registered by name in PREDICATES; the table refers to them by that name.
Not a rule module (leading underscore: rule discovery skips it).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from graphlint_rules._drift import const as _const

from graphlint.ir import Node, Value
from graphlint.opmath import pool_output_size


def _static(v: Value | None) -> tuple[int, ...] | None:
    shape = v.shape if v is not None else None
    if shape is None or not all(isinstance(d, int) and d >= 0 for d in shape):
        return None
    return tuple(shape)


def _ints(node: Node, name: str, n: int, default: int) -> list[int]:
    v = node.attr(name)
    return [int(x) for x in v] if v else [default] * n


def maxpool_last_window_in_padding(node: Node) -> bool | None:
    """ceil_mode=1 and, along some axis, the last ceil-mode window starts in the end padding."""
    shape = _static(node.input(0))
    kernel = node.attr("kernel_shape")
    if shape is None or not kernel or node.attr("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET"):
        return None if shape is None else False
    n = len(kernel)
    strides, dil = _ints(node, "strides", n, 1), _ints(node, "dilations", n, 1)
    pads = _ints(node, "pads", 2 * n, 0)
    return any(pool_output_size(shape[2 + i], kernel[i], strides[i], pads[i], pads[n + i], dil[i], True)[1]
               for i in range(n))


def resize_scales_output_fractional(node: Node) -> bool | None:
    """Resize by ``scales`` where input size x scale is not a whole number along some axis."""
    if node.input(3) is not None:
        return False  # sizes given: the output size is whole by construction
    scales, shape = _const(node.input(2)), _static(node.input(0))
    if scales is None or shape is None:
        return None
    if scales.size == 0:
        return False
    axes = node.attr("axes") or list(range(len(shape)))
    return any(abs(shape[a] * float(s) - round(shape[a] * float(s))) > 1e-6
               for a, s in zip(axes, scales.reshape(-1), strict=False))


def dft_length_not_power_of_two(node: Node) -> bool | None:
    """The transformed length (dft_length, else the axis' size) is not a power of two."""
    n = _const(node.input(1))
    if n is None and node.input(1) is None:
        shape = _static(node.input(0))
        if isinstance(node.opset, int) and node.opset >= 20:
            ax = _const(node.input(2))
            axis = int(ax.reshape(-1)[0]) if ax is not None else (-2 if node.input(2) is None else None)
        else:
            axis = int(node.attr("axis", 1))
        if shape is None or axis is None:
            return None
        n = np.asarray(shape[axis])
    if n is None:
        return None
    length = int(np.asarray(n).reshape(-1)[0])
    return length > 0 and length & (length - 1) != 0


def reduce_over_empty_axis(node: Node) -> bool | None:
    """A reduction over an axis of static length 0 (the result is the reduction's identity).

    With a dim of length 0 in the input and runtime axes, the reduction may be over it: True."""
    shape = _static(node.input(0))
    if shape is None:
        return None
    if 0 not in shape:
        return False
    axes = _const(node.input(1)) if node.input(1) is not None else node.attr("axes")
    if axes is None and node.input(1) is not None:
        return True
    axes = list(range(len(shape))) if axes is None or len(axes) == 0 else [int(a) for a in np.ravel(axes)]
    return any(shape[a] == 0 for a in axes)


PREDICATES: dict[str, Callable[[Node], bool | None]] = {
    "maxpool-last-window-starts-in-padding": maxpool_last_window_in_padding,
    "resize-scales-output-fractional": resize_scales_output_fractional,
    "dft-length-not-power-of-two": dft_length_not_power_of_two,
    "reduce-over-empty-axis": reduce_over_empty_axis,
}
