"""GL3003 constant-shape-pins-dynamic-dim: a constant Reshape/Expand or op fixes a declared dynamic dim."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _contract as C
from graphlint_rules import _fed_sizes as F
from graphlint_rules._validity import TABLE, for_op

from graphlint.analysis.shapes import ShapeFacts, describe_dim, input_symbols
from graphlint.analysis.shapes.openvino import spec_url
from graphlint.analysis.symbolic import Poly, cancel
from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote_node
from graphlint.target import Target


def solve(lhs: Poly, rhs: Poly) -> tuple[str, int | None] | None:
    """Solve ``c*s == n`` for the single symbol s; (symbol, value or None when no integer works)."""
    if not rhs.is_const or len(lhs.terms) != 1:
        return None
    (mono, coef), = lhs.terms
    if len(mono) != 1:
        return None
    n = rhs.value or 0
    return mono[0], (n // coef if coef and n % coef == 0 and n // coef > 0 else None)


def _symbolic_first(a: Poly, b: Poly) -> tuple[Poly, Poly]:
    """The two sides of an event, the one that is not a constant first."""
    return (a, b) if not a.is_const else (b, a)


def _engine_contract(entry: dict, target: Target) -> tuple[Severity, dict, str]:
    """Severity, contract properties and note for a shape rule the table records per engine."""
    verdict = entry["verdict"].get(target.name)
    if verdict in C.FAILING:
        return Severity.ERROR, C.props(C.fact_basis(TABLE, entry["id"]), complaint=entry["id"]), ""
    if verdict is None:
        return (Severity.WARNING, C.props(unknown=["engine behaviour"], complaint=entry["id"]),
                f" Whether {target.title} holds this is not recorded (engine behaviour unknown).")
    note = " Spec-only: " + C.spec_only_note(entry["verdict"], target, entry.get("rejected_by", ()))
    return Severity.WARNING, C.props(complaint=entry["id"], engines=entry.get("engines")), note


class ConstantShapePinsDynamicDim(Rule):
    """A constant shape contradicts a dim the model declares dynamic.

    ## What it checks
    A Reshape or Expand to a constant target shape whose element count cannot equal the
    input's when a declared dynamic dim changes (e.g. input `[batch, 32]` reshaped to the
    constant `[2, 32]`), and ops that force a dynamic dim to agree with a constant one
    (adding a `[7, 32]` constant to `[seq, 32]`, or a position table of 17 rows to the patch
    count a strided Conv makes of `[height, width]`). Dims are computed from the inputs, not
    taken from the exporter's intermediate shapes where those say a number for a dynamic dim
    (torch.export can record the batch it specialized to), and a Reshape whose sides share
    symbols is solved for the rest (`seq*batch*576` to `seq*576`: batch = 1). The finding says
    which value the dim is pinned to; a later Reshape that only inherits the pin is not repeated.

    The severity follows the sizes the user will feed (`rules/_fed_sizes.py`). An **error** when
    `--shapes` (or the configured shapes, a TensorRT optimization profile) include a size at which
    the node fails, or when the pinned dim is a batch dim (axis 0 or named like one: serving fills
    it with whatever batch arrives). No finding when every given size is one the constant holds
    for. Otherwise a **warning** (`unknown: fed sizes`) that names the sizes the model runs at and
    offers the `fix-input-shape` rewrite pinning the declared dims to the export size: optimum
    declares a ViT's height and width dynamic while its position table fixes them, and every
    engine runs such a model at its config size, so the premise that other sizes will be fed is
    unknown. Also a warning when the dims are unnamed (exporters leave dims they were not told
    about unnamed), for shape rules the target itself does not hold (RotaryEmbedding caches on
    OpenVINO, `rules/data/validity.toml`), and when a constant leading dim plus `-1` folds the
    dynamic batch into another axis (`x.reshape(1, -1, D)` on `[batch, n, D]`).

    On OpenVINO IR the same analysis runs over the layers (each read as the ONNX op whose shape
    semantics it shares: `graphlint/analysis/shapes/openvino.py`), with each `-1` dim of a
    Parameter as a symbol named by its position (`pixel_values[2]`). IR dims have no names: `-1`
    is the only way an IR declares a dim dynamic, and OpenVINO compiles the model for every value
    of it. So a pin proven from those dims fails at every other value (given the fed sizes above): the layer's inputs
    break the OpenVINO specification's agreement (broadcast rules, Concat, Reshape element count),
    and OpenVINO 2026.4 then returns a wrong (empty) tensor or fails, as the corpus's
    `vit_dynhw` and `whisperenc_dynframes` IRs show (tests/test_ir_shapes.py). A warning when
    every dim of that Parameter is `-1`: `ov.convert_model` makes every dim dynamic when it is
    given no input shapes, so such an IR says only the rank and whether other values are meant is
    unknown. Also a warning when the constant side is not a constant input of the layer (a Const
    such as the position table, or the layer's own constant shape) but a size other layers
    computed, as when a Reshape further up fixes a height of 1 that a Concat then meets: IR dims
    carry no names, and an unnamed ONNX dim converts to `-1` as a named one does, so only the
    constant at the layer itself shows the file was made for one size (PP-OCRv4 recognition: its
    unnamed ONNX height, an error-free warning on the ONNX file, is such a clash on its IR). Dims
    the IR bounds (`1..128`) stay unknown, and layers the table does not hold keep their ports'
    dims, so an unknown premise there gives no finding at all.

    ## Why it matters
    Tracing exporters bake Python ints into shapes (`x.view(2, -1)`, `x.reshape(B, ...)` with B
    taken from the example input). The input still says `batch`, so nothing complains until
    another batch size arrives: ONNX Runtime then fails with "The input tensor cannot be
    reshaped to the requested shape", TensorRT fails the profile or the run, and a `-1` in the
    wrong place silently merges the batch into another axis.

    ## Example
    `pooled.reshape(2, 32)` exported with `dynamic_axes={"pixel_values": {0: "batch"}}` (an error:
    the batch is pinned to 2); a ViT exported by `optimum-cli export onnx` at image size 32 (a
    warning: it runs only at height = width = 32..39; with
    `--shapes pixel_values:1x3x32x32,1x3x32x32,1x3x64x64` an error).

    ## Fix
    Compute the shape from the tensor (`x.reshape(x.shape[0], -1)`, `x.flatten(1)`) and
    re-export, or declare the dim static if the model really only supports that size
    (`graphlint fix --unsafe-fixes --select GL3003` pins it to the size the warning names).
    """

    id = "GL3003"
    name = "constant-shape-pins-dynamic-dim"
    severity = Severity.ERROR
    requires = ("shapes",)
    source = ("symbolic shape analysis (graphlint/analysis/shapes/); ONNX Reshape/Expand semantics; "
              "OpenVINO 2026 operation specifications for IR")
    dialects = frozenset({ONNX, OPENVINO})

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        facts: ShapeFacts = ctx.analysis("shapes")
        seen: set[tuple[str, str]] = set()
        seen_contracts: set[tuple[str, str]] = set()
        pinned_by: dict[str, int] = {}  # symbol -> the value an earlier finding pins it to
        # IR Parameters whose every dim is -1: the converter's default, not a choice of dims
        rank_only = {v.name for v in ctx.model.graph.inputs
                     if v.shape and all(d is None for d in v.shape)} if ctx.model.dialect == OPENVINO else set()
        for e in facts.events:
            if e.kind == "fold" and input_symbols(facts, e.a):
                n = e.node
                if (n.label, str(e.a)) not in seen:
                    seen.add((n.label, str(e.a)))
                    yield ctx.finding(
                        n,
                        f"{quote_node(n)} has a constant leading dim and a -1 that absorbs "
                        f"the dynamic {describe_dim(facts, e.a)} into axis {e.axis} ({e.b}): samples of a batch "
                        f"are merged, which only matches the export at one batch size.",
                        value=e.va, severity=Severity.WARNING, symbol=str(e.a),
                    )
                continue
            if e.kind not in ("reshape", "pinned"):
                continue
            a, b = cancel(e.a, e.b) if e.kind == "reshape" else (e.a, e.b)  # [seq, batch, D] to [seq, 1, D]
            sym_side, const_side = _symbolic_first(a, b)
            if not input_symbols(facts, sym_side) or not const_side.is_const:
                continue
            key = (e.node.label, str(sym_side))
            if key in seen:
                continue
            seen.add(key)
            n = e.node
            sol = solve(sym_side, const_side)
            if e.kind == "reshape":
                syms = ", ".join(describe_dim(facts, Poly.sym(x)) for x in sorted(sym_side.symbols))
                whole_sym, whole_other = _symbolic_first(e.a, e.b)  # before cancelling shared symbols
                what = (f"reshapes {sym_side} elements ({syms}) to a constant shape of {const_side} elements"
                        if whole_other.is_const else
                        f"reshapes {whole_sym} elements ({syms}) to a shape of {whole_other} elements")
            else:
                what = f"needs {describe_dim(facts, sym_side)} to equal the constant {const_side}"
            # A non-constant expression of the input dims equals a constant only at some of their
            # values: at the others (legal, since the inputs declare them dynamic) the node fails.
            ir = n.dialect == OPENVINO
            contract = C.props(C.document_basis(spec_url(n.op_type) if ir else C.onnx_operator(n.op_type)))
            if sol is None:
                # OpenVINO need not raise: the corpus IRs return an empty tensor instead
                fails = ("the layer fails or returns a wrong result at the other values the IR's -1 declares legal"
                         if ir else "the node fails at run time for the other values the inputs declare legal")
                tail = f"it holds only where {sym_side} = {const_side}, so {fails}"
                pinned = None
            elif sol[1] is None:
                tail = f"no value of '{sol[0]}' satisfies that, so the node can never run"
                pinned = None
            else:
                tail = f"so the model only runs with '{sol[0]}' = {sol[1]} although the input declares it dynamic"
                pinned = sol[1]
            if e.kind == "reshape" and sol is not None and sol[1] is not None:
                if sol[0] not in e.a.symbols and pinned_by.get(sol[0]) == sol[1]:
                    continue  # the data lost the dim to an earlier pin (its shape says 1): reported there
                pinned_by.setdefault(sol[0], sol[1])
            severity, note = self.severity, ""
            if ir and any(i in rank_only for i, _ in facts.inputs_of(sym_side.symbols)):
                severity, contract = Severity.WARNING, C.props(unknown=["value"])
                note = (" Every dim of that Parameter is -1 (what ov.convert_model gives without input shapes), "
                        "so whether other values are meant is unknown.")
            elif ir and not facts.is_build_constant(e.va if e.a.is_const else e.vb):
                # the fixed size reaches this layer computed by others (a constant shape further up
                # meets the input's dim here): the IR shows the clash, not which size is meant
                severity, contract = Severity.WARNING, C.props(unknown=["value"])
                note = (" The constant side is computed by other layers, not a constant input of this one, so "
                        "which size the model is meant for, and whether the -1 is, is not shown here.")
            elif all("?" in s for s in sym_side.symbols):
                # The input leaves these dims unnamed (exporters do for any dim they were not told
                # about): whether other values are meant to be fed is not known from the file.
                severity, contract = Severity.WARNING, C.props(unknown=["value"])
                note = " The input leaves the dim unnamed, so whether other values are meant is unknown."
            points = ctx.options.get("fed")
            if points and severity < Severity.ERROR:
                # a deployment folder's processor says exactly which sizes will be fed: they settle
                # the premise the warnings above leave unknown
                at = F.fed(facts, ctx.model, sym_side, const_side.value or 0, None, points)
                if at.verdict == "holds":
                    continue
                if at.verdict == "fails":
                    severity, note = Severity.ERROR, ""
                    contract = C.props(C.document_basis(spec_url(n.op_type) if ir else C.onnx_operator(n.op_type)))
            entry = None if ir else for_op(n.op_type)  # a shape rule engines hold differently (validity.toml)
            if entry is not None:
                severity, contract, note = _engine_contract(entry, ctx.target)
                if severity < Severity.ERROR:  # spec-only or unknown: one finding per rule and dim
                    if (entry["id"], str(sym_side)) in seen_contracts:
                        continue
                    seen_contracts.add((entry["id"], str(sym_side)))
                    tail = tail.replace("the model only runs", "the spec lets the model run only")
            rewrite = None
            if severity == Severity.ERROR:
                fed = F.fed(facts, ctx.model, sym_side, const_side.value or 0, ctx.options.get("shapes"),
                            ctx.options.get("fed"))
                if fed.verdict == "holds":
                    continue  # every size the user feeds is one the constant holds for
                if fed.verdict == "fails":
                    note += (f" The sizes that will be fed include some where it fails ({fed.where})."
                             if fed.where.startswith("the folder") else
                             f" The given shapes include sizes where it fails ({fed.where}).")
                elif fed.verdict == "batch":
                    note += f" {fed.where} is a batch dim, which serving fills with whatever batch arrives."
                else:
                    severity, contract, note, rewrite = _not_known_fed(ctx, facts, sym_side, const_side, note)
            yield ctx.finding(
                n,
                f"{quote_node(n)} {what}; {tail}.{note}",
                value=e.va, severity=severity, symbol=str(sym_side), pinned_value=pinned, rewrite=rewrite,
                **contract,
            )


def _not_known_fed(ctx: RuleContext, facts: ShapeFacts, side: Poly, const: Poly,
                   note: str) -> tuple[Severity, dict, str, Rewrite | None]:
    """A pin on dims other than batch, with no shapes given: every engine runs the model at the size
    it holds for, and whether other sizes will be fed is unknown (a warning naming that size)."""
    bases = F.base_symbols(facts, ctx.model, side.symbols)
    sizes = F.working_sizes(side, const.value or 0, len(bases))
    rewrite = None
    if sizes:
        said = " = ".join(bases) + " = " + (str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}..{sizes[-1]}")
        note += (f" It runs only at {said} (the size it was exported for); whether other sizes will be fed is "
                 "unknown: give them with --shapes (or the configured shapes) to check them, or pin the declared dims.")
        inputs = {v.name: v for v in ctx.model.graph.inputs}
        pins: dict[str, list] = {}
        for inp, axis in bases.values():
            shape = pins.setdefault(inp, ["?" if d is None else d for d in inputs[inp].shape or ()])
            shape[axis] = F.roundest(sizes)
        if len(pins) == 1:  # the rewrite pins one input; several name their sizes in the message only
            (inp, shape), = pins.items()
            rewrite = Rewrite("fix-input-shape", {"input": inp, "shape": shape}, safe=False,
                              description=f"Pin '{inp}' to the size the model holds for: {shape}.")
    else:
        note += (" Whether other sizes will be fed is unknown: give them with --shapes (or the configured shapes) "
                 "to check them.")
    return Severity.WARNING, C.props(unknown=["fed sizes"]), note, rewrite
