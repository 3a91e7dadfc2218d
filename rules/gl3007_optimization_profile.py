"""GL3007 optimization-profile: dynamic inputs need a profile; a given profile must hold everywhere."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _contract as C
from graphlint_rules._validity import for_op

from graphlint.analysis.shapes import Event, ShapeFacts, dynamic_inputs, evaluate
from graphlint.ir import Model, Value
from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote, quote_node
from graphlint.shapes_spec import Profile

MAX_EVALS = 48  # per dynamic axis
WORK_BUDGET = 2_000_000  # node visits for the whole sweep: big graphs get fewer sample points
_PARSER = "https://github.com/onnx/onnx-tensorrt/blob/96e781103cfc4adf4a6bb557e94bac8e693f6f4c/ModelImporter.cpp"


def _fmt(shape) -> str:
    return "x".join(str(d) for d in shape)


def _break_text(e: Event) -> str:
    if e.kind == "reshape":
        return f"it cannot reshape {e.a} elements into {e.b}"
    where = "" if e.axis is None else f" on axis {e.axis}"
    return f"it needs dims {e.a} and {e.b} to agree{where}"


def _breaks(model: Model, facts: ShapeFacts, shapes: dict[str, tuple[int, ...]]) -> list[Event]:
    return [e for e in evaluate(model, shapes, facts).events
            if e.kind in ("conflict", "reshape") and e.a.is_const and e.b.is_const]


def _span(points: list[tuple[int, ...]]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The smallest box (per-dim min and max) holding every shape of ``points``."""
    return tuple(map(min, zip(*points, strict=True))), tuple(map(max, zip(*points, strict=True)))


def _candidates(lo: int, opt: int, hi: int) -> list[int]:
    step = max(1, (hi - lo) // 8)
    return sorted({lo, lo + 1, lo + 2, opt, hi - 1, hi, *range(lo, hi + 1, step)} & set(range(lo, hi + 1)))


class OptimizationProfile(Rule):
    """Dynamic inputs need an optimization profile, and the profile must hold over its whole range.

    ## What it checks
    Without `--shapes`: one note (info) per model listing the inputs with dynamic dims, since a
    TensorRT engine build needs an optimization profile for them (whether the build passes one is
    not known here). With `--shapes NAME:MIN,OPT,MAX` (trtexec
    syntax, e.g. `input_ids:1x1,8x128,16x512`): that each profile names a real input with the
    right rank and static dims, that inputs sharing a symbol get the same values, and then the
    symbolic shape pass is re-run with concrete shapes across the range (min, opt, max and
    points between, one dim at a time) to report the first input value at which an op's shape
    constraint breaks (a Reshape element count, a broadcast, a MatMul contraction, a Concat).

    ## Why it matters
    `trtexec` / the builder refuse dynamic inputs without `--minShapes/--optShapes/--maxShapes`;
    a profile that covers a shape the graph cannot take builds fine and then fails at
    `setInputShape` or inside the enqueue, far from the cause.

    ## Example
    `graphlint model.onnx --target trt --shapes pixel_values:1x3x32x32,2x3x32x32,8x3x32x32`
    on a model with a Reshape to a constant batch of 2 reports the break at batch 1.

    ## Fix
    Pass a profile for every dynamic input (and the same to trtexec), narrow its range to what
    the graph supports, or fix the graph (see GL3001, GL3003). A profile that contradicts the
    model or a graph that breaks inside it is an error. On targets without optimization profiles
    (ONNX Runtime, OpenVINO) the corners are the sizes said to be fed: a break between them is a
    warning, since the combination swept may be none a feeder sends. Each break names the size it
    claims (`fails_at`); `--confirm` runs the model there and confirms or contradicts it.
    """

    id = "GL3007"
    name = "optimization-profile"
    severity = Severity.WARNING
    requires = ("shapes",)
    source = "trtexec --minShapes/--optShapes/--maxShapes; rules/data/targets/trt-*.toml needs_profile"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        profiles: dict[str, Profile] = ctx.options.get("shapes") or {}
        if not ctx.target.option("needs_profile") and not profiles:
            return
        model = ctx.model
        inputs = {v.name: v for v in model.graph.inputs if v.const is None}
        usable: dict[str, Profile] = {}
        for name, prof in sorted(profiles.items()):
            v = inputs.get(name)
            problem = self._validate(name, prof, v)
            if problem:
                # a shape the model's input cannot take: the engine's profile API (TensorRT) or any
                # engine fed such an input (the input's declared rank and static dims) refuses it
                doc = ctx.target.option("profile_docs") or C.onnx_ir()
                yield ctx.finding(None, problem, value=v, severity=Severity.ERROR, **C.props(C.document_basis(doc)))
            else:
                usable[name] = prof
        if ctx.target.option("needs_profile"):
            # Whether the engine build gets profiles is not known here (trtexec makes one from its
            # --*Shapes flags): one note per model, not one warning per input.
            todo = [v for v in dynamic_inputs(model) if v.name not in usable and v.name not in profiles]
            if todo:
                dims = {v.name: "[" + ", ".join("?" if d is None else str(d) for d in (v.shape or ())) + "]"
                        for v in todo}
                listed = ", ".join(f"{quote(n)} {d}" for n, d in dims.items())
                flags = " ".join(f"--shapes {n}:MIN,OPT,MAX" for n in dims)
                fed = {n: pts for n, pts in (ctx.options.get("fed") or {}).items() if n in dims}
                advice = f"pass {flags} to check the graph over that range."
                if fed:  # a deployment folder's processor says which shapes come: the profile that covers them
                    spans = {n: _span(pts) for n, pts in fed.items()}
                    advice = ("the folder's processor feeds " + ", ".join(
                        f"{quote(n)} from {_fmt(lo)} to {_fmt(hi)}" for n, (lo, hi) in spans.items())
                        + ": build with " + " ".join(
                            f"--minShapes={n}:{_fmt(lo)} --maxShapes={n}:{_fmt(hi)}" for n, (lo, hi) in spans.items())
                        + ".")
                yield ctx.finding(
                    None,
                    f"Dynamic input(s) {listed}: a {ctx.target.title} engine build needs an optimization profile "
                    f"for them (trtexec --minShapes/--optShapes/--maxShapes); {advice}",
                    value=todo[0], severity=Severity.INFO, inputs=list(dims), shapes=dims,
                )
        if not usable:
            return
        yield from self._symbol_agreement(ctx, usable, inputs)
        yield from self._sweep(ctx, usable)

    @staticmethod
    def _validate(name: str, prof: Profile, v: Value | None) -> str | None:
        if v is None:
            return f"--shapes names {quote(name)}, which is not an input of the model."
        if v.shape is None:
            return None
        if len(prof.min) != len(v.shape):
            return (f"--shapes gives {quote(name)} rank {len(prof.min)} but the input has rank {len(v.shape)} "
                    f"({list(v.shape)}).")
        for axis, d in enumerate(v.shape):
            if isinstance(d, int) and d >= 0 and any(s[axis] != d for s in prof.shapes()):
                return (f"--shapes gives {quote(name)} axis {axis} the range {prof.min[axis]}..{prof.max[axis]}, "
                        f"but the model fixes it to {d}.")
        return None

    def _symbol_agreement(self, ctx: RuleContext, usable: dict[str, Profile],
                          inputs: dict[str, Value]) -> Iterator[Finding]:
        seen: dict[str, tuple[str, int, tuple]] = {}
        trt = ctx.target.name == "trt"
        for name, prof in usable.items():
            for axis, d in enumerate(inputs[name].shape or ()):
                if not isinstance(d, str) or "?" in d:  # an unnamed dim shares no name with another
                    continue
                rng = (prof.min[axis], prof.opt[axis], prof.max[axis])
                if d in seen and seen[d][2] != rng:
                    other, oaxis, orng = seen[d]
                    yield ctx.finding(
                        None,
                        f"Input {quote(name)} axis {axis} and input {quote(other)} axis {oaxis} share the dim "
                        f"'{d}' but --shapes gives them {rng} and {orng}; give both the same min/opt/max."
                        + ("" if trt else f" {ctx.target.title} takes such inputs; the profile contradicts the "
                           "model's own statement that the two are equal."),
                        value=inputs[name], severity=Severity.ERROR if trt else Severity.WARNING,
                        # TensorRT's parser asserts that dims sharing a name are equal (assertDimsWithSameNameAreEqual)
                        **(C.props(C.document_basis(_PARSER)) if trt else {}),
                    )
                seen.setdefault(d, (name, axis, rng))

    def _sweep(self, ctx: RuleContext, usable: dict[str, Profile]) -> Iterator[Finding]:
        model, facts = ctx.model, ctx.analysis("shapes")
        opt = {n: p.opt for n, p in usable.items()}
        axes = sum(1 for p in usable.values() for lo, hi in zip(p.min, p.max, strict=True) if lo != hi)
        per_axis = max(2, min(MAX_EVALS, WORK_BUDGET // max(1, len(model.graph.nodes)) // max(1, axes)))
        reported: set[str] = set()
        for point in ("opt", "min", "max"):
            shapes = {n: getattr(p, point) for n, p in usable.items()}
            errs = [e for e in _breaks(model, facts, shapes) if _held_by(e, ctx.target)]
            if errs and point == "opt":
                e = errs[0]
                reported.add(e.node.label)
                yield ctx.finding(
                    e.node,
                    f"{quote_node(e.node)} breaks at the profile's opt shapes "
                    f"({', '.join(f'{n}={_fmt(s)}' for n, s in shapes.items())}): {_break_text(e)}.",
                    value=e.va, severity=Severity.ERROR, profile_point="opt",
                    fails_at={n: list(x) for n, x in shapes.items()},
                    **C.props(C.document_basis(C.onnx_operator(e.node.op_type))),
                )
        for name, prof in usable.items():
            for axis in range(len(prof.min)):
                lo, hi = prof.min[axis], prof.max[axis]
                if lo == hi:
                    continue
                hit = self._first_break(model, facts, opt, name, axis, prof, per_axis, _sharing(usable, model, name, axis),
                                        ctx.target)
                if hit is None:
                    continue
                value, e = hit
                if e.node.label in reported:
                    continue
                reported.add(e.node.label)
                shape = list(prof.opt)
                shape[axis] = value
                fails_at = {n: list(p.opt) for n, p in usable.items()}  # the point it claims, for --confirm
                for n, a in [(name, axis), *_sharing(usable, model, name, axis)]:
                    fails_at[n][a] = value
                rw = Rewrite("fix-input-shape", {"input": name, "shape": list(prof.opt)}, safe=False,
                             description=f"Or narrow the profile of '{name}' axis {axis} to exclude {value}.")
                # TensorRT takes any shape inside a profile; elsewhere the profile's corners are the sizes said
                # to be fed, and a value between them, the other inputs at opt, may be no combination a feeder
                # sends (a KV cache's length beside an attention mask that must span it)
                inside = ctx.target.option("needs_profile") or value in (lo, hi)
                contract = (C.props(C.document_basis(C.onnx_operator(e.node.op_type))) if inside
                            else C.props(unknown=["fed sizes"]))
                yield ctx.finding(
                    e.node,
                    f"{quote_node(e.node)} breaks inside the --shapes profile: with "
                    f"{quote(name)} axis {axis} = {value} (profile {lo}..{hi}, shape {_fmt(shape)}), "
                    f"{_break_text(e)}." + ("" if inside else " Whether that combination of sizes is fed is not "
                                            "known: the profile's corners are."),
                    value=e.va, severity=Severity.ERROR if inside else Severity.WARNING, rewrite=rw,
                    input=name, axis=axis, first_breaking_value=value, fails_at=fails_at,
                    **contract,
                )

    @staticmethod
    def _first_break(model: Model, facts: ShapeFacts, opt: dict, name: str, axis: int, prof: Profile,
                     budget: int, sharing: list[tuple[str, int]], target) -> tuple[int, Event] | None:
        """The first value of ``name``'s ``axis`` (every input axis of the same named dim set alike:
        ``sharing``) at which the graph breaks on ``target``, and the break."""
        evals = 0
        last_ok = None
        cands = _candidates(prof.min[axis], prof.opt[axis], prof.max[axis])
        if len(cands) > budget:  # big graph: min, opt, max first, then evenly spaced points
            step = max(1, len(cands) // budget)
            cands = sorted({prof.min[axis], prof.opt[axis], prof.max[axis], *cands[::step]})

        def breaks_at(v: int) -> list[Event]:
            shapes = dict(opt)
            for n, a in [(name, axis), *sharing]:
                shape = list(shapes[n])
                shape[a] = v
                shapes[n] = tuple(shape)
            return [e for e in _breaks(model, facts, shapes) if _held_by(e, target)]

        for v in cands:
            errs = breaks_at(v)
            evals += 1
            if errs:
                # refine: the first failing value between the last passing candidate and this one
                start = prof.min[axis] if last_ok is None else last_ok + 1
                for w in range(start, v):
                    if evals >= budget:
                        break
                    e2 = breaks_at(w)
                    evals += 1
                    if e2:
                        return w, e2[0]
                return v, errs[0]
            last_ok = v
            if evals >= budget:
                break
        return None


def _sharing(usable: dict[str, Profile], model: Model, name: str, axis: int) -> list[tuple[str, int]]:
    """The other given input axes declaring the same named dim as ``name``'s ``axis`` (one value for all)."""
    shapes = {v.name: v.shape or () for v in model.graph.inputs}
    dims = shapes.get(name, ())
    d = dims[axis] if axis < len(dims) else None
    if not isinstance(d, str) or "?" in d:
        return []
    return [(n, a) for n in usable for a, x in enumerate(shapes.get(n, ())) if x == d and (n, a) != (name, axis)]


def _held_by(e: Event, target) -> bool:
    """Whether ``target`` holds the shape rule that breaks (validity.toml records the rules engines hold
    differently: OpenVINO does not enforce RotaryEmbedding's cache length, ONNX Runtime does)."""
    entry = for_op(e.node.op_type)
    return entry is None or entry["verdict"].get(target.name) != C.TOLERATES
