"""Turn what the engines did into verdicts on the static findings, and the runtime facts left over.

For each target an engine ran:

- a failure (load, run at a point, a crash) is matched to the findings that predicted it: a finding
  on the node the engine names, else, where the engine names none, the target's static errors, or
  its unknown-premise findings of the family the failure belongs to (validity and support for a
  load; shapes and contracts for a run). A matched finding whose premise was unknown is
  **confirmed**: an error where the size is given or the export's own (a warning at a sample size),
  carrying the engine's message. An unmatched failure is left for GL9101;
- when every point ran, each unknown-premise finding is **cleared**: info, saying which runs cleared
  it; a static error claiming that the engine refuses the model (validity, support: GL0/GL1) is
  **contradicted**: a warning that says the engine loaded and ran it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphlint.confirm.engines import Engine
from graphlint.confirm.execute import EngineRun
from graphlint.confirm.plan import SAMPLE, Plan, Point
from graphlint.ir import Model, Node
from graphlint.rule import Finding, Severity

LOAD_FAMILIES = ("GL0", "GL1")
RUN_FAMILIES = ("GL0", "GL1", "GL2", "GL3", "GL4", "GL5", "GL6", "GL7")


@dataclass
class Failure:
    """One thing an engine refused or broke on."""

    engine: EngineRun
    stage: str  # "load" | "run"
    message: str
    node: str | None
    point: Point | None = None

    @property
    def sample_only(self) -> bool:
        return self.point is not None and self.point.kind == SAMPLE

    def evidence(self) -> dict[str, Any]:
        e = self.engine.engine
        out: dict[str, Any] = {"engine": e.runner, "version": e.version, "device": e.device, "stage": self.stage,
                               "message": self.message}
        if self.node:
            out["node"] = self.node
        if self.point is not None:
            out["point"] = self.point.label
            out["shapes"] = {k: list(v) for k, v in self.point.shapes.items()}
        return out

    def text(self) -> str:
        where = "loading the model" if self.point is None else f"at {self.point.text()}"
        return f"{self.engine.engine.title} fails {where}: {self.message}"


@dataclass
class Settled:
    """The verdicts for one target's result, and what is left for the runtime rules."""

    unpredicted: list[Failure] = field(default_factory=list)
    confirmed: int = 0
    cleared: int = 0
    contradicted: int = 0


def failures(er: EngineRun) -> list[Failure]:
    out = []
    if er.load_error:
        out.append(Failure(er, "load", er.load_error, er.load_node))
    for rec in er.runs:
        if not rec.ok:
            out.append(Failure(er, "run", rec.error, rec.node, rec.point))
    return out


def basis(e: Engine) -> str:
    """The basis of a finding an engine run shows (the severity contract's ``engine-run`` kind)."""
    return f"engine-run:{e.runner} {e.version} {e.device}"


def nodes_by_name(model: Model) -> dict[str, Node]:
    """The nodes an engine may name: by node name, and by output name (OpenVINO's frontend names an
    ONNX node after its output, and its CPU plugin's messages use that name)."""
    out: dict[str, Node] = {}
    for n in model.walk():
        for o in n.outputs:
            if o is not None and o.name:
                out.setdefault(o.name, n)
        if n.name:
            out[n.name] = n
    return out


def settle(findings: list[Finding], er: EngineRun, plan: Plan, nodes: dict[str, Node]) -> Settled:
    """Confirm, clear or contradict ``findings`` (one target's, changed in place) by ``er``'s runs;
    ``nodes``: :func:`nodes_by_name` of the model."""
    out = Settled()
    if not er.loaded and not er.load_error:
        return out
    fails = failures(er)
    for f in fails:  # the node as findings name it
        if f.node and f.node in nodes:
            f.node = nodes[f.node].label
    for f in fails:
        matched = _predicted_by(findings, f)
        if not matched:
            out.unpredicted.append(f)
            continue
        for finding in matched:
            if _confirm(finding, f, er.engine):
                out.confirmed += 1
    _claims(findings, er, out)
    if fails or er.crashed:
        return out
    ran = [rec for rec in er.runs if rec.ok]
    if not ran:
        return out
    said = ", ".join(rec.point.label for rec in ran)
    for finding in findings:
        props = finding.properties
        if props.get("confirm"):
            continue
        if props.get("unknown"):
            finding.severity = Severity.INFO
            finding.message += f" Cleared: {er.engine.title} ran the model at {said}."
            props["confirm"] = {"verdict": "cleared", "engine": er.engine.runner, "version": er.engine.version,
                                "points": [rec.point.label for rec in ran]}
            out.cleared += 1
        elif finding.severity >= Severity.ERROR and finding.rule_id.startswith(LOAD_FAMILIES) \
                and finding.target.split("@")[0] in ("ort", "openvino", "trt"):
            finding.severity = Severity.WARNING
            finding.message += f" Contradicted: {er.engine.title} loaded the model and ran it at {said}."
            props["confirm"] = {"verdict": "contradicted", "engine": er.engine.runner, "version": er.engine.version,
                                "points": [rec.point.label for rec in ran]}
            out.contradicted += 1
    return out


def _claims(findings: list[Finding], er: EngineRun, out: Settled) -> None:
    """A static error that names the size the model breaks at (``fails_at``: GL3007) was run at that size:
    where the engine ran it, the claim is contradicted (a warning saying so)."""
    for f in findings:
        claim = f.properties.get("fails_at")
        if not claim or f.severity < Severity.ERROR or f.properties.get("confirm"):
            continue
        # the run at the claimed sizes (a point the plan merged with another of the same shapes keeps that label)
        rec = next((r for r in er.runs if all(list(r.point.shapes.get(n, ())) == list(s) for n, s in claim.items())),
                   None)
        if rec is None or not rec.ok:
            continue
        f.severity = Severity.WARNING
        f.message += f" Contradicted: {er.engine.title} ran the model at {rec.point.text()}."
        f.properties["confirm"] = {"verdict": "contradicted", "engine": er.engine.runner,
                                   "version": er.engine.version, "point": rec.point.label}
        out.contradicted += 1


def _predicted_by(findings: list[Finding], f: Failure) -> list[Finding]:
    live = [x for x in findings if not x.suppressed and x.severity >= Severity.WARNING]
    if f.node:
        on_node = [x for x in live if x.node == f.node]
        if on_node:
            return on_node
    families = LOAD_FAMILIES if f.stage == "load" else RUN_FAMILIES
    errors = [x for x in live if x.severity >= Severity.ERROR and x.rule_id.startswith(families)]
    if errors and not f.node:
        return errors
    if f.node:  # the engine names a node no finding is about: a static error elsewhere did not predict it
        return []
    return [x for x in live if x.properties.get("unknown") and x.rule_id.startswith(families)]


SAMPLE_NOTE = " (at a sample size graphlint chose: give the sizes you feed with --shapes)"


def _confirm(finding: Finding, f: Any, engine: Engine, sample_note: str = SAMPLE_NOTE) -> bool:
    """Confirm ``finding`` by failure ``f`` (a model's :class:`Failure` or a pipeline run's): its evidence
    recorded; an unknown premise settled, and the finding an error, unless the size was a sample. False
    when an earlier failure confirmed it already."""
    props = finding.properties
    if props.get("confirm", {}).get("verdict") == "confirmed":
        return False
    props["confirm"] = {"verdict": "confirmed", **f.evidence()}
    if props.get("unknown") and not f.sample_only:
        props.pop("unknown")
        props["basis"] = basis(engine)
        finding.severity = Severity.ERROR
    elif finding.severity < Severity.ERROR and f.sample_only:
        finding.message += sample_note
    finding.message += f" Confirmed: {f.text()}."
    return True


def run_note(er: EngineRun, settled: Settled | None) -> dict[str, Any]:
    """The one-line summary a report prints per model and target (``confirm`` of the result)."""
    e = er.engine
    doc: dict[str, Any] = {"engine": e.runner, "version": e.version, "device": e.device,
                           "seconds": round(er.seconds, 3)}
    if er.precision:
        doc["precision"] = er.precision
    if er.skipped:
        doc["skipped"] = er.skipped
        return doc
    doc["points"] = [{"label": r.point.label, "kind": r.point.kind, "ok": r.ok,
                      "shapes": {k: list(v) for k, v in r.point.shapes.items()}} for r in er.runs]
    if er.load_error:
        doc["load_error"] = er.load_error
    if er.crashed:
        doc["crashed"] = er.crashed
    if settled is not None:
        doc.update(confirmed=settled.confirmed, cleared=settled.cleared, contradicted=settled.contradicted,
                   unpredicted=len(settled.unpredicted))
    return doc


def confirm_drift(findings: list[Finding], divergences: list[Any], er: EngineRun) -> list[Any]:
    """Confirm the drift findings (GL2xxx) on the node a bisection found; the divergences no drift
    finding of this target predicted are returned, for GL9103."""
    left = []
    for d in divergences:
        loc = d.bisected
        name = loc.node if loc is not None else None
        drift = [f for f in findings if name and f.node == name and f.rule_id.startswith("GL2")]
        if not drift or (loc.wrong is not None and er.engine.runner not in loc.wrong):
            left.append(d)
            continue
        other = d.b if d.a is er else d.a
        for f in drift:
            f.properties["confirm"] = {"verdict": "confirmed", "engine": er.engine.runner,
                                       "version": er.engine.version, "point": d.point.label,
                                       "against": other.engine.runner, "message": d.comparison.problem}
            f.message += (f" Confirmed: {er.engine.title} and {other.engine.title} return different values from this "
                          f"node on, at {d.point.text()} ({d.comparison.problem}).")
            if loc.wrong is not None:  # the reference says this engine computes something else
                f.properties.pop("unknown", None)
                f.severity = Severity.ERROR
                f.properties["basis"] = basis(er.engine)
    return left


def confirm_shapes(findings: list[Finding], problems: list[Any], model: Model) -> list[Any]:
    """Confirm the findings about the node that makes an output of the wrong shape (GL2011's shape
    drift, an unknown-premise shape finding); the problems no finding predicted are returned, for GL9102."""
    producers = {v.name: v.producer for v in model.graph.outputs}
    left = []
    for p in problems:
        node = producers.get(p.output)
        label = node.label if node is not None else None
        mine = [f for f in findings if label and f.node == label
                and (f.rule_id.startswith("GL2") or (f.properties.get("unknown") and f.rule_id.startswith("GL3")))]
        if not mine:
            left.append(p)
            continue
        for f in mine:
            if p.record.point.kind != SAMPLE and (p.empty or f.rule_id.startswith("GL2")):
                f.properties.pop("unknown", None)  # the engine's shape drift, or nothing where data is due
                f.severity = Severity.ERROR
                f.properties["basis"] = basis(p.engine.engine)
            f.properties["confirm"] = {"verdict": "confirmed", "engine": p.engine.engine.runner,
                                       "version": p.engine.engine.version, "point": p.record.point.label,
                                       "output": p.output, "got": list(p.got), "expected": list(p.expected)}
            f.message += (f" Confirmed: {p.engine.engine.title} returns '{p.output}' as {list(p.got)} at "
                          f"{p.record.point.text()}, where {p.source} {list(p.expected)}.")
    return left


# A deployment folder run end to end (graphlint.confirm.pipeline): which pipeline rules each kind of failure
# bears on. rows / tokens / legacy: the image features against the image tokens (GL8001; a config
# disagreement the runtime reads, GL8005; an unknown processor's stated count, GL8008); vision: a stage of
# the vision chain fails at a fed size (GL8001's frozen stage); width / dtype: the merge (GL8002, GL8003);
# text / lm / logits: the embeddings and the language model (ids, KV geometry, position ids, widths).
PIPELINE_PREDICTS = {
    "vision": ("GL8001",), "rows": ("GL8001", "GL8005", "GL8008"), "tokens": ("GL8001", "GL8005", "GL8008"),
    "legacy": ("GL8001", "GL8005"), "width": ("GL8002",), "dtype": ("GL8003",), "text": ("GL8007", "GL8002"),
    "lm": ("GL8006", "GL8002", "GL8003", "GL8007"), "logits": ("GL8006", "GL8002"),
}
# the unknown premise of a pipeline finding -> the cases whose runs answer it (graphlint.confirm.pipeline.Case.question)
PIPELINE_QUESTIONS = {"rows": "rows", "images per prompt": "images per prompt", "processor": "processor"}


def _question(finding: Finding) -> str | None:
    return next((PIPELINE_QUESTIONS[u] for u in finding.properties.get("unknown") or () if u in PIPELINE_QUESTIONS),
                None)


def settle_pipeline(findings: list[Finding], run: Any) -> Settled:
    """Confirm or clear a pipeline's findings (one target's, changed in place) by an end-to-end run
    (graphlint.confirm.pipeline.PipelineRun): a failure confirms the findings of the rules it bears on
    (PIPELINE_PREDICTS: their errors, and their unknown-premise findings whose question its case asks); an
    unknown whose every case ran end to end is cleared; a failure nothing predicted is left for GL9104."""
    out = Settled()
    fails = run.failures()
    for f in fails:
        matched = _pipeline_predicted(findings, f)
        if not matched:
            out.unpredicted.append(f)
            continue
        for finding in matched:
            if _confirm(finding, f, f.engine, sample_note=""):  # a two-image prompt: no --shapes to give
                out.confirmed += 1
    whole = any(f.case is None for f in fails)  # a stage that did not load, a crash outside a case
    for finding in findings:
        props = finding.properties
        q = _question(finding)
        if q is None or props.get("confirm") or finding.suppressed:
            continue
        cases = [c for c in run.cases if c.question == q]
        ran = run.ran(q)
        if whole or not cases or len(ran) < len(cases) or any(f.case is not None and f.case.question == q
                                                              for f in fails):
            continue
        if any(c.tokens is None for c in cases):  # rows only: no count to hold them to
            continue
        e = run.engine
        said = (f"{len(ran)} prompt{'s' if len(ran) != 1 else ''}" if len(ran) > 2
                else " and ".join(c.text() for c, _ in ran))
        finding.severity = Severity.INFO
        finding.message += (f" Cleared: {e.title} ran the pipeline end to end at {said}; the vision side returned "
                            "one row per image token and the language model its logits.")
        props["confirm"] = {"verdict": "cleared", "engine": e.runner, "version": e.version,
                            "points": [c.label for c, _ in ran]}
        out.cleared += 1
    return out


def _pipeline_predicted(findings: list[Finding], f: Any) -> list[Finding]:
    rules = PIPELINE_PREDICTS.get(f.kind, ())
    out = []
    for x in findings:
        if x.suppressed or not x.rule_id.startswith(rules):
            continue
        q = _question(x)
        if x.properties.get("unknown"):
            if f.case is not None and q == f.case.question:
                out.append(x)
        elif x.severity >= Severity.ERROR:
            out.append(x)
    return out
