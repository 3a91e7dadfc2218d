"""Which sizes the user will feed a dynamic dim: what decides whether a pinned dim is an error.

A constant that pins a declared-dynamic dim fails only at the sizes it does not hold for. Whether
those sizes will be fed is known in two cases: the user said which (``--shapes``, the configured
per-model shapes, a TensorRT optimization profile: all arrive as ``ctx.options["shapes"]``), or the
dim is a batch dim, which serving fills with whatever batch arrives. Otherwise (a ViT's height
and width, which optimum declares dynamic while the position table fixes them) every engine runs
the model at its export size and the premise is unknown. Not a rule module (leading underscore).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from graphlint.analysis.shapes import ShapeFacts
from graphlint.analysis.symbolic import Poly, parse_dim
from graphlint.ir import Model
from graphlint.shapes_spec import Profile

_BATCH_NAME = re.compile(r"batch|^(n|b|bs)$", re.IGNORECASE)
_IDENT = re.compile(r"[A-Za-z_][\w.]*(?:\[\d+\])?")  # a dim name, or an IR port dim `pixel_values[2]`
_SEARCH = 8192  # largest size tried when looking for the one size a pin leaves


@dataclass(frozen=True)
class Fed:
    """What is known about the sizes the user feeds the symbols of one pin."""

    verdict: str  # "fails" (a fed size breaks it) | "holds" (every fed size satisfies it) | "batch" | "unknown"
    where: str = ""  # the profile point or dim that decides, for the message


def base_symbols(facts: ShapeFacts, model: Model, symbols: frozenset[str]) -> dict[str, tuple[str, int]]:
    """The input dims (as the symbol the input declares) that the symbols of a pin derive from."""
    inputs = {v.name: v for v in model.graph.inputs}
    out: dict[str, tuple[str, int]] = {}
    for s in sorted(symbols):
        for inp, axis in facts.origins.get(s, ()):
            v = inputs.get(inp)
            dim = v.shape[axis] if v is not None and v.shape and axis < len(v.shape) else None
            out.setdefault(dim if isinstance(dim, str) else f"{inp}[{axis}]", (inp, axis))
    return out


def _value(symbol: str, env: Mapping[str, int]) -> int | None:
    """A symbol's value with the input dims set: derived symbols are named by their expression
    (``(height - 8)//8``, what a strided Conv makes), so their text is evaluated with the values put in."""
    if symbol in env:
        return env[symbol]
    text = _IDENT.sub(lambda m: str(env[m.group()]) if m.group() in env else m.group(), symbol)
    p = parse_dim(text)
    return p.value if p.is_const else None


def evaluate(side: Poly, env: Mapping[str, int]) -> int | None:
    values = {}
    for s in side.symbols:
        v = _value(s, env)
        if v is None:
            return None
        values[s] = v
    p = side.subs(values)
    return p.value if p.is_const else None


def working_sizes(side: Poly, const: int, n_bases: int) -> list[int]:
    """The sizes at which ``side == const`` with every base dim set alike (a square image, one
    sequence length), in order: the sizes the export holds for, to name in the message."""
    if not 1 <= n_bases <= 3:
        return []
    names = sorted(_bases_of(side))
    return [t for t in range(1, _SEARCH + 1) if evaluate(side, dict.fromkeys(names, t)) == const]


def _bases_of(side: Poly) -> set[str]:
    """The identifiers the symbols of ``side`` are written in (``height`` of ``(height - 8)//8``)."""
    out: set[str] = set()
    for s in side.symbols:
        names = _IDENT.findall(s)
        out.update(names or [s])
    return out


def roundest(sizes: list[int]) -> int:
    """Of the sizes a pin holds for, the one divisible by the highest power of two: exporters are
    run at round sizes (a ViT at 32 of 32..39, a Whisper encoder at 64 of 63..64)."""
    return max(sizes, key=lambda t: ((t & -t), -t))


def fed(facts: ShapeFacts, model: Model, side: Poly, const: int,
        profiles: Mapping[str, Profile] | None, points: Mapping[str, list[tuple[int, ...]]] | None = None) -> Fed:
    """Whether the sizes the user feeds break ``side == const`` (see the module docstring).
    ``points``: the exact shapes a deployment folder's processor feeds each input (``options["fed"]``,
    graphlint.pipeline): they decide before any profile, since they are what will run."""
    bases = base_symbols(facts, model, side.symbols)
    if points and bases and all(inp in points for inp, _ in bases.values()):
        inputs = sorted({inp for inp, _ in bases.values()})
        for combo in itertools.islice(itertools.product(*(points[i] for i in inputs)), 4096):
            shapes = dict(zip(inputs, combo, strict=True))
            env = {name: shapes[inp][axis] for name, (inp, axis) in bases.items() if axis < len(shapes[inp])}
            got = evaluate(side, env)
            if got is not None and got != const:
                said = ", ".join(f"'{i}' as {'x'.join(map(str, shapes[i]))}" for i in inputs)
                return Fed("fails", f"the folder's processor feeds {said}")
        return Fed("holds")
    ranges: dict[str, tuple[int, int]] = {}
    for name, (inp, axis) in bases.items():
        prof = (profiles or {}).get(inp)
        if prof is not None and axis < len(prof.min):
            ranges[name] = (prof.min[axis], prof.max[axis])
    if bases and len(ranges) == len(bases):
        # every dim of the pin has a profile: try its corners, its opt point and a few sizes between
        points = {name: sorted({lo, hi, *range(lo, hi + 1, max(1, (hi - lo) // 8))}) for name, (lo, hi) in ranges.items()}
        for combo in itertools.islice(itertools.product(*points.values()), 4096):
            env = dict(zip(points, combo, strict=True))
            got = evaluate(side, env)
            if got is not None and got != const:
                return Fed("fails", ", ".join(f"{k} = {v}" for k, v in env.items()))
        return Fed("holds")
    for name, (inp, axis) in bases.items():
        if axis == 0 or _BATCH_NAME.search(name):
            return Fed("batch", f"'{name}' (input '{inp}' axis {axis})")
    return Fed("unknown")
