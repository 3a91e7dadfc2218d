"""The pipeline rules (GL8xxx) against engine truth: the VLM corpus's healthy and seeded folders, each
run end to end by its runtime (testmodels/vlm/truth.json: optimum-intel on OpenVINO; truth_hand.json:
ONNX Runtime and OpenVINO), and engine runs here for the facts the corpus does not seed.

tests/test_vlm_corpus.py and tests/test_vlm_hand.py re-run the engines on the same folders and check
that the recorded truth still holds; this file checks graphlint's verdicts against it.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphlint
from testmodels.vlm import conformance
from tests.conftest import ROOT
from tests.test_severity_contract import basis_problem

HAND = os.path.join(ROOT, "testmodels", "vlm", "hand")


@pytest.fixture(scope="module")
def cases() -> list[conformance.Case]:
    return conformance.run()


def test_seeded_folders_against_engine_truth(cases):
    got = conformance.summary(cases)
    assert len(cases) >= 100, len(cases)
    held = got["heldout"]
    assert held["tp"] + held["fn"] >= 20  # the held-out part has positives to find
    assert held["recall"] >= 0.9, held
    assert held["precision"] >= 0.95, held
    assert got["all"]["precision"] >= 0.95, got["all"]
    # no error on a folder every run of which worked, and nearly silent there
    wrong = [(c.id, c.errors[0]) for c in cases if not c.positive and c.flagged]
    assert wrong == []
    assert got["noise_median"] <= 1


def test_pipeline_errors_name_the_stage_or_config_and_have_a_basis(cases, tmp_path):
    """Every pipeline error says which stage, config key or edge, and cites a fact that resolves."""
    from testmodels.vlm import seeds

    folder = seeds.materialize(next(s for s in seeds.load() if s["class"] == "image_token_count"), tmp_path / "s")
    report = graphlint.check(str(folder), target="openvino")
    errors = [f for f in report.errors if f.rule_id.startswith("GL8")]
    assert errors
    for f in errors:
        assert basis_problem(f.properties.get("basis")) is None, f.properties
        assert f.properties.get("config") or f.properties.get("stage") or f.properties.get("edge")


def _vision_u8(path: str) -> None:
    """A vision graph that takes uint8 pixels and scales them itself: 3x8x8 -> 4 rows of 48 -> 16 wide."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((48, 16)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Cast", ["pixel_values"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["f", "k255"], ["s"]),
        helper.make_node("Reshape", ["s", "shape"], ["r"]),
        helper.make_node("MatMul", ["r", "w"], ["image_features"]),
    ]
    g = helper.make_graph(
        nodes, "vision", [helper.make_tensor_value_info("pixel_values", TensorProto.UINT8, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("image_features", TensorProto.FLOAT, ["batch", 4, 16])],
        [w, numpy_helper.from_array(np.array(255.0, np.float32), "k255"),
         numpy_helper.from_array(np.array([-1, 4, 48], np.int64), "shape")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def _lm(path: str) -> None:
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((16, 10)).astype(np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["inputs_embeds", "w"], ["logits"])], "lm",
        [helper.make_tensor_value_info("inputs_embeds", TensorProto.FLOAT, ["batch", "seq", 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", 10])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_uint8_vision_input_fed_float(tmp_path):
    """A uint8 vision input fed the processor's float pixels: ORT rejects the feed, OpenVINO converts it
    and computes something else than the image's own bytes give; graphlint says GL8004."""
    import onnxruntime as ort
    import openvino as ov

    folder = tmp_path / "u8"
    folder.mkdir()
    _vision_u8(str(folder / "vision.onnx"))
    _lm(str(folder / "lm.onnx"))
    (folder / "processor_config.json").write_text(json.dumps({
        "processor_class": "LlavaProcessor", "patch_size": 4, "vision_feature_select_strategy": "default",
        "num_additional_image_tokens": 1, "image_token": "<image>",
        "image_processor": {"image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 8},
                            "crop_size": {"height": 8, "width": 8}, "do_rescale": True, "do_normalize": True}}))
    (folder / "graphlint.toml").write_text(
        '[pipeline]\n[[pipeline.stage]]\nname = "vision"\nmodel = "vision.onnx"\nrole = "vision"\n'
        '[[pipeline.stage]]\nname = "lm"\nmodel = "lm.onnx"\nrole = "language_model"\n'
        '[[pipeline.edge]]\nfrom = "vision:image_features"\nto = "lm:inputs_embeds"\nmerge = "image_tokens"\n')
    report = graphlint.check(str(folder), target=["ort", "openvino"])
    u8 = [f for f in report.errors if f.rule_id == "GL8004"]
    assert {f.target.split("@")[0] for f in u8} == {"ort", "openvino"}, report.to_text()
    assert not [f for f in report.errors if f.rule_id == "GL8001"]  # 4 tokens, 4 rows: the count holds

    image = np.random.default_rng(2).integers(0, 256, (1, 3, 8, 8), dtype=np.uint8)
    mean = np.array([0.48145466, 0.4578275, 0.40821073], np.float32).reshape(1, 3, 1, 1)
    std = np.array([0.26862954, 0.26130258, 0.27577711], np.float32).reshape(1, 3, 1, 1)
    fed = (image / 255.0 - mean) / std  # what the processor makes of it
    sess = ort.InferenceSession(str(folder / "vision.onnx"), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match=r"(?i)type"):
        sess.run(None, {"pixel_values": fed.astype(np.float32)})
    compiled = ov.Core().compile_model(str(folder / "vision.onnx"), "CPU")
    meant = compiled({"pixel_values": image})[0]
    got = compiled({"pixel_values": fed.astype(np.float32)})[0]
    assert got.shape == meant.shape and not np.allclose(got, meant, atol=1e-2)


def test_token_ids_outside_vocab(tmp_path):
    """An image token id past the embedding table: the embedding graph fails in ORT; graphlint says GL8007."""
    import onnxruntime as ort

    folder = shutil.copytree(os.path.join(HAND, "llava_ts"), tmp_path / "f")
    cfg = json.loads((folder / "config.json").read_text())
    emb = onnx.load(str(folder / "embed.onnx"))
    rows = next(numpy_helper.to_array(t).shape[0] for t in emb.graph.initializer if len(t.dims) == 2)
    key = next(k for k in ("image_token_index", "image_token_id") if k in cfg)
    assert graphlint.check(str(folder), target="ort", select=["GL8007"]).ok
    cfg[key] = rows
    (folder / "config.json").write_text(json.dumps(cfg))
    report = graphlint.check(str(folder), target="ort", select=["GL8007"])
    (err,) = report.errors
    assert err.model.endswith("config.json") and f"{key} = {rows}" in err.message
    sess = ort.InferenceSession(str(folder / "embed.onnx"), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    with pytest.raises(Exception, match=r"(?i)out of|bounds|indices"):
        sess.run(None, {name: np.array([[1, rows]], dtype=np.int64)})
