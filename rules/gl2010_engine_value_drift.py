"""GL2010 engine-value-drift: the target engine computes this node's values differently from the ONNX spec."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _drift as D
from graphlint_rules import _engine_drift as E

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity

ID = "GL2010"


class EngineValueDrift(Rule):
    """The target engine loads and runs this node but computes other numbers than the ONNX spec.

    ## What it checks
    Every node against the `kind = "values"` facts of `rules/data/engine_drift.toml` for the
    active target (engine, version, device): the op, its opset and the fact's condition (attribute
    values, input / output dtypes, whether an input is present, constant or computed, and a few
    named predicates such as "the ReduceMax input may be a row of -Inf"). The facts were measured
    by running the ONNX backend node tests on onnxruntime 1.32 CPU and OpenVINO 2026.4 CPU (f32)
    and comparing with the tests' reference outputs (`rules/data/gen/gen_engine_drift.py`);
    TensorRT facts come from its operators documentation and issue tracker and are marked
    documentary. Examples: OpenVINO ignores `Resize` `antialias=1` and `Attention` window sizes,
    computes `SpaceToDepth` `mode=CRD` as DCR, saturates +-Inf when casting to or from double,
    returns -FLT_MAX for a `ReduceMax` of -Inf; onnxruntime drops the causal mask from
    `Attention`'s `qk_matmul_output` with a past and a mask.

    ## Why it matters
    Nothing fails: the model loads, runs and returns different numbers than on another engine or
    in the framework it came from. Each finding names the engine, version and device, what it
    computes instead, the largest difference seen and the source (the shipped table with the node
    test that shows it, and the upstream issue where one exists). A condition whose premise the
    model does not tell (e.g. `scales` not constant) gives a "may compute" finding.

    ## Example
    `torch.nn.functional.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True)`
    exported at opset 18 and run on `--target openvino`: the Resize has `antialias=1`, which the
    CPU plugin ignores (max difference 0.53 on the node tests).

    ## Fix
    Follow the finding's advice; where a verifiable rewrite exists it is attached
    (`space-to-depth-decompose` for SpaceToDepth CRD), and `graphlint fix` applies it and checks
    the rewritten model against the original.
    """

    id = ID
    name = "engine-value-drift"
    severity = Severity.WARNING
    op_types = E.op_types("values")
    fixable = True
    source = f"{E.SOURCE} (kind = values); ONNX backend node tests; TensorRT operators.md"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        yield from report(node, ctx, "values", Severity.WARNING)


def report(node: Node, ctx: RuleContext, kind: str, severity: Severity) -> Iterator[Finding]:
    """One finding per fact of ``kind`` whose condition holds on ``node`` for the active target."""
    for f in E.facts_for(ctx.target, kind, node):
        hit, maybe = E.matches(f, node)
        if not hit:
            continue
        # an error needs the engine to have shown it and the premise to be known
        sev = severity if not (maybe or f.get("documentary")) else Severity.WARNING
        rw = D.rewrite(f["rewrite"], node) if f.get("rewrite") else None
        yield ctx.finding(node, E.message(f, node, maybe), rewrite=rw, severity=sev, **E.props(f, maybe))
