"""SARIF 2.1.0 for GitHub code scanning.

Facts from ../shared/reference/sarif-github.md and the schema beside it: one run; every
result has exactly one physical location with a repository-relative ``%SRCROOT%`` URI;
the text .xml gets ``region.startLine``, binary .onnx/.bin get no region and our own stable
``primaryLocationLineHash``; a finding whose node was made by a Python line in the repository
(graphlint.analysis.origins) is shown on that line (a text artifact: it gets its
``region.startLine``), the model node then a related location; load problems go to
``toolExecutionNotifications`` with ``executionSuccessful`` true whenever analysis finished; suppressed findings are left out
(GitHub ingests suppressed results as open alerts); at most 25,000 results.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import quote

from graphlint import DOCS_URI, INFORMATION_URI, __version__
from graphlint.analysis.origins import Origin
from graphlint.report import Run, jsonfmt
from graphlint.rule import Finding, Rule

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
MAX_RESULTS = 25_000
MAX_DESC = 1024
LOAD_FAILURE_RULE = "GL9000"


def artifact_uri(path: str, root: str) -> str:
    """Repository-relative, forward slashes, percent-encoded (GitHub resolves from the repo root)."""
    absolute = os.path.abspath(path)
    root = os.path.abspath(root)
    try:
        rel = os.path.relpath(absolute, root)
    except ValueError:  # other drive on Windows
        rel = absolute
    if rel.startswith(".."):
        rel = absolute  # outside the repository: GitHub makes absolute paths relative to the checkout
    rel = rel.replace(os.sep, "/")
    return quote(rel, safe="/")


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


def _result(f: Finding, rule_index: int, uri: str, root: str) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}}
    if f.location.line and f.model.lower().endswith(".xml"):
        physical["region"] = {"startLine": f.location.line}
    fq = f"{f.location.graph_path}/{f.node}" if f.node else (
        f"{f.location.graph_path}/{f.value}" if f.value else f.location.graph_path)
    location: dict[str, Any] = {
        "physicalLocation": physical,
        "logicalLocations": [{"fullyQualifiedName": fq, "kind": "member" if f.node else "variable"}],
    }
    props: dict[str, Any] = {"target": f.target, "severity": f.severity.label}
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
        "locations": [location],
        "partialFingerprints": {"primaryLocationLineHash": f.fingerprint},
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
    return {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(origin.path, root), "uriBaseId": "%SRCROOT%"},
                                 "region": {"startLine": origin.line}}}


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
    for fail in sorted(run.failures, key=lambda x: x.path):
        uri = artifact_uri(fail.path, run.root)
        notifications.append({
            "level": "error",
            "message": {"text": _sentence(fail.message)},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}}}],
            "descriptor": {"id": LOAD_FAILURE_RULE},
        })
        if LOAD_FAILURE_RULE in index:
            results.append({
                "ruleId": LOAD_FAILURE_RULE,
                "ruleIndex": index[LOAD_FAILURE_RULE],
                "level": "error",
                "message": {"text": _sentence(f"Model {fail.path!r} could not be read: {fail.message}")},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}}}],
                "partialFingerprints": {"primaryLocationLineHash": re.sub(r"\W", "", f"{LOAD_FAILURE_RULE}{uri}")[:64]},
            })
    findings = sorted(run.findings(), key=Finding.sort_key)
    uris: dict[str, str] = {}  # model path -> URI, resolved once per model rather than per finding
    for f in findings:
        if f.rule_id in index:
            uri = uris.get(f.model)
            if uri is None:
                uri = uris[f.model] = artifact_uri(f.model, run.root)
            results.append(_result(f, index[f.rule_id], uri, run.root))
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
    return jsonfmt.dumps(doc, indent=2, ensure_ascii=False) + "\n"  # = json.dumps(doc, indent=2, ensure_ascii=False)

