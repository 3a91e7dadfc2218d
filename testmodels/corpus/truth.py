"""Engine truth for the corpus, committed as testmodels/corpus/truth.json.

Per model: facts (opset imports, domains, op histogram, node count, declared inputs; the sha256
of a wheel's file), the input shapes run, and per engine what it did (engines.py): ONNX Runtime
1.32 CPU (ONNX files), OpenVINO 2026.4 CPU (ONNX files and IR), and per ONNX file what the
TensorRT 10.15 parser's operator document says of its nodes (trtdoc.py). Exported models are not
byte-reproducible across machines, so rows are keyed by model id and carry the op histogram.

    python -m testmodels.corpus.truth            # rebuild the corpus if needed, rewrite truth.json
    python -m testmodels.corpus.truth --check    # recompute, report drift, exit 1 on a changed verdict
    python -m testmodels.corpus.truth --missing  # record only the models truth.json does not have yet
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time

from graphlint.fsutil import atomic_write_text
from testmodels.common import tool_versions
from testmodels.corpus.build import Model, corpus
from testmodels.pool import isolated_map

HERE = os.path.dirname(os.path.abspath(__file__))
TRUTH = os.path.join(HERE, "truth.json")
ENGINES = ("ort", "openvino")


def versions() -> dict[str, str]:
    from testmodels.corpus.trtdoc import DOC_NAME

    return {**tool_versions(), "tensorrt document": DOC_NAME}


def _onnx_facts(m: Model) -> dict:
    import hashlib

    import onnx

    model = onnx.load(m.path, load_external_data=False)
    ops: collections.Counter[str] = collections.Counter()

    def walk(g: onnx.GraphProto) -> None:
        for n in g.node:
            ops[f"{n.domain}:{n.op_type}" if n.domain else n.op_type] += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for sub in a.graphs:
                    walk(sub)

    walk(model.graph)
    for f in model.functions:
        walk(onnx.helper.make_graph(f.node, f.name, [], []))
    inits = {t.name for t in model.graph.initializer}
    inputs = {}
    for vi in model.graph.input:
        if vi.name not in inits:
            tt = vi.type.tensor_type
            dims = ",".join(d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?") for d in tt.shape.dim)
            inputs[vi.name] = f"{onnx.TensorProto.DataType.Name(tt.elem_type).lower()}[{dims}]"
    facts = {"opset_import": {o.domain or "ai.onnx": o.version for o in model.opset_import},
             "domains": sorted({n.split(":")[0] for n in ops if ":" in n}), "nodes": sum(ops.values()),
             "ops": dict(sorted(ops.items())), "inputs": inputs, "producer": model.producer_name,
             "local_functions": len(model.functions)}
    if m.entry.get("sha256"):
        with open(m.path, "rb") as f:
            facts["sha256"] = hashlib.sha256(f.read()).hexdigest()
        facts["package"] = f"{m.entry['package']}=={m.entry['version']}"
        facts["license"] = m.entry["license"]
    return facts


def _ir_facts(m: Model) -> dict:
    import openvino as ov

    try:
        ops = collections.Counter(op.get_type_name() for op in ov.Core().read_model(m.path).get_ordered_ops())
    except RuntimeError:  # an IR read_model refuses (its verdict says so): the layer types as the file has them
        from graphlint.load import load_model

        ops = collections.Counter(n.op_type for n in load_model(m.path).walk())
    return {"nodes": sum(ops.values()), "ops": dict(sorted(ops.items())),
            "compressed_to_fp16": m.id.endswith("@ir_fp16")}


def _shape_summary(feeds: dict | None) -> dict | str:
    from testmodels.corpus.engines import SAME

    return SAME if feeds is None else {k: list(v.shape) for k, v in feeds.items()}


def record(m: Model) -> dict:
    """The truth row of one model (runs in a worker process)."""
    from testmodels.corpus import engines, trtdoc

    base, alt = engines.feeds_for(m.onnx, m.entry)
    row: dict = {"source": m.source, "kind": m.kind, "format": m.format,
                 "shapes": {"declared": _shape_summary(base), "other": _shape_summary(alt)}}
    if m.heldout:
        row["heldout"] = True
    if m.source == "pipeline":
        row["pipeline"] = m.entry["name"]
        row["tools"] = m.entry["tools"]
    sizes: dict[str, list[int]] = {}  # ONNX Runtime's output sizes: which outputs may be empty
    if m.format == "onnx":
        row["facts"] = _onnx_facts(m)
        row["ort"] = engines.ort_truth(m.path, base, alt, sizes)
        doc = trtdoc.doc_path()
        row["trt_doc"] = trtdoc.judge(m.path, doc) if doc else None
    else:
        row["facts"] = _ir_facts(m)
        if m.onnx.endswith(".onnx"):  # an IR converted here; a pipeline's own IR has no ONNX source
            row["from"] = os.path.basename(m.onnx)[:-5]
            engines.ort_truth(m.onnx, base, alt, sizes)
    row["openvino"] = engines.openvino_truth(m.path, base, alt, sizes)
    return row


def crashed(m: Model) -> dict:
    crash = {"verdict": "rejects", "load": "process crashed"}
    row = {"source": m.source, "kind": m.kind, "format": m.format, "crashed": True, "openvino": crash}
    if m.format == "onnx":
        row["ort"] = crash
    return row


def compute(models: list[Model] | None = None, jobs: int = 2) -> dict:
    models = corpus() if models is None else models
    rows = isolated_map(record, models, key=lambda m: m.id, on_crash=crashed, jobs=jobs)
    return {"versions": versions(), "models": dict(sorted(rows.items()))}


def load() -> dict:
    with open(TRUTH, encoding="utf-8") as f:
        return json.load(f)


def verdicts(row: dict) -> dict[str, str]:
    out = {e: row[e]["verdict"] for e in ENGINES if row.get(e)}
    if row.get("trt_doc"):
        out["trt_doc"] = row["trt_doc"]["verdict"]
    return out


def drift(old: dict, new: dict) -> tuple[list[str], list[str]]:
    """(verdict changes, other changes) between two truth tables."""
    bad, other = [], []
    for k in ("onnxruntime", "openvino"):
        if old["versions"].get(k) != new["versions"].get(k):
            other.append(f"{k}: recorded {old['versions'].get(k)}, now {new['versions'].get(k)}")
    for mid in sorted(set(old["models"]) | set(new["models"])):
        a, b = old["models"].get(mid), new["models"].get(mid)
        if a is None or b is None:
            bad.append(f"{mid}: {'new model' if a is None else 'model gone'}")
            continue
        va, vb = verdicts(a), verdicts(b)
        for e in sorted(set(va) | set(vb)):
            if va.get(e) != vb.get(e) and not (e == "trt_doc" and vb.get(e) is None):
                bad.append(f"{mid}: {e} {va.get(e)} -> {vb.get(e)}")
        if a.get("facts", {}).get("ops") != b.get("facts", {}).get("ops"):
            other.append(f"{mid}: op histogram changed")
    return bad, other


def summary(table: dict) -> dict[str, dict[str, int]]:
    """Positives (anything but accepts / supported) per target, ONNX and IR apart."""
    out: dict[str, dict[str, int]] = {}
    for row in table["models"].values():
        for e, v in verdicts(row).items():
            k = f"{e} ({row['format']})"
            c = out.setdefault(k, {"models": 0, "positives": 0})
            c["models"] += 1
            c["positives"] += v not in ("accepts", "supported")
    return out


def main(argv: list[str]) -> int:
    t0 = time.time()
    models = corpus()
    t_build = time.time() - t0
    if "--missing" in argv:  # new models only; the recorded rows stay as they are
        recorded = load()
        table = compute([m for m in models if m.id not in recorded["models"]])
        table = {"versions": recorded["versions"], "models": dict(sorted({**recorded["models"], **table["models"]}.items()))}
    else:
        table = compute(models)
    print(f"{len(models)} models: corpus {t_build:.0f}s, engines {time.time() - t0 - t_build:.0f}s", file=sys.stderr)
    for k, c in sorted(summary(table).items()):
        print(f"  {k}: {c['positives']} positives of {c['models']}", file=sys.stderr)
    if "--check" in argv:
        bad, other = drift(load(), table)
        for line in other:
            print(f"  drift: {line}")
        for line in bad:
            print(f"  VERDICT CHANGED: {line}")
        return 1 if bad else 0
    atomic_write_text(TRUTH, json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"wrote {TRUTH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
