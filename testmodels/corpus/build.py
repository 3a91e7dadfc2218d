"""The real-model conformance corpus: build every part (cached) and list its models.

Parts, each cached under testmodels/out/ by testmodels.common.cached and keyed by its script's
source (and the manifest, and the folders it derives from), so CI rebuilds exactly what changed:

* ``corpus-wheels-*``: third-party ONNX files from PyPI wheels (wheels.py, wheels.toml);
* ``corpus-exports-*``: torch legacy and dynamo exports of transformers architectures (exports.py);
* ``corpus-variants-*``: fused / fp16 / quantized / upgraded / onnxscript models (variants.py);
* ``corpus-ir-*``: the OpenVINO IR of each of those folders (ir.py);
* ``pipeline``: models of the export pipelines users run (optimum, onnxruntime-genai, tf2onnx,
  skl2onnx, ...), committed under testmodels/pipelines/ with their manifests (pipelines.py), and
  their IR (``corpus-ir-pipelines-*``).

    python -m testmodels.corpus.build          # build, print the folders and the model count
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import dataclass, field

from testmodels.common import OUT, cached
from testmodels.corpus import exports, ir, pipelines, variants, wheels

# variant id fragment -> kind, first match wins
_VARIANT_KINDS = (("dynquant", "onnxruntime quantize_dynamic"), ("qdq", "onnxruntime quantize_static QDQ"),
                  ("qoperator", "onnxruntime quantize_static QOperator"), ("fp16", "float16 conversion"),
                  ("fused", "onnxruntime transformers optimizer"), ("ortsaved", "onnxruntime saved optimized graph"),
                  ("upgraded", "onnx version_converter"), ("onnxscript", "onnxscript"))


@dataclass
class Model:
    id: str  # file stem; an IR is "<onnx id>@ir" or "<onnx id>@ir_fp16"
    path: str
    format: str  # onnx | openvino
    source: str  # wheel | export | variant | pipeline
    kind: str
    onnx: str  # the ONNX file (the IR's source for an IR)
    entry: dict = field(default_factory=dict)  # the wheel manifest row: shapes, values, provenance
    heldout: bool = False  # added after the rules were tuned on the rest (docs/conformance.md, "Held-out")


# The sizes users say they feed (``--shapes``) for the exports whose declared-dynamic size the model
# bakes in: the truth's second run feeds these, so the pin is an error only when graphlint is told
# so (without shapes it is a warning: rules/gl3003, docs/severity.md).
LINT_SHAPES = {
    "vit_dynhw_legacy_op17": ["pixel_values:1x3x32x32,1x3x32x32,2x3x64x64"],
    "whisperenc_dynframes_legacy_op17": ["input_features:1x16x64,1x16x64,2x16x128"],
}


def _kind(source: str, mid: str, row: dict) -> str:
    if source in ("wheel", "pipeline"):
        return row["kind"]
    if source == "export":
        return "torch dynamo export" if "_dynamo_" in mid else "torch legacy export"
    return next(k for frag, k in _VARIANT_KINDS if frag in mid)


def folders() -> dict[str, str]:
    with open(wheels.MANIFEST, "rb") as f:
        manifest_key = hashlib.sha256(f.read()).hexdigest()[:8]
    out = {"wheel": cached(f"corpus-wheels-{manifest_key}", wheels.build),
           "export": cached("corpus-exports", exports.build)}
    out["variant"] = variants.variants(out["export"])
    for source in ("wheel", "export", "variant"):
        out[f"ir-{source}"] = ir.irs(out[source])
    out["ir-pipeline"] = pipelines.ir_folder()
    _prune(set(out.values()))
    return out


def _prune(keep: set[str]) -> None:
    """Remove earlier versions of the corpus parts (a few hundred MB each); the wheel downloads stay."""
    import shutil

    for name in os.listdir(OUT):
        path = os.path.join(OUT, name)
        if name.startswith("corpus-") and path not in keep and path != wheels.DOWNLOADS and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)


def corpus() -> list[Model]:
    """Every model of the corpus, ONNX first then IR, sorted by id."""
    dirs = folders()
    rows = {r["id"]: r for r in wheels.manifest()}
    heldout = {r["id"] for r in rows.values() if r.get("heldout")}
    heldout |= {mid for mid, arch, *_ in exports.plan() if arch.heldout}
    onnx_models: dict[str, Model] = {}
    for source in ("wheel", "export", "variant"):
        for name in sorted(os.listdir(dirs[source])):
            if name.endswith(".onnx"):
                mid, path = name[:-5], os.path.join(dirs[source], name)
                row = rows.get(mid, {"lint_shapes": LINT_SHAPES[mid]} if mid in LINT_SHAPES else {})
                onnx_models[mid] = Model(mid, path, "onnx", source, _kind(source, mid, row), path, row,
                                         heldout=mid in heldout)
    irs = []
    for row in pipelines.entries():
        fmt = "openvino" if row["path"].endswith(".xml") else "onnx"
        m = Model(row["id"], row["path"], fmt, "pipeline", row["kind"], row["path"], row,
                  heldout=bool(row.get("heldout")))
        if fmt == "onnx":
            onnx_models[m.id] = m
        else:  # an IR a pipeline wrote directly (optimum-intel)
            irs.append(m)
    for source in ("wheel", "export", "variant"):
        for name in sorted(os.listdir(dirs[f"ir-{source}"])):
            if name.endswith(".xml"):
                stem = name[:-4]
                base, suffix = (stem[:-len("_irfp16")], "@ir_fp16") if stem.endswith("_irfp16") else (stem, "@ir")
                src = onnx_models[base]
                irs.append(Model(base + suffix, os.path.join(dirs[f"ir-{source}"], name), "openvino", source,
                                 src.kind, src.onnx, src.entry, src.heldout))
    ir_dir = dirs["ir-pipeline"]
    for name in sorted(os.listdir(ir_dir)):
        if name.endswith(".xml") and name[:-4] in onnx_models:
            src = onnx_models[name[:-4]]
            irs.append(Model(src.id + "@ir", os.path.join(ir_dir, name), "openvino", "pipeline", src.kind, src.onnx,
                             src.entry, src.heldout))
    return sorted(onnx_models.values(), key=lambda m: m.id) + sorted(irs, key=lambda m: m.id)


if __name__ == "__main__":
    t0 = time.time()
    print(folders())
    models = corpus()
    n_onnx = sum(m.format == "onnx" for m in models)
    print(f"{n_onnx} ONNX models, {len(models) - n_onnx} IR, built in {time.time() - t0:.0f}s", file=sys.stderr)
