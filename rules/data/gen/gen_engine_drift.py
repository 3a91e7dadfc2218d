"""Observe where onnxruntime and OpenVINO compute something other than the ONNX spec; keep the table true.

    python rules/data/gen/gen_engine_drift.py observe   # engines x backend node tests -> observations
    python rules/data/gen/gen_engine_drift.py probe     # one-attribute variants of each differing test
    python rules/data/gen/gen_engine_drift.py update    # re-measure every fact, rewrite the table
    python rules/data/gen/gen_engine_drift.py score     # the drift rules' recall / false positives

``observe`` runs every ONNX backend node test (``onnx.backend.test.case.node.collect_testcases()``,
materialized by testmodels/node_cases.py) on onnxruntime CPU and on OpenVINO CPU compiled at f32,
compares with the test's reference outputs (testmodels/engines.py: floats rtol 1e-3 / atol 1e-4,
integers, bools and strings exactly, shapes) and writes ``engine_drift_observations.json`` beside
this script: per test and engine, ``load`` / ``run`` (the engine refuses the model or fails at
inference: target-support matters, GL1xxx, outside the drift denominator), ``crash``, ``match``,
or the kind of difference (``values`` / ``shape``) with the largest difference seen.

``probe ENGINE [TEST ..]`` takes each differing test and changes one attribute at a time (to every
value the node tests use for that attribute) and reruns the engine, printing which changes make the
engine agree with the spec (onnx.reference computes the variant's expected outputs): that is
how a fact's condition is found. The conditions are then written by hand into
``rules/data/engine_drift.toml`` in its small condition language (rules/_engine_drift.py).

``update`` re-runs, for every fact of the table, the evidence tests (the node tests it names and
its focused variants) on the installed engine versions, records the version and the largest
difference seen, and marks facts that no longer reproduce (``reproduces = false``: then the
rules stay silent on them). ``score`` lints every node test and prints, per target, recall over
the differing tests, false positives over the matching ones, and the tests missed (docs/drift.md).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

OBSERVATIONS = os.path.join(HERE, "engine_drift_observations.json")

# the worker functions live in an importable module: the process pool pickles them by name
from testmodels.engine_drift import _num, lint_all, observe, observe_one, score, versions  # noqa: E402


def write_observations(rows: list[dict[str, Any]], path: str = OBSERVATIONS) -> None:
    from graphlint.fsutil import atomic_write_text

    doc = {
        "about": "ONNX backend node tests run on onnxruntime CPU (default session options) and OpenVINO CPU "
                 "(INFERENCE_PRECISION_HINT=f32), compared with the tests' reference outputs (floats rtol 1e-3 "
                 "atol 1e-4, integers/bools/strings exact). Written by rules/data/gen/gen_engine_drift.py observe.",
        "versions": versions(),
        "devices": {"ort": "CPUExecutionProvider", "openvino": "CPU, INFERENCE_PRECISION_HINT=f32"},
        # one line per test keeps the diff of a re-run readable
        "rows": {r["case"]: {e: r[e] for e in ("ort", "openvino")} for r in rows},
    }
    lines = ["{"]
    for k in ("about", "versions", "devices"):
        lines.append(f"  {json.dumps(k)}: {json.dumps(doc[k])},")
    lines.append('  "rows": {')
    items = sorted(doc["rows"].items())
    for i, (case, v) in enumerate(items):
        lines.append(f"    {json.dumps(case)}: {json.dumps(v)}" + ("," if i < len(items) - 1 else ""))
    lines.append("  }")
    lines.append("}")
    atomic_write_text(path, "\n".join(lines) + "\n")


def load_observations(path: str = OBSERVATIONS) -> dict[str, Any]:
    with open(path) as f:
        return json.load(f)


# --------------------------------------------------------------------------------------------
# probe: one attribute at a time

def _attr_values(paths: list[str]) -> dict[tuple[str, str], set]:
    """Every value each (op, attribute) takes across the node tests: the candidates a probe tries."""
    import onnx

    seen: dict[tuple[str, str], set] = {}
    for p in paths:
        for n in onnx.load(p, load_external_data=False).graph.node:
            for a in n.attribute:
                v = onnx.helper.get_attribute_value(a)
                if isinstance(v, bytes | int | float):
                    seen.setdefault((n.op_type, a.name), set()).add(v)
    return seen


def variant(model: Any, node_index: int, name: str, value: Any) -> Any:
    """A copy of ``model`` with one attribute of one node set (or removed when value is None)."""
    import copy

    import onnx

    m = copy.deepcopy(model)
    node = m.graph.node[node_index]
    for i, a in enumerate(node.attribute):
        if a.name == name:
            del node.attribute[i]
            break
    if value is not None:
        node.attribute.append(onnx.helper.make_attribute(name, value))
    return m


def spec_outputs(model: Any, inputs: list[Any]) -> list[Any]:
    """What the spec computes, by onnx.reference."""
    from onnx.reference import ReferenceEvaluator

    ev = ReferenceEvaluator(model)
    return list(ev.run(None, dict(zip([i.name for i in model.graph.input], inputs, strict=False))))


def check_variant(engine: str, model: Any, inputs: list[Any]) -> str:
    """'match' / the kind of difference / why it could not be judged, for one variant model."""
    from testmodels import engines as E

    try:
        refs = spec_outputs(model, inputs)
    except Exception as e:
        return f"no reference ({type(e).__name__})"
    try:
        outs = E.run(engine, model, inputs)
    except (E.LoadError, E.RunError) as e:
        return f"engine refuses: {str(e)[:60]}"
    v = E.compare(refs, outs)
    return v.status if not v.differs else f"{v.status} ({_num(v.max_abs)})"


def probe(engine: str, cases: list[str]) -> None:
    import onnx

    from testmodels.node_cases import case_folder, load_io, model_paths

    paths = model_paths()
    values = _attr_values(paths)
    for case in cases:
        path = os.path.join(case_folder(), case, "model.onnx")
        model = onnx.load(path)
        inputs, _ = load_io(path, model)
        print(f"{case} [{engine}]: as is -> {check_variant(engine, model, inputs)}")
        for i, node in enumerate(model.graph.node):
            try:
                schema = onnx.defs.get_schema(node.op_type, max(o.version for o in model.opset_import), node.domain)
            except Exception:
                continue
            for name in schema.attributes:
                for v in sorted(values.get((node.op_type, name), set()), key=repr):
                    if any(a.name == name and onnx.helper.get_attribute_value(a) == v for a in node.attribute):
                        continue
                    print(f"  {node.op_type}.{name}={v!r} -> {check_variant(engine, variant(model, i, name, v), inputs)}")


# --------------------------------------------------------------------------------------------
# update: re-measure every fact

TABLE = os.path.join(os.path.dirname(HERE), "engine_drift.toml")


def measure_fact(fact: dict[str, Any]) -> dict[str, Any]:
    """Run a fact's evidence tests and variants on its engine: what the table records of it."""
    import onnx

    from testmodels.node_cases import case_folder
    from testmodels.node_cases import load_io as io

    worst, shape, shown, failures = 0.0, False, [], []
    for case in fact["evidence"]:
        path = os.path.join(case_folder(), case, "model.onnx")
        r = observe_one(path)[fact["engine"]]
        if r["status"] in ("values", "shape"):
            shown.append(case)
            shape |= r["status"] == "shape"
            if isinstance(r.get("max_abs"), int | float):
                worst = max(worst, float(r["max_abs"]))
            elif r.get("max_abs") is not None:
                worst = float("inf")
    for v in fact.get("variants", []):
        path = os.path.join(case_folder(), v["case"], "model.onnx")
        model = onnx.load(path)
        inputs, _ = io(path, model)
        idx = next(i for i, n in enumerate(model.graph.node) if n.op_type in fact["op"])
        for name, value in v["set"].items():
            model = variant(model, idx, name, value)
        verdict = check_variant(fact["engine"], model, inputs)
        if verdict != "match":
            failures.append(f"{v['case']} {v['set']}: {verdict}")
    ver = versions()[fact["engine"]]
    return {"reproduces": bool(shown) and not failures, "shown": shown, "variant_failures": failures,
            "max_abs": None if shape else _num(worst),
            "measured": f"{'onnxruntime' if fact['engine'] == 'ort' else 'OpenVINO'} {ver} CPU"
                        + (" (INFERENCE_PRECISION_HINT=f32)" if fact["engine"] == "openvino" else "")}


def _set_line(block: str, key: str, value: Any) -> str:
    """Replace (or add after `kind`) one `key = value` line of a fact block."""
    line = f"{key} = {json.dumps(value)}"
    lines = block.split("\n")
    for i, ln in enumerate(lines):
        if ln.startswith(f"{key} = "):
            lines[i] = line
            return "\n".join(lines)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("kind = "))
    lines.insert(at + 1, line)
    return "\n".join(lines)


def update(path: str = TABLE) -> list[str]:
    """Re-measure every engine-run fact and write measured / max_abs / reproduces into the table."""
    from graphlint.fsutil import atomic_write_text

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    with open(path, "rb") as f:
        facts = tomllib.load(f)["fact"]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    report = []
    for fact in facts:
        if fact.get("documentary"):
            continue
        m = measure_fact(fact)
        start = text.index(f'id = "{fact["id"]}"')
        end = text.find("[[fact]]", start)
        end = len(text) if end == -1 else end
        block = text[start:end]
        block = _set_line(block, "measured", m["measured"])
        if m["max_abs"] is not None:
            block = _set_line(block, "max_abs", m["max_abs"] if isinstance(m["max_abs"], float) else str(m["max_abs"]))
        block = _set_line(block, "reproduces", m["reproduces"])
        text = text[:start] + block + text[end:]
        report.append(f"{fact['id']}: shown by {len(m['shown'])}/{len(fact['evidence'])} tests, "
                      f"max_abs {m['max_abs']}, variants failing: {m['variant_failures'] or 'none'}")
    atomic_write_text(path, text)
    return report


def main(argv: list[str]) -> None:
    cmd = argv[1] if len(argv) > 1 else "observe"
    if cmd == "observe":
        t0 = time.time()
        rows = observe()
        write_observations(rows)
        from collections import Counter

        for eng in ("ort", "openvino"):
            print(eng, dict(Counter(r[eng]["status"] for r in rows)))
        print(f"{len(rows)} tests in {time.time() - t0:.0f}s -> {OBSERVATIONS}")
    elif cmd == "probe":
        engine = argv[2]
        obs = load_observations()["rows"]
        cases = argv[3:] or [c for c, r in obs.items() if r[engine]["status"] in ("values", "shape")]
        probe(engine, cases)
    elif cmd == "update":
        for line in update():
            print(line)
    elif cmd == "score":
        obs = load_observations()["rows"]
        lint = lint_all()
        for eng in ("ort", "openvino"):
            sc = score(obs, lint, eng)
            print(f"{eng}: differ {sc['differ']} match {sc['match']}; recall GL2010/11 {sc['recall_new']:.3f}, "
                  f"GL2 family {sc['recall_family']:.3f}; false positives GL2010/11 {sc['fp_new']:.4f}, "
                  f"GL2 family {sc['fp_family']:.4f}")
            print("  missed:", " ".join(sc["missed"]))
            print("  false (new rules):", " ".join(sc["false_new"]))
            print("  false (other GL2 rules):", " ".join(sc["false_family_only"]))
    else:
        raise SystemExit(f"unknown command {cmd!r} (observe, probe, update, score)")


if __name__ == "__main__":
    main(sys.argv)
