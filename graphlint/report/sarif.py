"""SARIF 2.1.0 for GitHub code scanning.

Facts from ../shared/reference/sarif-github.md and the schema beside it: one run; every
result has exactly one physical location: a ``%SRCROOT%``-relative URI for a model under the
root, an absolute ``file:///`` URI with no ``uriBaseId`` for one outside it (SARIF 2.1.0
§3.4.3-3.4.4: a relative reference is resolved against its base, so an absolute path may not
carry one). The text .xml gets ``region.startLine`` wherever a line is known (a finding's
``<layer>`` or ``<edge>``, the line the XML parser stopped at); binary .onnx/.bin get no region.
A finding whose node was made by a Python line in the repository (graphlint.analysis.origins) is shown
on that line (a text artifact: it gets its ``region.startLine``), the model node then a related location.
Every result's ``primaryLocationLineHash`` is our own, stable and unique in the run (code
scanning merges results with equal fingerprints). Load problems go to
``toolExecutionNotifications`` with ``executionSuccessful`` true whenever analysis finished;
suppressed findings are left out (GitHub ingests suppressed results as open alerts); at most
25,000 results.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from typing import Any
from urllib.parse import quote

from graphlint import DOCS_URI, INFORMATION_URI, __version__
from graphlint.analysis.origins import Origin
from graphlint.report import Run
from graphlint.rule import Finding, Rule, Severity

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
MAX_RESULTS = 25_000
MAX_DESC = 1024
LOAD_FAILURE_RULE = "GL9000"
SRCROOT = "%SRCROOT%"
TEXT_ARTIFACTS = (".xml", ".json", ".toml")  # artifacts with lines (IR, a pipeline's configs); .onnx/.bin get none


def artifact_location(path: str, root: str) -> dict[str, str]:
    """``{"uri", "uriBaseId"}`` for a model under ``root``; ``{"uri": "file:///..."}`` outside it.

    Relative URIs use forward slashes and percent-encoding (GitHub resolves them from the
    repository root).
    """
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, os.path.abspath(root))
    except ValueError:  # another drive on Windows
        rel = None
    if rel is None or rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return {"uri": pathlib.Path(absolute).as_uri()}
    return {"uri": quote(rel.replace(os.sep, "/"), safe="/"), "uriBaseId": SRCROOT}


def physical_location(location: dict[str, str], path: str, line: int | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": dict(location)}
    if line and path.lower().endswith(TEXT_ARTIFACTS):
        physical["region"] = {"startLine": line}
    return physical


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DESC else text[: MAX_DESC - 1] + "…"


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def rule_descriptor(rule: type[Rule]) -> dict[str, Any]:
    sections = rule.sections()
    full = sections.get("what it checks") or rule.summary()
    doc_url = f"{DOCS_URI}/rules/{rule.id}.md"
    tags = list(dict.fromkeys([rule.family_name(), *sorted(rule.targets or []), rule.pack]))[:10]
    level = rule.severity.sarif_level
    return {
        "id": rule.id,
        "name": rule.pascal_name(),
        "shortDescription": {"text": _clip(rule.summary())},
        "fullDescription": {"text": _clip(full)},
        "help": {
            "text": _clip(f"{rule.summary()} Fix: {sections.get('fix', 'see the rule documentation')} Docs: {doc_url}"),
            "markdown": f"{rule.doc()}\n\n[Rule documentation]({doc_url})",
        },
        "helpUri": doc_url,
        "defaultConfiguration": {"level": level},
        "properties": {
            "tags": tags,
            "precision": "high",
            "problem.severity": {"error": "error", "warning": "warning", "note": "recommendation"}[level],
        },
    }


def _result(f: Finding, targets: list[str], rule_index: int, location: dict[str, str],
            fingerprint: str, root: str) -> dict[str, Any]:
    fq = f"{f.location.graph_path}/{f.node}" if f.node else (
        f"{f.location.graph_path}/{f.value}" if f.value else f.location.graph_path)
    location_: dict[str, Any] = {
        "physicalLocation": physical_location(location, f.model, f.location.line),
        "logicalLocations": [{"fullyQualifiedName": fq, "kind": "member" if f.node else "variable"}],
    }
    props: dict[str, Any] = {"target": f.target, "severity": f.severity.label}
    if len(targets) > 1:
        props["targets"] = targets
    for key in ("node", "op_type", "value"):
        if getattr(f, key):
            props[key] = getattr(f, key)
    if f.location.layer_id is not None:
        props["layer_id"] = f.location.layer_id
    if f.rewrite:
        props["fixable"] = True
        props["rewrite"] = f.rewrite.to_dict()
    if f.properties:
        props["details"] = f.properties
    result = {
        "ruleId": f.rule_id,
        "ruleIndex": rule_index,
        "level": f.severity.sarif_level,
        "message": {"text": _sentence(f.message)},
        "locations": [location_],
        "partialFingerprints": {"primaryLocationLineHash": fingerprint},
        "properties": props,
    }
    if f.origin is not None:
        _place_on_source(result, f.origin, f.model, root)
    return result


def _place_on_source(result: dict[str, Any], origin: Origin, model: str, root: str) -> None:
    """Put a result on the Python line that made its node when that file is in the repository,
    the model node becoming its related location; otherwise relate the frame to it.

    The fingerprint stays ours: one line of a loop makes a node per iteration, and GitHub would
    merge their alerts under the one hash the upload action computes from the line's text."""
    (node,) = result["locations"]
    source = _source_location(origin, root)
    if source is not None and origin.under(root) is not None:
        node.update(id=1, message={"text": f"Node in {model}."})
        result["locations"], result["relatedLocations"] = [source], [node]
        shown = model.replace("[", "\\[").replace("]", "\\]")  # literal brackets next to a link
        result["message"]["text"] += f" The node is in [{shown}](1)."
    else:
        related = source or {}
        related.update(id=1, message={"text": f"Made {origin.describe()}."})
        result["relatedLocations"] = [related]
    result["properties"]["origin"] = origin.to_dict()


def _source_location(origin: Origin, root: str) -> dict[str, Any] | None:
    """The Python line as a SARIF location (a text artifact: it gets its line), None when the
    file was not found."""
    if origin.path is None or origin.line is None:
        return None
    return {"physicalLocation": {"artifactLocation": artifact_location(origin.path, root),
                                 "region": {"startLine": origin.line}}}


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


Entry = tuple[str, Finding, list[str]]  # (the finding's fingerprint, the finding, its targets)


def distinct_results(findings: list[Finding]) -> list[Entry]:
    """One entry per distinct result, with the targets that report it.

    A finding every target reports alike (same rule, subject, level and message: onnx.checker's,
    say) is one alert, not one per target; a model named twice is linted twice but reported once.
    """
    merged: dict[tuple[str, Severity, str], Entry] = {}
    for f in findings:
        fp = f.fingerprint
        entry = merged.setdefault((fp, f.severity, f.message), (fp, f, []))
        if f.target not in entry[2]:
            entry[2].append(f.target)
    return list(merged.values())


def unique_fingerprints(entries: list[Entry]) -> list[str]:
    """``primaryLocationLineHash`` per entry: unique in the run, stable across runs.

    The base is the finding's own fingerprint (rule, model, graph path, node, value and the
    rule's ``kind`` discriminator; no index, so edits elsewhere in the graph do not move it).
    Results that still share one (the same rule on the same subject for different targets, or
    with different messages) are told apart by their targets when those differ, else by their
    level and message, which distinct_results() made unique within such a group. No counters:
    a result's fingerprint depends only on itself and its siblings on the same subject.
    """
    out = [fp for fp, _, _ in entries]
    groups: dict[str, list[int]] = {}
    for i, fp in enumerate(out):
        groups.setdefault(fp, []).append(i)
    for base, members in groups.items():
        if len(members) == 1:
            continue
        by_target = [",".join(entries[i][2]) for i in members]
        use_targets = len(set(by_target)) == len(members)
        for i, targets in zip(members, by_target, strict=True):
            f = entries[i][1]
            out[i] = _hash(f"{base}|{targets}" if use_targets else f"{base}|{f.severity.label}|{f.message}")
    return out


def render_sarif(run: Run) -> str:
    rules = sorted({r.id: r for r in run.rules}.values(), key=lambda r: r.id)
    needed = {f.rule_id for f in run.findings()} | ({LOAD_FAILURE_RULE} if run.failures else set())
    from graphlint.registry import find_rule

    for rid in sorted(needed - {r.id for r in rules}):
        extra = find_rule(rid)
        if extra is not None:
            rules.append(extra)
    rules.sort(key=lambda r: r.id)
    index = {r.id: i for i, r in enumerate(rules)}
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    reported: set[str] = set()
    for fail in sorted(run.failures, key=lambda x: x.path):
        location = artifact_location(fail.path, run.root)
        if location["uri"] in reported:  # the same file named twice
            continue
        reported.add(location["uri"])
        physical = physical_location(location, fail.path, fail.line)
        notifications.append({
            "level": "error",
            "message": {"text": _sentence(fail.message)},
            "locations": [{"physicalLocation": physical}],
            "descriptor": {"id": LOAD_FAILURE_RULE},
        })
        if LOAD_FAILURE_RULE in index:
            results.append({
                "ruleId": LOAD_FAILURE_RULE,
                "ruleIndex": index[LOAD_FAILURE_RULE],
                "level": "error",
                "message": {"text": _sentence(f"Model {fail.path!r} could not be read: {fail.message}")},
                "locations": [{"physicalLocation": physical}],
                "partialFingerprints": {"primaryLocationLineHash": _hash(f"{LOAD_FAILURE_RULE}|{location['uri']}")},
            })
    entries = [e for e in distinct_results(sorted(run.findings(), key=Finding.sort_key)) if e[1].rule_id in index]
    locations: dict[str, dict[str, str]] = {}  # model path -> artifactLocation, resolved once per model
    for (_, f, targets), fingerprint in zip(entries, unique_fingerprints(entries), strict=True):
        location = locations.get(f.model)
        if location is None:
            location = locations[f.model] = artifact_location(f.model, run.root)
        results.append(_result(f, targets, index[f.rule_id], location, fingerprint, run.root))
    if len(results) > MAX_RESULTS:
        notifications.append({
            "level": "warning",
            "message": {"text": f"{len(results)} results were cut to {MAX_RESULTS}, GitHub code scanning's limit."},
        })
        results = results[:MAX_RESULTS]
    for note in run.notes:
        notifications.append({"level": "note", "message": {"text": _sentence(note)}})
    invocation: dict[str, Any] = {"executionSuccessful": True}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    doc = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "graphlint",
                "semanticVersion": __version__,
                "version": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [rule_descriptor(r) for r in rules],
            }},
            "invocations": [invocation],
            "results": results,
            "columnKind": "unicodeCodePoints",
        }],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
