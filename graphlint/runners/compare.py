"""Comparing outputs: tolerances per dtype, and the first difference beyond them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# (rtol, atol) per output dtype kind; integer and bool outputs must match exactly.
TOLERANCE: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-3, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (5e-2, 5e-2),
}


def tolerance(a: np.ndarray, b: np.ndarray, computed_in: str | None = None) -> tuple[float, float]:
    """The looser of the two dtypes' tolerances (double -> float compares at float32's), or of the
    precision an engine computed in (OpenVINO CPU runs float32 graphs in bf16 on AMX hosts)."""
    keys = [str(a.dtype), str(b.dtype)] + ([computed_in] if computed_in else [])
    tols = [TOLERANCE.get(k, (0.0, 0.0)) for k in keys]
    return max(t[0] for t in tols), max(t[1] for t in tols)


@dataclass
class Comparison:
    ok: bool
    max_abs_diff: dict[str, float] = field(default_factory=dict)
    problem: str = ""
    output: str = ""  # the first output that differs


def compare(ref: dict[str, np.ndarray], new: dict[str, np.ndarray], computed_in: str | None = None,
            scaled: bool = False) -> Comparison:
    """``ref`` against ``new``. ``scaled``: the absolute tolerance grows with the output's magnitude
    (engine against engine on random inputs, where a deep float graph's outputs are large)."""
    diffs: dict[str, float] = {}
    if set(ref) != set(new):
        return Comparison(False, problem=f"outputs changed: {sorted(ref)} -> {sorted(new)}")
    for name, a in ref.items():
        b = new[name]
        if a.shape != b.shape:
            return Comparison(False, diffs, f"output {name!r} shape {list(a.shape)} -> {list(b.shape)}", name)
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            af, bf = a.astype(np.float64), b.astype(np.float64)
            if not np.array_equal(np.isnan(af), np.isnan(bf)):
                return Comparison(False, diffs, f"output {name!r}: NaNs differ", name)
            fin = ~np.isnan(af)
            d = float(np.max(np.abs(af[fin] - bf[fin]))) if fin.any() else 0.0
            diffs[name] = d
            rtol, atol = tolerance(a, b, computed_in)
            if scaled and fin.any():
                atol *= max(1.0, float(np.max(np.abs(af[fin][np.isfinite(af[fin])]), initial=0.0)))
            if not np.allclose(af[fin], bf[fin], rtol=rtol, atol=atol):
                return Comparison(False, diffs, f"output {name!r} differs by up to {d:.3g} "
                                                f"(tolerance rtol={rtol:g}, atol={atol:.3g})", name)
        else:
            diffs[name] = float(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64)))) if a.size else 0.0
            if not np.array_equal(a, b):
                return Comparison(False, diffs, f"output {name!r} (dtype {a.dtype}) differs", name)
    return Comparison(True, diffs)
