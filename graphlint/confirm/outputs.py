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
    source: str  # "the graph declares" | "<engine> returns" | "it returns at <point>"
    empty: bool = True  # nothing where data is due (an error); else another shape of data (a warning)


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
    """Each graph output's name and shape at ``point`` (None where a dim is not settled by the inputs).
    Only plain names are bound: a name written as arithmetic (optimum's ``past_sequence_length + 1``)
    is what the exporter saw at one size, not a rule of the graph (ONNX gives dim names no arithmetic)."""
    env = bindings(model, point)
    out: list[tuple[str, tuple[int, ...] | None]] = []
    for v in model.graph.outputs:
        shape = model.declared_io.get(v.name, (None, None))[1]
        if shape is None or (v.producer is not None and v.producer.op_type == "If"):
            # an If's output is whichever branch ran: optimum's merged decoders return an empty dummy
            # cache from the cached branch by design, where the declaration is the other branch's
            out.append((v.name, None))
            continue
        dims = [d if isinstance(d, int) and d >= 0 else env.get(d) if isinstance(d, str) else None for d in shape]
        out.append((v.name, tuple(dims) if None not in dims else None))  # type: ignore[arg-type]
    return out


def shape_problems(model: Model, runs: list[EngineRun]) -> list[ShapeProblem]:
    """Outputs an engine returned in a shape the run cannot be right with:

    - empty (a zero dim where no input of the point has one) where the graph declares data, where another
      engine returns data, or where the same engine returned data at another point: what a runtime then
      reads is nothing (an error);
    - another non-empty shape than the graph declares: the engine's own layout of it (onnxruntime-genai's
      shared KV buffer is 128 positions long by design); whether the runtime relies on the declaration
      is not known (a warning, ``ShapeProblem.empty`` False)."""
    problems: list[ShapeProblem] = []
    count = max((len(er.runs) for er in runs), default=0)
    for i in range(count):
        ok = [(er, er.runs[i]) for er in runs if i < len(er.runs) and er.runs[i].ok]
        if not ok:
            continue
        point = ok[0][1].point
        fed_empty = any(0 in s for s in point.shapes.values())
        decl = declared(model, point)
        for j, (name, want) in enumerate(decl):
            got = {id(er): _nth(rec, j) for er, rec in ok}
            for er, rec in ok:
                shape = got[id(er)]
                if shape is None or shape == want:
                    continue
                empty = 0 in shape and not fed_empty
                if want is not None and (empty or 0 not in want):
                    problems.append(ShapeProblem(er, rec, name, shape, want, "the graph declares",
                                                 empty and 0 not in want))
                    continue
                if not empty:
                    continue
                full = next(((o.engine.title + " returns", got[id(o)]) for o, _ in ok
                             if o is not er and got[id(o)] and 0 not in got[id(o)]), None)
                if full is None:  # the same engine gave this output data at another point
                    full = next((("it returns at " + r.point.label, _nth(r, j)) for r in er.runs
                                 if r.ok and r is not rec and _nth(r, j) and 0 not in (_nth(r, j) or (0,))), None)
                if full is not None:
                    problems.append(ShapeProblem(er, rec, name, shape, full[1], full[0], True))
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
