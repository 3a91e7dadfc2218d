"""The optimum-intel VLM corpus (testmodels/vlm/) agrees with its engine truth (testmodels/vlm/truth.json).

truth.json was made in the optimum-intel venv by running each folder's whole pipeline
(testmodels/vlm/truth_optimum_intel.py). Here, without optimum-intel, OpenVINO itself re-establishes the
stage-level facts the truth rests on, for every committed healthy folder and every seed (materialized):
- the folder's files are the ones the truth ran (a changed graph or config without a new truth fails);
- each stage the pipeline fed, fed the recorded input shapes, emits the recorded output shapes and dtypes,
  or raises where the pipeline's call of that stage raised;
- the language model's inputs_embeds width and dtype are what the text-embeddings stage emits; a vision
  stage whose row width differs from it never has an `ok` run (a width mismatch is not silently right);
- a run's vision_rows and image_tokens are consistent with the recorded stage outputs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from testmodels.vlm import seeds as S  # noqa: E402

VLM = Path(__file__).resolve().parent.parent / "testmodels" / "vlm"
TRUTH = json.loads((VLM / "truth.json").read_text()) if (VLM / "truth.json").exists() else {"folders": {}}
FOLDERS = {k: v for k, v in TRUTH["folders"].items() if v["layout"] == "optimum-intel"}
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
_CORE = ov.Core()
_COMPILED: dict[str, object] = {}


def _folder(entry: dict, tmp_path: Path) -> Path:
    if entry["seed"] is None:
        return VLM / entry["folder"]
    return S.materialize(S.by_id(entry["seed"]), tmp_path / entry["seed"])


def _key(xml: Path) -> str:
    return hashlib.sha256(xml.read_bytes() + xml.with_suffix(".bin").read_bytes()).hexdigest()


def _compiled(xml: Path):
    """Compiled once per distinct graph: most seeds share the healthy folder's graphs byte for byte."""
    key = _key(xml)
    if key not in _COMPILED:
        _COMPILED[key] = _CORE.compile_model(_CORE.read_model(str(xml)), "CPU", CONFIG)
    return _COMPILED[key]


def _feed(names: dict[str, list[int]], dtypes: dict[str, str]) -> dict[str, np.ndarray]:
    rng = np.random.RandomState(0)
    out = {}
    for name, shape in names.items():
        dt = np.dtype(dtypes.get(name, "float32"))
        if name == "attention_mask":
            out[name] = np.ones(shape, dt)
        elif name == "position_ids":
            out[name] = np.broadcast_to(np.arange(shape[-1], dtype=dt), shape).copy()
        elif np.issubdtype(dt, np.floating):
            out[name] = rng.standard_normal(shape).astype(dt)
        else:
            out[name] = np.zeros(shape, dt)
    return out


def _run(compiled, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    req = compiled.create_infer_request()  # a fresh request: the stateful language model starts empty
    req.infer(feed)
    return {o.get_any_name(): req.get_tensor(o).data.copy() for o in compiled.outputs}


def test_truth_covers_every_seed_and_folder():
    ids = {s["id"] for s in S.load()}
    seeded = {v["seed"] for v in FOLDERS.values() if v["seed"]}
    built = {p.name for p in (VLM / "optimum_intel").iterdir() if p.is_dir() and not p.name.startswith("_")}
    bases = {s["base"].split("/", 1)[1] for s in S.load() if s["base"].startswith("optimum_intel/")}
    assert built, "no optimum-intel folder is committed"
    assert {f"optimum_intel/{b}" for b in built} <= set(FOLDERS), "a committed folder has no truth"
    # every seed on a committed folder has a truth entry, and no truth entry names a seed that is gone
    assert {s for s in ids if S.by_id(s)["base"].split("/", 1)[1] in built} <= seeded
    assert seeded <= ids
    assert bases <= built | set(TRUTH.get("export_failures", {})), "a seed's base folder was never built"


@pytest.mark.parametrize("fid", sorted(FOLDERS))
def test_stage_facts(fid: str, tmp_path: Path):
    entry = FOLDERS[fid]
    folder = _folder(entry, tmp_path)
    files = {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(folder.iterdir()) if f.is_file()}
    assert "files_sha256" in entry, f"{fid}: truth entry without files_sha256 (truth_optimum_intel.files_sha256)"
    assert files == entry["files_sha256"], "the folder changed since truth.json was made: rebuild the truth"
    lm_model = _CORE.read_model(str(folder / "openvino_language_model.xml"))
    embeds = lm_model.input("inputs_embeds")
    lm_width = embeds.get_partial_shape()[2].get_length()
    text = _CORE.read_model(str(folder / "openvino_text_embeddings_model.xml")).output(0)
    assert text.get_partial_shape()[2].get_length() == lm_width
    assert text.get_element_type() == embeds.get_element_type()
    assert entry["verdict"] == max((r["outcome"] for r in entry["runs"]), key=["ok", "wrong", "fails"].index)
    for run in entry["runs"]:
        for stage, shapes in run["fed"].items():
            xml = folder / ("openvino_language_model.xml" if stage == "language_model" else f"openvino_{stage}_model.xml")
            compiled = _compiled(xml)
            feed = {k: v for k, v in _feed(shapes, run["fed_dtypes"][stage]).items()
                    if k in {i.get_any_name() for i in compiled.inputs}}
            if stage in run["outputs"]:
                got = _run(compiled, feed)
                for name, shape in run["outputs"][stage].items():
                    assert list(got[name].shape) == shape, (run["image"], stage, name)
            else:  # the pipeline's call of this stage raised: so does OpenVINO's, fed the same shapes
                assert run["outcome"] == "fails"
                with pytest.raises(RuntimeError):
                    _run(compiled, feed)
                # after a raise, OpenVINO 2026.4's CPU plugin also fails the shape that ran last: recompile
                _COMPILED.pop(_key(xml))
        if "language_model" in run["fed"]:
            assert run["fed"]["language_model"]["inputs_embeds"][2] == lm_width
        for out in run.get("vision_out", []):
            vis = _compiled(folder / "openvino_vision_embeddings_model.xml").output(0)
            assert out["dtype"] == str(np.dtype(vis.get_element_type().to_dtype()))
        # the stage whose rows replace image tokens in inputs_embeds (Qwen2-VL: the merger after the patch encoder)
        feeder = "vision_embeddings_merger" if "vision_embeddings_merger" in run["fed"] else "vision_embeddings"
        if feeder in run["outputs"]:
            width = next(iter(run["outputs"][feeder].values()))[-1]
            if width != lm_width:
                assert run["outcome"] != "ok", f"{run['image']}: {feeder} width {width} != {lm_width} but ok"
        if run.get("vision_out"):
            rows = sum(o["shape"][0] * o["shape"][1] if len(o["shape"]) == 3 else o["shape"][0] for o in run["vision_out"])
            assert rows == run["vision_rows"]
