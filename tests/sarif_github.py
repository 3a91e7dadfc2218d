"""One check for "SARIF GitHub code scanning accepts and places correctly", used by every test
that produces SARIF from hostile input (tests/hostile_support.py) and by the core SARIF tests.

Sources: the SARIF 2.1.0 schema (Draft 4) and ../shared/reference/sarif-github.md (what the
upload accepts: a first location with ``physicalLocation.artifactLocation.uri``, a ``results``
array, at most 25,000 results and 20 runs, rule metadata limits; what it uses: only
``partialFingerprints.primaryLocationLineHash``, regions only on text artifacts), plus SARIF
2.1.0 §3.4.3-3.4.4 (a URI with a ``uriBaseId`` is a relative reference; an absolute URI has none).
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from urllib.parse import unquote, urlsplit

from tests.conftest import SARIF_SCHEMA

BINARY = (".onnx", ".bin", ".data", ".pb")
TEXT = (".xml", ".py", ".json", ".toml")  # IR XML, the Python line that made a node, a pipeline's configs
LEVELS = ("note", "warning", "error")
_AT_LINE = re.compile(r"\bat line (\d+)\b")


@cache
def _validator():
    import jsonschema

    with open(SARIF_SCHEMA, encoding="utf-8") as f:
        return jsonschema.Draft4Validator(json.load(f))


def check_github_sarif(doc: dict, root: str | None = None) -> None:
    """Assert ``doc`` validates and code scanning takes it as meant. With ``root`` (the SARIF
    root the run used), each URI is also checked to be root-relative exactly when the file is
    under the root, and to name a path under it."""
    _validator().validate(doc)
    assert doc["version"] == "2.1.0" and doc["$schema"]
    runs = doc["runs"]
    assert 1 <= len(runs) <= 20
    keys = [(r["tool"]["driver"]["name"], r["tool"]["driver"].get("version"),
             r.get("automationDetails", {}).get("id")) for r in runs]
    assert len(keys) == len(set(keys)), "two runs with the same tool, version and category"
    for run in runs:
        _check_run(run, root)


def _check_run(run: dict, root: str | None) -> None:
    driver = run["tool"]["driver"]
    assert driver["name"] and driver.get("semanticVersion") and driver.get("informationUri")
    rules = driver.get("rules", [])
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids)) and len(ids) <= 25_000
    for r in rules:
        assert 0 < len(r["name"]) <= 255 and re.fullmatch(r"(?:[A-Z][a-z0-9]*)+", r["name"]), r["name"]
        for key in ("shortDescription", "fullDescription"):
            assert 0 < len(r[key]["text"]) <= 1024
        assert r["help"]["text"] and r["help"]["markdown"]
        assert r["defaultConfiguration"]["level"] in LEVELS
        props = r.get("properties", {})
        tags = props.get("tags", [])
        assert len(tags) <= 20 and len(tags) == len(set(tags))
        assert props.get("problem.severity", "warning") in ("error", "warning", "recommendation")
        if "security-severity" in props:
            assert 0 < float(props["security-severity"]) <= 10
    if "automationDetails" in run:
        assert run["automationDetails"]["id"].endswith("/"), "a category is written as 'category/'"
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is True  # load problems are notifications, not tool errors
    for note in invocation.get("toolExecutionNotifications", []):
        assert note["level"] in LEVELS and note["message"]["text"]
        for loc in note.get("locations", []):
            _check_location(loc["physicalLocation"], note["message"]["text"], root)
    results = run["results"]  # present even when empty: it marks earlier alerts fixed
    assert len(results) <= 25_000
    fingerprints = []
    for res in results:
        assert 0 <= res["ruleIndex"] < len(rules) and rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in LEVELS
        assert res["message"]["text"].strip()
        assert "suppressions" not in res, "suppressed results are ingested as open alerts"
        assert res["locations"], "a result without locations is rejected"
        physical = res["locations"][0]["physicalLocation"]
        _check_location(physical, res["message"]["text"], root)
        if physical["artifactLocation"]["uri"].lower().endswith(TEXT) and \
                res.get("properties", {}).get("layer_id") is not None:
            assert "region" in physical, f"a finding on a layer has its line: {res['message']['text']}"
        for related in res.get("relatedLocations", []):
            if "physicalLocation" in related:
                _check_location(related["physicalLocation"], related.get("message", {}).get("text", ""), root)
        fingerprints.append(res["partialFingerprints"]["primaryLocationLineHash"])
        assert fingerprints[-1]
    dup = {fp for fp in fingerprints if fingerprints.count(fp) > 1}
    assert not dup, "results sharing a fingerprint: " + "; ".join(
        f"{r['ruleId']} {r['message']['text']}" for r in results
        if r["partialFingerprints"]["primaryLocationLineHash"] in dup)


def _check_location(physical: dict, message: str, root: str | None) -> None:
    art = physical["artifactLocation"]
    uri = art["uri"]
    assert uri and " " not in uri and "\\" not in uri and uri.isascii(), uri
    parts = urlsplit(uri)
    if parts.scheme:
        assert parts.scheme == "file" and uri.startswith("file:///"), uri
        assert "uriBaseId" not in art, "an absolute URI takes no uriBaseId"
        path = unquote(parts.path)
        if root is not None:
            assert not _under(path, root), f"{uri} is under the root {root}: it should be relative"
    else:
        assert art.get("uriBaseId") == "%SRCROOT%", art
        assert not uri.startswith("/") and ".." not in uri.split("/"), uri
        path = os.path.join(root, unquote(uri)) if root is not None else None
        if path is not None:
            assert _under(path, root)
    name = uri.lower()
    if name.endswith(BINARY):
        assert "region" not in physical, f"a binary artifact has no lines: {uri}"
    if "region" in physical:
        assert name.endswith(TEXT) and physical["region"]["startLine"] >= 1
    said = _AT_LINE.search(message)
    if said and name.endswith(TEXT):  # a message that names its line is placed there
        assert physical.get("region", {}).get("startLine") == int(said.group(1)), (message, physical)


def _under(path: str, root: str) -> bool:
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    return rel != os.pardir and not rel.startswith(os.pardir + os.sep)
