"""Parse trtexec-style optimization profiles: ``NAME:MIN,OPT,MAX`` with dims like ``1x3x224x224``."""

from __future__ import annotations

from dataclasses import dataclass

from graphlint.errors import UsageError


@dataclass(frozen=True)
class Profile:
    name: str
    min: tuple[int, ...]
    opt: tuple[int, ...]
    max: tuple[int, ...]

    def shapes(self) -> tuple[tuple[int, ...], ...]:
        return (self.min, self.opt, self.max)


def _shape(text: str, spec: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in text.strip().lower().split("x"))
    except ValueError:
        raise UsageError(f"--shapes {spec!r}: {text!r} is not a shape like 1x3x224x224") from None
    if any(d < 0 for d in dims):
        raise UsageError(f"--shapes {spec!r}: negative dim")
    return dims


def parse_profile(spec: str) -> Profile:
    name, sep, rest = spec.rpartition(":")
    if not sep or not name:
        raise UsageError(f"--shapes {spec!r}: expected NAME:MIN,OPT,MAX or NAME:SHAPE")
    parts = [p for p in rest.split(",") if p.strip()]
    if len(parts) not in (1, 3):
        raise UsageError(f"--shapes {spec!r}: give one shape or three (min,opt,max)")
    shapes = [_shape(p, spec) for p in parts]
    if len(shapes) == 1:
        shapes *= 3
    lo, opt, hi = shapes
    if not (len(lo) == len(opt) == len(hi)):
        raise UsageError(f"--shapes {spec!r}: min, opt and max must have the same rank")
    if any(not (a <= b <= c) for a, b, c in zip(lo, opt, hi, strict=True)):
        raise UsageError(f"--shapes {spec!r}: need min <= opt <= max in every dim")
    return Profile(name, lo, opt, hi)


def parse_profiles(specs: list[str]) -> dict[str, Profile]:
    out: dict[str, Profile] = {}
    for s in specs:
        p = parse_profile(s)
        out[p.name] = p
    return out
