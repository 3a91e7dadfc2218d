"""What the runs returned, checked: each output's shape against the graph's declaration and the
other engines', and the values engine against engine.

OpenVINO with ``INFERENCE_NUM_THREADS=1`` returns an empty tensor, with no error, where its default
setting raises; a runtime that reads that output gets nothing. So a run that "worked" is held to
the shape the graph declares (its symbols bound by the point's input shapes) and to what the other
engines gave on the same feeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphlint.analysis.symbolic import parse_dim
from graphlint.confirm.execute import EngineRun, RunRecord
from graphlint.confirm.plan import Point
from graphlint.ir import Model
from graphlint.runners.compare import Comparison, compare


@dataclass
class ShapeProblem:
    engine: EngineRun
    record: RunRecord
    output: str
    got: tuple[int, ...]
    expected: tuple[int, ...]
    source: str  # "the graph declares" | "<engine> returns"


@dataclass
class Divergence:
    point: Point
    a: EngineRun
    b: EngineRun
    comparison: Comparison
    output: str
    bisected: Any = None  # graphlint.confirm.bisect.Located, when bisection ran


def bindings(model: Model, point: Point) -> dict[str, int]:
    env: dict[str, int] = {}
    for v in model.graph.inputs:
        shape = point.shapes.get(v.name)
        if shape is None or v.shape is None:
            continue
        for d, n in zip(v.shape, shape, strict=False):
            if isinstance(d, str):
                env.setdefault(d, n)
    return env


def declared(model: Model, point: Point) -> list[tuple[str, tuple[int, ...] | None]]:
    """Each graph output's name and shape at ``point`` (None where a dim is not settled by the inputs)."""
    env = bindings(model, point)
    out: list[tuple[str, tuple[int, ...] | None]] = []
    for v in model.graph.outputs:
        decl = model.declared_io.get(v.name, (None, None))[1]
        shape = decl if decl is not None else None
        if shape is None:
            out.append((v.name, None))
            continue
        dims: list[int] = []
        for d in shape:
            if isinstance(d, int) and d >= 0:
                dims.append(d)
                continue
            if not isinstance(d, str):
                break
            p = parse_dim(d).subs({s: env[s] for s in parse_dim(d).symbols if s in env})
            if not p.is_const:
                break
            dims.append(int(p.value or 0))
        out.append((v.name, tuple(dims) if len(dims) == len(shape) else None))
    return out


def shape_problems(model: Model, runs: list[EngineRun]) -> list[ShapeProblem]:
    problems: list[ShapeProblem] = []
    for i in range(max((len(er.runs) for er in runs), default=0)):
        ok = [(er, er.runs[i]) for er in runs if i < len(er.runs) and er.runs[i].ok]
        if not ok:
            continue
        decl = declared(model, ok[0][1].point)
        for j, (name, want) in enumerate(decl):
            got = {id(er): _nth(rec, j) for er, rec in ok}
            for er, rec in ok:
                shape = got[id(er)]
                if shape is None:
                    continue
                if want is not None and shape != want:
                    problems.append(ShapeProblem(er, rec, name, shape, want, "the graph declares"))
                    continue
                if want is None and 0 in shape:  # empty where another engine gives data
                    full = next(((o, got[id(o)]) for o, _ in ok if o is not er and got[id(o)]
                                 and 0 not in got[id(o)]), None)
                    if full is not None:
                        problems.append(ShapeProblem(er, rec, name, shape, full[1],
                                                     f"{full[0].engine.title} returns"))
    return problems


def _nth(rec: RunRecord, j: int) -> tuple[int, ...] | None:
    items = list(rec.outputs.values())
    return tuple(items[j][0]) if j < len(items) else None


def divergences(runs: list[EngineRun]) -> list[Divergence]:
    """Points where two engines both ran and returned values that differ beyond tolerance (the
    first such point per pair of engines). Outputs are matched by position: engines name them alike
    for ONNX files, and the order is the graph's."""
    out: list[Divergence] = []
    for x in range(len(runs)):
        for y in range(x + 1, len(runs)):
            a, b = runs[x], runs[y]
            for ra, rb in zip(a.runs, b.runs, strict=False):
                if not (ra.ok and rb.ok and ra.values is not None and rb.values is not None):
                    continue
                names = list(ra.values)
                va, vb = list(ra.values.values()), list(rb.values.values())
                ref = {n: v for n, v in zip(names, va, strict=False)}
                new = {n: v for n, v in zip(names, vb, strict=False)}
                precision = _lowest(a.precision, b.precision)
                c = compare(ref, new, computed_in=precision, scaled=True)
                if not c.ok and c.output:
                    out.append(Divergence(ra.point, a, b, c, c.output))
                    break
    return out


def _lowest(*precisions: Any) -> str | None:
    """The least precise of the engines' computing precisions (it sets the tolerance)."""
    for p in ("bfloat16", "float16"):
        if p in precisions:
            return p
    return None
