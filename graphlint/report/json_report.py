"""JSON report: a stable, documented schema (docs/json-schema.md), deterministic output.

Top level: ``schema`` ("graphlint-report/1"), ``version``, ``models`` (one entry per
model and target), ``failures`` (models that could not be read) and ``summary``.
"""

from __future__ import annotations

import json
from typing import Any

from graphlint import __version__
from graphlint.report import Run
from graphlint.rule import Finding

SCHEMA = "graphlint-report/1"


def finding_dict(f: Finding) -> dict[str, Any]:
    loc = f.location
    location = {k: v for k, v in {
        "file": loc.file, "graph": loc.graph_path, "node_index": loc.node_index, "node_name": loc.node_name,
        "layer_id": loc.layer_id, "layer_type": loc.layer_type, "layer_version": loc.layer_version,
        "line": loc.line,
    }.items() if v is not None}
    return {
        "rule_id": f.rule_id,
        "rule_name": f.rule_name,
        "severity": f.severity.label,
        "message": f.message,
        "node": f.node,
        "op_type": f.op_type,
        "value": f.value,
        "location": location,
        "target": f.target,
        "fingerprint": f.fingerprint,
        "fixable": f.rewrite is not None,
        "rewrite": f.rewrite.to_dict() if f.rewrite else None,
        "properties": f.properties,
        "suppressed": f.suppressed,
        "origin": f.origin.to_dict() if f.origin else None,
    }


def pipeline_dict(pres: Any) -> dict[str, Any]:
    """A deployment folder's pipeline for one target: stages, each edge's contract and verdict, findings."""
    pipe = pres.pipeline
    counts = {"error": 0, "warning": 0, "info": 0, "suppressed": 0}
    for f in pres.findings:
        counts["suppressed" if f.suppressed else f.severity.label] += 1
    doc = {
        "folder": pipe.folder,
        "layout": pipe.layout,
        "name": pipe.name,
        "target": pres.target.spec,
        "stages": [{"name": s.name, "role": s.role, "path": s.path} for s in pipe.stages],
        "edges": [{"edge": e.subject, "contract": e.contract, "verdict": e.verdict} for e in pres.contracts],
        "summary": counts,
        "findings": [finding_dict(f) for f in pres.findings],
    }
    if pres.confirm is not None:  # --confirm: the pipeline run end to end
        doc["confirm"] = pres.confirm
    return doc


def render_json(run: Run) -> str:
    models = []
    for res in run.results:
        counts = {"error": 0, "warning": 0, "info": 0, "suppressed": 0}
        for f in res.findings:
            counts["suppressed" if f.suppressed else f.severity.label] += 1
        entry = {
            "path": res.model.path,
            "format": res.model.format,
            "target": res.target.spec,
            "stats": res.stats,
            "summary": counts,
            "findings": [finding_dict(f) for f in res.findings],
        }
        if res.confirm is not None:  # --confirm: what ran where, and what it settled
            entry["confirm"] = res.confirm
        models.append(entry)
    pipelines = [pipeline_dict(p) for p in run.pipelines]
    c = run.counts()
    doc = {
        "schema": SCHEMA,
        "version": __version__,
        "models": models,
        "pipelines": pipelines,
        "failures": [{"path": f.path, "message": f.message} | ({"line": f.line} if f.line else {})
                     for f in run.failures],
        "summary": {k: c.get(k, 0) for k in ("error", "warning", "info", "suppressed")}
        | {"models": len(run.results), "failures": len(run.failures)},
        "notes": run.notes,
    }
    return json.dumps(doc, indent=2, default=str) + "\n"
