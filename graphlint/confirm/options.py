"""``--confirm`` and the ``[confirm]`` table of the configuration (no engine is imported here).

    [tool.graphlint.confirm]
    enabled = true          # as --confirm on every run
    budget = 120            # seconds per model and engine; the engine process is killed past it
    compare = true          # engine against engine, when two or more targets' engines are installed
    bisect = true           # a difference: find the first node it appears at
    sample = true           # run sample sizes where nobody said which sizes are fed
    seed = 0

    [tool.graphlint.confirm.openvino]   # compile_model properties (default: the plugin's own)
    INFERENCE_NUM_THREADS = 1

    [tool.graphlint.confirm.onnxruntime]  # SessionOptions attributes and session.* config entries
    intra_op_num_threads = 1
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from graphlint.errors import UsageError

ENGINE_TABLES = ("onnxruntime", "openvino", "tensorrt")
KEYS: dict[str, type | tuple[type, ...]] = {"enabled": bool, "budget": (int, float), "compare": bool, "bisect": bool,
                                            "sample": bool, "seed": int}


@dataclass
class ConfirmOptions:
    budget: float = 120.0
    seed: int = 0
    compare: bool = True
    bisect: bool = True
    sample: bool = True
    engines: dict[str, dict[str, Any]] = field(default_factory=dict)  # runner -> settings
    reference: Any = None  # a torch.onnx.ONNXProgram whose exported program is the reference (Python API)


def parse(table: dict[str, Any], where: str) -> tuple[bool, ConfirmOptions]:
    """(enabled, options) from a ``[confirm]`` table; unknown keys and wrong types are usage errors."""
    opts = ConfirmOptions()
    enabled = False
    for key, value in table.items():
        k = key.replace("-", "_")
        if k in ENGINE_TABLES:
            if not isinstance(value, dict):
                raise UsageError(f"{where}.{key}: expected a table of {k} settings")
            opts.engines[k] = dict(value)
            continue
        kind = KEYS.get(k)
        if kind is None:
            close = difflib.get_close_matches(k, [*KEYS, *ENGINE_TABLES], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (valid: {', '.join([*KEYS, *ENGINE_TABLES])})"
            raise UsageError(f"{where}: unknown key {key!r}{hint}")
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise UsageError(f"{where}.{key}: expected {'true or false' if kind is bool else 'a number'}")
        if k == "enabled":
            enabled = value
        elif k == "budget":
            if value < 0:
                raise UsageError(f"{where}.budget: expected seconds >= 0 (0: no limit)")
            opts.budget = float(value)
        else:
            setattr(opts, k, value)
    return enabled, opts
