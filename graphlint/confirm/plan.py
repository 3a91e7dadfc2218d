"""Which sizes a model is run at, and what it is fed there.

Points come from, in order of authority:

1. ``given``: sizes someone said will be fed: the corners (min, opt, max) of each ``--shapes`` /
   configured profile, and, for a deployment folder's stage, every shape its processor feeds
   (``options["fed"]``). A failure here is an error. A point whose other inputs need a dim past the
   batch axis that nobody gave is a sample instead.
2. ``export``: the sizes the file itself states: every dim static, or the size a constant pins a
   declared-dynamic dim to (GL3003's finding names it). A failure here is an error too.
3. ``sample``: where neither says, each dynamic dim at a size from ``rules/data/confirm.toml`` (a
   pinned dim at its pin), and every dynamic dim, pinned or not, at twice that (another legal size).
   A failure only there is a warning: the size is graphlint's.

Symbols are shared: a dim named alike gets one value across inputs, and a mask that spans the
KV cache (a dim of its own next to the ids' sequence, or an expression such as
``past_sequence_length + 1``) gets past + new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphlint.analysis.symbolic import Poly, parse_dim
from graphlint.confirm import feeds as F
from graphlint.ir import Model
from graphlint.target import data_file

GIVEN, EXPORT, SAMPLE = "given", "export", "sample"
MAX_POINTS = 8


@dataclass
class Point:
    label: str  # how the report names it: "--shapes max", "export size", "sample x2"
    kind: str  # GIVEN | EXPORT | SAMPLE
    shapes: dict[str, tuple[int, ...]]
    past: int = 0

    def text(self) -> str:
        dims = ", ".join(f"{k} {'x'.join(map(str, s)) or 'scalar'}" for k, s in self.shapes.items())
        return f"{self.label} ({dims})"


@dataclass
class Plan:
    inputs: dict[str, F.Contract]
    points: list[Point] = field(default_factory=list)
    problem: str = ""  # why the model cannot be fed (a string input, a rank unknown)

    def feeds(self, point: Point, seed: int = 0) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {name: F.generate(c, point.shapes[name], rng, point.past) for name, c in self.inputs.items()}


def _numpy_dtype(dtype: str) -> bool:
    """Whether numpy holds the element type as it is (not bfloat16, the float8 / float4 types, or the
    4- and 2-bit integers, whose names numpy reads as other types or not at all)."""
    if dtype in ("bfloat16", "int4", "uint4", "int2", "uint2") or dtype.startswith(("float8", "float4")):
        return False
    try:
        np.dtype(dtype)
    except TypeError:
        return False
    return True


def _dim_names(model: Model) -> dict[str, list[Any]]:
    return {v.name: list(v.shape) if v.shape is not None else None for v in model.graph.inputs if v.const is None}


def _sample_size(name: str | None, axis: int, image: bool) -> int:
    table = data_file("confirm.toml")
    if isinstance(name, str):
        for row in table["dim"]:
            if re.search(row["pattern"], name, re.I):
                return int(row["size"])
    if image and axis >= 1:
        return int(table["image"])
    return int(table["unnamed_batch"] if axis == 0 else table["unnamed"])


def make_plan(model: Model, consts, options: dict[str, Any], findings: list[Any], ranges: dict | None) -> Plan:
    contracts = F.contracts(model, consts, ranges)
    plan = Plan(contracts)
    dims = _dim_names(model)
    bad = [n for n, c in contracts.items() if c.kind == "string" or not _numpy_dtype(c.dtype)]
    if bad:
        plan.problem = f"input '{bad[0]}' is {contracts[bad[0]].dtype}, which graphlint does not generate"
        return plan
    operands = [n for n, c in contracts.items() if c.kind == "shape"]
    if operands:
        plan.problem = (f"input '{operands[0]}' sets a shape, size, axes or indices at run time; give its values "
                        f"with --input-range {operands[0]}:LO,HI")
        return plan
    unranked = [n for n, d in dims.items() if d is None]
    if unranked:
        plan.problem = f"input '{unranked[0]}' declares no rank"
        return plan
    given = _given(options, dims)
    pins = _export_pins(findings)
    out: list[Point] = []
    for label, shapes in given:
        out.append(_complete(Point(label, GIVEN, {}), shapes, dims, contracts, {}, 1))
    for f in findings:  # a size a static finding says the model fails at, inside the given sizes: run it
        claim = f.properties.get("fails_at")
        if isinstance(claim, dict) and claim and all(n in dims for n in claim):
            shapes = {n: tuple(int(d) for d in s) for n, s in claim.items()}
            kind = GIVEN if f.severity.label == "error" else SAMPLE  # an interior size nobody said is fed
            out.append(_complete(Point(claim_label(f), kind, {}), shapes, dims, contracts, {}, 1))
    dynamic = any(not isinstance(d, int) for ds in dims.values() for d in ds)
    if not dynamic:
        out.append(Point("declared shape", EXPORT, {n: tuple(ds) for n, ds in dims.items()}))
    else:
        if pins:
            out.append(_complete(Point("export size", EXPORT, {}), {}, dims, contracts, pins, 1))
        if not given:
            out.append(_complete(Point("sample", SAMPLE, {}), {}, dims, contracts, pins, 1))
            # another legal size for every dynamic dim, pinned ones too: what a pin's finding is about
            out.append(_complete(Point("sample x2", SAMPLE, {}), {}, dims, contracts, {}, 2))
    seen: set[tuple] = set()
    for p in out:
        key = tuple(sorted(p.shapes.items()))
        if key not in seen and len(plan.points) < MAX_POINTS:
            seen.add(key)
            plan.points.append(p)
    return plan


def guessed(plan: Plan, point: Point | None = None) -> set[str]:
    """Inputs whose values are graphlint's guess: integers and booleans of no contract it knows, and
    float scalars (a start, a limit, a step: parameters, not data). A failure they may cause says
    nothing certain of the model."""
    out = set()
    for name, c in plan.inputs.items():
        scalar = point is not None and point.shapes.get(name) == ()
        if c.kind in ("int", "bool") or (c.kind == "float" and scalar):
            out.add(name)
    return out


def claim_label(f: Any) -> str:
    """The label of the point a finding's ``fails_at`` claim is run at."""
    return f"where {f.rule_id} says it breaks"


def _given(options: dict[str, Any], dims: dict[str, list[Any]]) -> list[tuple[str, dict[str, tuple[int, ...]]]]:
    out: list[tuple[str, dict[str, tuple[int, ...]]]] = []
    profiles = {n: p for n, p in (options.get("shapes") or {}).items() if n in dims}
    if profiles:
        for corner, i in (("min", 0), ("opt", 1), ("max", 2)):
            out.append((f"--shapes {corner}", {n: tuple(p.shapes()[i]) for n, p in profiles.items()}))
    fed = {n: pts for n, pts in (options.get("fed") or {}).items() if n in dims}
    if fed:
        count = max(len(p) for p in fed.values())
        for i in range(count):
            out.append((f"processor feed {i + 1}", {n: tuple(pts[min(i, len(pts) - 1)]) for n, pts in fed.items()}))
    return out


def _export_pins(findings: list[Any]) -> dict[str, int]:
    """Dim symbols a constant pins (GL3003 names the one size the export holds for)."""
    pins: dict[str, int] = {}
    for f in findings:
        rw = f.rewrite
        if f.rule_id == "GL3003" and rw is not None and rw.name == "fix-input-shape":
            pins[f"@{rw.params['input']}"] = 0  # marks the input as pinned; the shape follows
            pins.update({f"@{rw.params['input']}[{i}]": int(d) for i, d in enumerate(rw.params["shape"])
                         if isinstance(d, int)})
        sym, val = f.properties.get("symbol"), f.properties.get("pinned_value")
        if f.rule_id == "GL3003" and isinstance(val, int) and sym and re.fullmatch(r"[A-Za-z_][\w.]*", sym):
            pins.setdefault(sym, val)
    return pins


def _complete(point: Point, shapes: dict[str, tuple[int, ...]], dims: dict[str, list[Any]],
              contracts: dict[str, F.Contract], pins: dict[str, int], factor: int) -> Point:
    """Every input's shape at ``point``: the given shapes, then symbols bound by them, pins, then samples."""
    env: dict[str, int] = {}
    for name, shape in shapes.items():
        for d, n in zip(dims[name], shape, strict=False):
            if isinstance(d, str):
                env.setdefault(d, n)
    env.update({k: v for k, v in pins.items() if not k.startswith("@") and k not in env})
    past_syms = {d for n, c in contracts.items() if c.kind == "past" for d in dims[n]
                 if isinstance(d, str) and re.search("past|cache", d, re.I)}
    seq_syms = {d for n, c in contracts.items() if c.kind == "ids" for d in dims[n][1:2] if isinstance(d, str)}
    out: dict[str, tuple[int, ...]] = dict(shapes)
    sampled = False  # a dim past the batch axis that nobody gave: a given point is then graphlint's choice
    for name, ds in dims.items():
        if name in out:
            continue
        image = contracts[name].kind == "image" or F.channel_axis(tuple(ds))[0]
        shape = []
        for axis, d in enumerate(ds):
            pinned = pins.get(f"@{name}[{axis}]")
            if isinstance(d, int) and d >= 0:
                shape.append(d)
            elif pinned is not None:
                shape.append(pinned)
            elif isinstance(d, str) and d in env:
                shape.append(env[d])
            elif isinstance(d, str) and _expression(d):
                shape.append(-1)  # an expression of other dims: evaluated once they are bound
            else:
                n = _sample_size(d, axis, image) * factor
                if isinstance(d, str):
                    env[d] = n
                sampled = sampled or axis > 0
                shape.append(n)
        out[name] = tuple(shape)
    past = next((env[s] for s in sorted(past_syms) if s in env), 0)
    for name, shape in list(out.items()):
        if -1 not in shape:
            continue
        fixed = []
        for d, n in zip(dims[name], shape, strict=True):
            if n != -1:
                fixed.append(n)
                continue
            p = parse_dim(d).subs({s: env.get(s, 0) for s in parse_dim(d).symbols})
            fixed.append(int(p.value) if p.is_const and p.value and p.value > 0 else max(env.values(), default=8))
        out[name] = tuple(fixed)
    # a mask with a length of its own beside the ids' sequence, in a model with a past: past + new
    # (a mask whose shape was given keeps it: the feeder said what it sends)
    if past_syms and seq_syms:
        seq = next((env[s] for s in seq_syms if s in env), None)
        for name, c in contracts.items():
            ds = dims[name]
            if name not in shapes and c.kind == "mask" and len(ds) == 2 and isinstance(ds[1], str) and ds[1] not in seq_syms \
                    and not parse_dim(ds[1]).symbols & past_syms and seq is not None:
                out[name] = (out[name][0], past + seq)
    point.shapes, point.past = out, past
    if point.kind == GIVEN and sampled:
        # e.g. a vision stage fed the processor's pixel_values beside a patch mask graphlint sized:
        # whether those go together is not given, so a failure there is not the deployment's
        point.kind = SAMPLE
        point.label += " (other inputs sampled)"
    return point


def _expression(dim: str) -> bool:
    """A dim name written as arithmetic of other dims (``past_sequence_length + 1``)."""
    return parse_dim(dim) is not Poly.sym(dim)
