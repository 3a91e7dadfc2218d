"""Workflow integration applied to a finished run: suppressions and baselines.

Suppressions come from two places and always carry a reason, which reports show and count:

* the configuration: ``[[suppress]]`` entries in ``graphlint-suppressions.toml`` (or inline
  ``[[tool.graphlint.suppress]]``) with a model glob, a rule, a node-name glob and a reason;
* the model itself: ONNX ``metadata_props`` key ``graphlint:ignore`` (OpenVINO IR: rt_info key
  ``graphlint_ignore``, as XML names cannot hold a colon), a comma- or newline-separated list of
  ``RULE`` or ``RULE:NODE_GLOB`` items, or a JSON list of ``{"rule", "node", "reason"}``
  objects; an optional ``graphlint:ignore-reason`` (``graphlint_ignore_reason``) key gives the
  reason for the plain form.

A baseline (``graphlint baseline``) records today's findings so later runs report only new
ones. Entries are matched by a structural anchor first: a hash of the node's op, attributes
and everything upstream of it (graph input names, constant shapes), which survives
re-exports that reorder or renumber nodes; then by node name, which survives edits upstream.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np

from graphlint.config import Suppression, match_glob
from graphlint.errors import UsageError
from graphlint.ir import Graph, Model, Node, Tensor, Value
from graphlint.lint import LintOptions
from graphlint.registry import family_of, matches
from graphlint.report import Run
from graphlint.rule import Finding

META_KEY = "graphlint:ignore"
META_REASON_KEY = "graphlint:ignore-reason"
BASELINE_SCHEMA = "graphlint-baseline/1"
DEFAULT_BASELINE = "graphlint-baseline.json"


# --------------------------------------------------------------------------- rule matching

def rule_matches(f: Finding, sel: str) -> bool:
    """Whether the selector ``sel`` names the finding's rule (the --select language)."""
    return matches(f.rule_id, f.rule_name, family_of(f.rule_id), sel)


def node_matches(f: Finding, pattern: str) -> bool:
    if pattern in ("*", ""):
        return True
    subject = f.node or f.value
    if subject is None:
        return False
    names = {subject, f"{f.location.graph_path}/{subject}"}
    if f.location.node_name:
        names.add(f.location.node_name)
    return any(fnmatch.fnmatchcase(n, pattern) for n in names)


# --------------------------------------------------------------------------- in-model suppressions

def model_suppressions(model: Model) -> list[Suppression]:
    """Suppressions declared inside the model (metadata_props / rt_info key graphlint:ignore)."""
    meta: dict[str, Any] = {**{k: v for k, v in model.rt_info.items() if isinstance(v, str)}, **model.metadata}
    raw = meta.get(META_KEY) or meta.get(META_KEY.replace(":", "_"))
    if not raw or not isinstance(raw, str):
        return []
    reason = str(meta.get(META_REASON_KEY) or meta.get("graphlint_ignore_reason") or "").strip() \
        or f"{META_KEY} in model metadata"
    origin = f"{model.path} metadata {META_KEY}"
    out: list[Suppression] = []
    text = raw.strip()
    if text.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError:
            items = None
        if isinstance(items, list):
            for item in items:
                if isinstance(item, dict) and item.get("rule"):
                    out.append(Suppression(rule=str(item["rule"]), node=str(item.get("node", "*")),
                                           reason=str(item.get("reason") or reason), origin=origin))
            return out
    for item in text.replace("\n", ",").split(","):
        item = item.strip()
        if not item:
            continue
        rule, _, node = item.partition(":")
        out.append(Suppression(rule=rule.strip(), node=node.strip() or "*", reason=reason, origin=origin))
    return out


# --------------------------------------------------------------------------- structural anchors

def _canon(v: Any) -> Any:
    """A stable, name-free rendering of an attribute value (its repr is hashed)."""
    if isinstance(v, Tensor):
        return ("tensor", v.dtype, tuple(v.shape), _small_values(v))
    if isinstance(v, Graph):
        return "graph"
    if isinstance(v, (list, tuple)):
        return tuple(_canon(x) for x in v)
    if isinstance(v, np.ndarray):
        return tuple(v.ravel().tolist()) if v.size <= 64 else ("array", str(v.dtype), v.shape)
    return v if isinstance(v, (int, float, str, bool)) or v is None else repr(v)


def _small_values(t: Tensor) -> Any:
    if t.size > 64:
        return None
    try:
        return tuple(np.asarray(t.numpy()).ravel().tolist())
    except Exception:  # unreadable weights are GL0005's business, not the anchor's
        return None


class Anchors:
    """Structural identities of nodes: a Merkle hash over op, attributes and upstream cone.

    Names that exporters number by position (``/Relu_1``, ``onnx::Add_12``) are left out, so
    the anchor survives a re-export that emits the same computation in a different order.
    Only nodes asked for (and their upstream cones) are hashed, each once.
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self._memo: dict[int, str] = {}
        self._consts: dict[int, str] = {}
        self._labels: dict[tuple[str, str], Node] | None = None

    def find(self, graph_path: str, label: str) -> Node | None:
        if self._labels is None:
            self._labels = {}
            for n in self.model.walk():
                self._labels.setdefault((n.graph.path, n.label), n)
        return self._labels.get((graph_path, label))

    def value_desc(self, v: Value | None) -> str:
        if v is None:
            return "-"
        if v.const is not None:
            key = id(v.const)
            desc = self._consts.get(key)
            if desc is None:
                desc = self._consts[key] = "c" + repr(_canon(v.const))
            return desc
        p = v.producer
        if p is not None:
            h = self._memo.get(id(p), "cycle")  # unhashed here only when on the current path (a cycle)
            return f"{h}:{p.outputs.index(v) if len(p.outputs) > 1 else 0}"
        return f"in:{v.name}"  # graph inputs (and outer-scope names) keep the names users gave them

    @staticmethod
    def _deps(n: Node) -> Iterator[Node]:
        return (v.producer for v in n.inputs if v is not None and v.const is None and v.producer is not None)

    def node(self, root: Node) -> str:
        """The anchor of ``root``: iterative post-order DFS over its upstream cone, memoised."""
        import hashlib  # here, not at the top: see Finding.fingerprint

        memo = self._memo
        if id(root) in memo:
            return memo[id(root)]
        on_path = {id(root)}
        stack = [(root, self._deps(root))]
        while stack:
            n, deps = stack[-1]
            for p in deps:
                if id(p) not in memo and id(p) not in on_path:
                    on_path.add(id(p))
                    stack.append((p, self._deps(p)))
                    break
            else:
                stack.pop()
                on_path.discard(id(n))
                attrs = repr(tuple((k, _canon(a)) for k, a in sorted(n.attrs.items())))
                parts = [n.op_type, n.domain, attrs, str(n.graph.path.count("/"))]
                parts.extend(self.value_desc(v) for v in n.inputs)
                memo[id(n)] = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=10).hexdigest()
        return memo[id(root)]

    def of(self, f: Finding) -> str:
        """The anchor of what a finding is about."""
        node = self.find(f.location.graph_path, f.node) if f.node else None
        if node is not None:
            where = ""
            if f.value:
                ins = [v.name if v is not None else None for v in node.inputs]
                outs = [v.name for v in node.outputs]
                where = f"/i{ins.index(f.value)}" if f.value in ins else (
                    f"/o{outs.index(f.value)}" if f.value in outs else "")
            return self.node(node) + where
        if f.value:
            graph = next((g for g in self.model.graph.graphs() if g.path == f.location.graph_path), self.model.graph)
            v = graph.values.get(f.value)
            if v is not None:
                import hashlib  # here, not at the top: see Finding.fingerprint

                return "v:" + hashlib.sha256(self.value_desc(v).encode()).hexdigest()[:20]
            return f"v:{f.value}"
        if f.node:
            return f"n:{f.node}"
        return "model"


# --------------------------------------------------------------------------- baselines

def _model_key(path: str, base: str) -> str:
    return os.path.relpath(os.path.abspath(path), base).replace(os.sep, "/")


def _target_name(spec: str) -> str:
    return spec.split("@", 1)[0]


class PipelineAnchors:
    """Anchors of a pipeline's findings: the config key or stage and the edge they are about (a
    pipeline has no graph of its own to anchor in)."""

    def of(self, f: Finding) -> str:
        p = f.properties
        return f"p:{p.get('pipeline', '')}|{f.value or ''}|{f.node or ''}|{p.get('edge', '')}|{p.get('pair', '')}"


def anchored(run: Run) -> list[tuple[Any, Any]]:
    """(anchors, result) for every model result, then every pipeline result."""
    return [*((Anchors(res.model), res) for res in run.results), *((PipelineAnchors(), p) for p in run.pipelines)]


def baseline_entries(run: Run, base: str) -> list[dict[str, Any]]:
    """Unsuppressed findings of ``run`` as baseline entries, paths relative to ``base``."""
    entries = []
    for anchors, res in anchored(run):
        for f in res.findings:
            if f.suppressed:
                continue
            entries.append({
                "model": _model_key(f.model, base),
                "target": _target_name(f.target),
                "rule": f.rule_id,
                "anchor": anchors.of(f),
                "node": f.node,
                "op_type": f.op_type,
                "value": f.value,
                "message": f.message,
            })
    entries.sort(key=lambda e: (e["model"], e["target"], e["rule"], e["node"] or "", e["value"] or "", e["anchor"]))
    return entries


def render_baseline(run: Run, path: str) -> str:
    from graphlint import __version__

    base = os.path.dirname(os.path.abspath(path))
    doc = {"schema": BASELINE_SCHEMA, "generated_by": f"graphlint {__version__}",
           "findings": baseline_entries(run, base)}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def load_baseline(path: str) -> list[dict[str, Any]]:
    if not os.path.isfile(path):
        raise UsageError(f"baseline {path!r} does not exist (create it with 'graphlint baseline MODEL -o {path}')")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UsageError(f"baseline {path!r} is not a graphlint baseline: {e}") from None
    if not isinstance(doc, dict) or doc.get("schema") != BASELINE_SCHEMA or not isinstance(doc.get("findings"), list):
        raise UsageError(f"baseline {path!r} is not a graphlint baseline (expected schema {BASELINE_SCHEMA!r})")
    entries = [e for e in doc["findings"] if isinstance(e, dict) and {"model", "rule", "anchor"} <= e.keys()]
    if len(entries) != len(doc["findings"]):
        raise UsageError(f"baseline {path!r} has malformed entries (regenerate it with 'graphlint baseline')")
    return entries


def apply_baseline(run: Run, path: str) -> tuple[int, int]:
    """Mark findings recorded in the baseline as suppressed; return (matched, stale entries)."""
    entries = load_baseline(path)
    base = os.path.dirname(os.path.abspath(path))
    by_anchor: Counter = Counter()
    by_name: Counter = Counter()
    for e in entries:
        by_anchor[(e["model"], e.get("target", ""), e["rule"], e["anchor"])] += 1
    pending: list[tuple[Finding, tuple]] = []
    matched = 0
    label = f"in baseline {os.path.basename(path)}"
    linted = set()
    anchors_used: Counter = Counter()
    for anchors, res in anchored(run):
        for f in res.findings:
            if f.suppressed:
                continue
            model = _model_key(f.model, base)
            key = (model, _target_name(f.target), f.rule_id, anchors.of(f))
            if by_anchor[key] > 0:
                by_anchor[key] -= 1
                anchors_used[key] += 1
                f.suppressed = label
                matched += 1
            else:
                pending.append((f, key))
        linted.update((_model_key(f.model, base), res.target.name) for f in res.findings)
        if hasattr(res, "model"):
            linted.add((_model_key(res.model.path, base), res.target.name))
    # second pass: entries left unmatched by anchor, matched by node name (edits upstream of the node)
    for e in entries:
        k = (e["model"], e.get("target", ""), e["rule"], e["anchor"])
        if anchors_used[k] > 0:
            anchors_used[k] -= 1
            continue
        by_name[(e["model"], e.get("target", ""), e["rule"], e.get("node"), e.get("value"))] += 1
    for f, key in pending:
        nkey = (key[0], key[1], f.rule_id, f.node, f.value)
        if by_name[nkey] > 0:
            by_name[nkey] -= 1
            f.suppressed = label
            matched += 1
    stale = sum(n for k, n in by_name.items() if (k[0], k[1]) in linted)
    return matched, stale


# --------------------------------------------------------------------------- applying everything

def apply_suppressions(run: Run, suppressions: list[Suppression]) -> list[Suppression]:
    """Mark findings matched by configuration or in-model suppressions; return those unused."""
    for res in run.all_results():
        in_model = model_suppressions(res.model) if hasattr(res, "model") else []
        for f in res.findings:
            if f.suppressed:
                continue
            for s in (*in_model, *suppressions):
                if (rule_matches(f, s.rule) and node_matches(f, s.node)
                        and fnmatch.fnmatchcase(res.target.name, s.target.lower())
                        and (s in in_model or match_glob(f.model, s.model, s.base))):
                    f.suppressed = s.reason
                    s.used += 1
                    break
    linted = [res.model.path for res in run.results]
    return [s for s in suppressions if not s.used and any(match_glob(p, s.model, s.base) for p in linted)]


def apply_workflow(run: Run, opts: LintOptions, baseline_path: str | None) -> None:
    """Suppressions (model metadata, configuration), then the baseline; notes for the summary."""
    unused = apply_suppressions(run, list(opts.suppressions))
    for s in unused:
        run.notes.append(f"Suppression {s.origin} ({s.rule}, node {s.node}) matched no finding; remove it if the "
                         f"problem is gone.")
    path = baseline_path or opts.baseline
    if path:
        matched, stale = apply_baseline(run, path)
        note = f"{matched} finding(s) matched the baseline {path}"
        if stale:
            note += f"; {stale} baseline entr{'y' if stale == 1 else 'ies'} no longer found (regenerate it)"
        run.notes.append(note + ".")
