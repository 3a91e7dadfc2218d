"""GL0002 opset-outside-target: the model's opset or IR version is outside what the target reads."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _contract as C

from graphlint.rule import Finding, Rule, RuleContext, Severity


class OpsetOutsideTarget(Rule):
    """The model imports an opset (or uses an IR version) the target engine does not accept.

    ## What it checks
    Compares each imported opset domain with the range the target profile accepts
    (`rules/data/targets/*.toml`; e.g. TensorRT 10.15's parser reads ai.onnx opsets 9 to 24,
    TensorRT 10.1's 9 to 20) and the model's IR version with the newest this onnx knows.

    ## Why it matters
    A parser given an opset newer than it knows either refuses the model or, worse, imports
    ops with the semantics of the version it does know. An opset older than the range is
    usually refused outright.

    ## Example
    A model exported with `opset_version=21` checked with `--target trt@10.1` (opsets 9-20).

    ## Fix
    Re-export at an opset inside the range (`torch.onnx.export(..., opset_version=17)`), or
    convert with `onnx.version_converter.convert_version` after checking the drift rules (GL2xx),
    or target a newer engine version.
    """

    id = "GL0002"
    name = "opset-outside-target"
    severity = Severity.ERROR
    source = "target profiles in rules/data/targets/ (each citing its engine's document at a fixed version)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        model, target = ctx.model, ctx.target
        # Whether the profile's range is the engine's own limit (a refusal, shown or documented) or
        # only the range graphlint's table was built for (then outside it is not known to fail).
        enforced = bool(target.option("opset_range_enforced"))
        basis = C.props(C.profile_basis(target, "opsets")) if enforced else C.props(unknown=["engine behaviour"])
        tail = "" if enforced else f" Whether {target.title} loads it is not recorded (engine behaviour unknown)."
        severity = self.severity if enforced else Severity.WARNING
        for domain, version in sorted(model.opset_imports.items()):
            rng = target.opset_range(domain)
            if rng is None:
                continue  # unknown domains are GL0003's
            lo, hi = rng
            if version > hi:
                yield ctx.finding(
                    None,
                    f"The model imports {domain} opset {version}, newer than {target.title} reads "
                    f"(opsets {lo} to {hi}); re-export at opset {hi} or lower.{tail}",
                    severity=severity, domain=domain, opset=version, accepted=[lo, hi], **basis,
                )
            elif version < lo:
                yield ctx.finding(
                    None,
                    f"The model imports {domain} opset {version}, older than {target.title} reads "
                    f"(opsets {lo} to {hi}); convert it to opset {lo} or newer.{tail}",
                    severity=severity, domain=domain, opset=version, accepted=[lo, hi], **basis,
                )
        from graphlint.load.onnx_loader import MAX_IR_VERSION

        if model.format == "onnx" and model.ir_version and model.ir_version > MAX_IR_VERSION:
            yield ctx.finding(
                None,
                f"The model has IR version {model.ir_version}, newer than this tool's onnx knows "
                f"({MAX_IR_VERSION}); engines built on older onnx releases refuse such models, and whether "
                f"{target.title} is one is not recorded (engine behaviour unknown).",
                severity=Severity.WARNING, ir_version=model.ir_version, **C.props(unknown=["engine behaviour"]),
            )

