"""GL9103 engines-disagree: under --confirm, two engines return different values for the same inputs."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rule, Severity


class EnginesDisagree(Rule):
    """Two engines compute different values for the same model and inputs.

    ## What it checks
    With `--confirm` and two or more targets whose engines are installed, the outputs of every
    run are compared engine against engine, at a tolerance set by the output dtype and by the
    precision each engine computed in (OpenVINO CPU runs float32 in bf16 on AMX hosts). A
    difference is bisected: intermediate values are marked as outputs until the first node whose
    output differs is found, and that node is run alone in ONNX's reference implementation
    (`onnx.reference`) on the values both engines agree on, which says which engine is wrong.

    ## Why it matters
    Op semantic drift between engines (Resize coordinate modes, opset-dependent Softmax, fused
    kernels) gives results that are wrong without any error. A static drift finding (GL2xxx) on
    the node the bisection finds is confirmed by the run instead of reported again.

    ## Example
    A Resize with `coordinate_transformation_mode="tf_crop_and_resize"` whose output differs
    between ONNX Runtime and OpenVINO from the first pixel row.

    ## Fix
    Rewrite the node to a form every engine computes alike (`graphlint fix` has rewrites for the
    known cases), or pin the engine the results were validated on.

    When `graphlint.check` is given the `torch.onnx.ONNXProgram` itself, each engine is also
    compared with its exported program (the PyTorch reference), which decides who is wrong.

    An error for the target whose engine disagrees with the reference; a warning naming both
    engines where the reference cannot run the node (a contrib op) or the bisection could not
    isolate it.
    """

    id = "GL9103"
    name = "engines-disagree"
    family = "runtime"
    severity = Severity.ERROR
    scope = "confirm"
    dialects = frozenset({ONNX, OPENVINO})
    source = "engine runs under --confirm (graphlint/confirm/bisect.py)"

    def check_confirm(self, ctx) -> Iterator[Finding]:
        from graphlint.confirm.verdicts import basis

        er = ctx.run
        for d in ctx.divergences:
            other = d.b if d.a is er else d.a
            loc = d.bisected
            node = ctx.node(loc.node) if loc is not None else None
            wrong = loc.wrong if loc is not None else None  # runner names the reference disagrees with
            mine = er.engine.runner
            if wrong is not None and mine not in wrong:
                continue  # this engine agrees with the reference: the finding belongs to the other target
            where = (f"from node '{loc.node}' ({loc.op_type}) on: {loc.detail}" if loc is not None and loc.node
                     else (loc.detail if loc is not None else f"at output '{d.output}'"))
            msg = (f"{er.engine.title} and {other.engine.title} return different values at {d.point.text()}: "
                   f"{d.comparison.problem}; the difference starts {where}.")
            if other.engine.runner == "pytorch":
                yield ctx.finding(node, f"{er.engine.title} returns other values than the PyTorch reference (the "
                                  f"exported program given to graphlint.check, torch {other.engine.version}) at "
                                  f"{d.point.text()}: {d.comparison.problem}.", severity=Severity.ERROR,
                                  basis=basis(er.engine), confirm={"verdict": "runtime", "engines": [mine, "pytorch"],
                                                            "point": d.point.label, "reference": "pytorch"}, kind="pytorch")
            elif wrong is not None:
                msg += f" ONNX's reference implementation agrees with {other.engine.title} on that node."
                yield ctx.finding(node, msg, severity=Severity.ERROR, basis=basis(er.engine),
                                  confirm={"verdict": "runtime", "engines": [mine, other.engine.runner],
                                           "point": d.point.label, "reference": "onnx.reference"},
                                  kind=other.engine.runner)
            else:
                yield ctx.finding(node, msg + " Which engine is right is not settled (the reference implementation "
                                  "could not run the node alone).", severity=Severity.WARNING,
                                  confirm={"verdict": "runtime", "engines": [mine, other.engine.runner],
                                           "point": d.point.label}, unknown=["which engine is right"],
                                  kind=other.engine.runner)
