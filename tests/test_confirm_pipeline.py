"""``--confirm`` on deployment folders: the whole pipeline (processor arithmetic, vision chain, merge,
language model) run end to end on the real engines (ONNX Runtime CPU, OpenVINO CPU) in one child process
per engine (graphlint.confirm.pipeline). The folders are the VLM corpus's committed ones and its seeds
(testmodels/vlm); nothing is mocked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import graphlint
from testmodels.vlm import hand_seeds, seeds
from tests.conftest import ROOT

VLM = os.path.join(ROOT, "testmodels", "vlm")
HAND = os.path.join(VLM, "hand")
QUIET = {"compare": False, "bisect": False}


def _check(folder: str, target: str):
    report = graphlint.check(folder, target=target, confirm=QUIET)
    (pres,) = report.pipelines
    return pres


def _errors(pres) -> list:
    return [f for f in pres.findings if f.severity.label == "error"]


@pytest.mark.parametrize("target", ["ort", "openvino"])
def test_healthy_hand_folder_runs_end_to_end_without_error(target):
    pres = _check(os.path.join(HAND, "llava_ts"), target)
    assert _errors(pres) == []
    doc = pres.confirm
    assert doc["end_to_end"] and doc["unpredicted"] == 0 and "skipped" not in doc
    assert doc["points"] and all(p["ok"] for p in doc["points"])
    first = doc["points"][0]
    assert first["rows"] == first["tokens"] == 16  # the rows the engine returned, held to the processor's tokens
    assert first["logits"][0] == 1 and first["logits"][2] == 256  # the language model ran on the merge


def test_healthy_folder_clears_the_unknown_rows():
    """Qwen2.5-VL's merger (window attention) defeats the shape walk: GL8001 says the rows are unknown; the run
    at every processor feed (image_grid_thw from the feed, M-RoPE position ids) clears it."""
    pres = _check(os.path.join(VLM, "optimum_intel", "qwen2_5_vl"), "openvino")
    assert _errors(pres) == []
    cleared = [f for f in pres.findings if f.properties.get("confirm", {}).get("verdict") == "cleared"]
    assert [f.rule_id for f in cleared] == ["GL8001"]
    assert cleared[0].severity.label == "info" and "Cleared: openvino" in cleared[0].message
    assert pres.confirm["cleared"] == 1 and all(p["ok"] for p in pres.confirm["points"])


@pytest.mark.parametrize("target", ["ort", "openvino"])
def test_seeded_image_token_count_is_a_confirmed_error(tmp_path, target):
    folder = hand_seeds.materialize("llava_ts__extra_token", str(tmp_path))
    pres = _check(folder, target)
    (f,) = [x for x in _errors(pres) if x.rule_id == "GL8001"]
    assert f.properties["confirm"]["verdict"] == "confirmed"
    assert "Image features and image tokens do not match: tokens 17, features 16" in f.message
    assert pres.confirm["confirmed"] >= 1


@pytest.mark.parametrize("target", ["ort", "openvino"])
def test_seeded_projector_width_is_a_confirmed_error(tmp_path, target):
    folder = hand_seeds.materialize("llava_ts__proj96", str(tmp_path))
    pres = _check(folder, target)
    (f,) = [x for x in _errors(pres) if x.rule_id == "GL8002"]
    assert f.properties["confirm"]["verdict"] == "confirmed"
    assert "tokens 16 x 64 values, features 16 x 96 values" in f.message
    assert f.properties["confirm"]["engine"] == ("onnxruntime" if target == "ort" else "openvino")


def test_llava_next_non_square_failure_found_end_to_end():
    """optimum-intel 2.2.0 packs LLaVA-NeXT's tiles with the grid's height and width swapped: the engine
    returns every tile's rows, the runtime's packing then makes 26 features for 52 tokens."""
    pres = _check(os.path.join(VLM, "optimum_intel", "llava_next"), "openvino")
    failed = [p for p in pres.confirm["points"] if not p["ok"]]
    assert failed and all(p["failed"] == "tokens" and p["image"][0] != p["image"][1] for p in failed)
    assert all(p["ok"] for p in pres.confirm["points"] if p["image"][0] == p["image"][1])
    (f,) = [x for x in _errors(pres) if x.rule_id == "GL8001"]
    assert "Confirmed: openvino" in f.message and "tokens 52, features 26" in f.message


def _custom(tmp_path, count: int | None) -> str:
    """hand/llava_ts with its processor classes renamed to ones graphlint has no arithmetic for."""
    dest = Path(tmp_path) / "custom"
    shutil.copytree(os.path.join(HAND, "llava_ts"), dest)
    for key, value in (("image_processor.image_processor_type", "AcmeImageProcessor"),
                       ("processor_class", "AcmeProcessor")) + ((("image_seq_length", count),) if count else ()):
        seeds.apply_edit(dest, {"op": "set", "file": "processor_config.json", "key": key, "value": value})
    return str(dest)


def test_custom_processor_token_mismatch_found_at_run_time(tmp_path):
    pres = _check(_custom(tmp_path, 20), "ort")
    errors = _errors(pres)
    assert errors, [f.message for f in pres.findings]
    (f,) = errors
    assert f.rule_id == "GL8008" and f.properties["confirm"]["verdict"] == "confirmed"
    assert "tokens 20, features 16" in f.message and "image_seq_length" in str(f.properties["confirm"].get("key"))
    (point,) = pres.confirm["points"]
    assert point["kind"] == "export" and point["shapes"] == {"pixel_values": [1, 3, 32, 32]}


def test_custom_processor_with_consistent_count_is_cleared(tmp_path):
    pres = _check(_custom(tmp_path, None), "ort")  # config.json's image_seq_length = 16 = the rows
    assert _errors(pres) == []
    (f,) = [x for x in pres.findings if x.rule_id == "GL8008"]
    assert f.severity.label == "info" and f.properties["confirm"]["verdict"] == "cleared"


def test_no_engine_is_imported_in_the_linter_process():
    code = ("import sys, graphlint; r = graphlint.check(sys.argv[1], target='ort', confirm={'compare': False}); "
            "assert r.pipelines[0].confirm['points']; "
            "assert 'onnxruntime' not in sys.modules and 'openvino' not in sys.modules, 'engine imported'")
    subprocess.run([sys.executable, "-c", code, os.path.join(HAND, "llava_ts")], check=True, cwd=ROOT)


def test_stage_alone_runs_on_sampled_runtime_inputs_are_no_errors():
    """Idefics3's vision graph confirmed alone gets the processor's pixel_values and a patch mask graphlint
    sizes itself: such a point is a sample, so a failure there is a warning; the end-to-end run makes the
    mask as optimum-intel does and runs every feed."""
    report = graphlint.check(os.path.join(VLM, "optimum_intel", "idefics3"), target="openvino", confirm=QUIET)
    assert [f for f in report.findings if f.severity.label == "error"] == []
    stage = [f for f in report.findings if f.rule_id == "GL9101" and "processor feed" in f.message]
    assert all(f.properties["confirm"]["point"].endswith("(other inputs sampled)") and f.severity.label == "warning"
               for f in stage)
    (pres,) = report.pipelines
    assert pres.confirm["points"] and all(p["ok"] for p in pres.confirm["points"])
