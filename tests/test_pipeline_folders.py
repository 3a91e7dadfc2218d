"""Deployment folders as pipelines: layouts recognized, stages linted for the targets that take them,
edges resolved in the graphs, configured pipelines, untrusted paths, SARIF on the config's line.

The folders are the corpus's real optimum-intel exports (testmodels/vlm/optimum_intel, built by
``bash testmodels/vlm/build.sh``) and the genai builder's (testmodels/pipelines/genai).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import graphlint
from graphlint.pipeline import detect
from testmodels.vlm import seeds
from tests.conftest import ROOT
from tests.sarif_github import check_github_sarif

LLAVA = os.path.join(ROOT, "testmodels", "vlm", "optimum_intel", "llava")
GENAI = os.path.join(ROOT, "testmodels", "pipelines", "genai", "llama_fp32")


def _copy(src: str, dest: str) -> str:
    shutil.copytree(src, dest)
    return dest


def _edit(folder: str, name: str, key: str, value) -> None:
    """Set a config key (dotted path) as the corpus's seeds do."""
    seeds.apply_edit(Path(folder), {"op": "set", "file": name, "key": key, "value": value})

def test_optimum_intel_folder_is_one_pipeline_of_its_graphs():
    found = detect.find(LLAVA)
    assert found.loose == []  # every graph of the folder is a stage
    assert detect.find(LLAVA + os.sep).loose == []  # however the folder is spelled
    (pipe,) = found.pipelines
    assert pipe.layout == "optimum-intel"
    assert {s.role for s in pipe.stages} == {"vision", "text_embeddings", "language_model"}
    assert any(e.merge == "image_tokens" and e.dest == "language_model" for e in pipe.edges)

    report = graphlint.check(LLAVA, target="openvino")
    assert report.ok, report.to_text()
    (pres,) = report.pipelines
    merge = next(e for e in pres.contracts if "[image tokens]" in e.subject)
    assert merge.verdict == "ok"
    # the ports as the graphs name them, and the sizes the processor feeds checked
    assert merge.subject.startswith("vision_embeddings:last_hidden_state")
    assert "rows = image tokens at" in merge.contract and " 0 of" not in merge.contract


def test_folder_on_the_command_line(cli):
    res = cli(LLAVA, "--target", "openvino")
    assert res.code == 0, res.err
    assert "optimum-intel pipeline 'llava'" in res.out
    assert "is a directory" not in res.err
    empty = cli(os.path.join(ROOT, "docs"))
    assert empty.code == 2 and len(empty.err.strip().splitlines()) == 1 and "no model file" in empty.err


def test_image_token_count_changed_is_an_error_on_the_config_line(tmp_path, cli, sarif_validator):
    folder = _copy(LLAVA, str(tmp_path / "llava"))
    _edit(folder, "processor_config.json", "num_additional_image_tokens", 5)  # 16 patches + 5 - 1 (default strategy)
    res = cli(folder, "--target", "openvino", "--format", "sarif")
    assert res.code == 1, res.err
    doc = json.loads(res.out)
    sarif_validator(doc)
    check_github_sarif(doc)
    hits = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "GL8001"]
    assert hits, [r["ruleId"] for r in doc["runs"][0]["results"]]
    loc = hits[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"].endswith("processor_config.json")
    with open(os.path.join(folder, "processor_config.json"), encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if '"num_additional_image_tokens"' in text)
    assert loc["region"]["startLine"] == line
    assert "20 image tokens" in hits[0]["message"]["text"] and "16 rows" in hits[0]["message"]["text"]


def test_configured_pipeline(tmp_path):
    folder = tmp_path / "hand"
    folder.mkdir()
    for src, dst in (("openvino_vision_embeddings_model", "vision"), ("openvino_language_model", "lm")):
        for ext in (".xml", ".bin"):
            shutil.copyfile(os.path.join(LLAVA, src + ext), folder / (dst + ext))
    for name in ("config.json", "preprocessor_config.json", "processor_config.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(LLAVA, name), folder / name)
    (folder / "graphlint.toml").write_text(
        '[pipeline]\nname = "mine"\n'
        '[[pipeline.stage]]\nname = "vis"\nmodel = "vision.xml"\nrole = "vision"\n'
        '[[pipeline.stage]]\nname = "lm"\nmodel = "lm.xml"\nrole = "language_model"\n'
        '[[pipeline.edge]]\nfrom = "vis:last_hidden_state"\nto = "lm:inputs_embeds"\nmerge = "image_tokens"\n')
    report = graphlint.check(str(folder), target="openvino")
    (pres,) = report.pipelines
    assert pres.pipeline.layout == "graphlint.toml" and pres.pipeline.name == "mine"
    assert [e.verdict for e in pres.contracts] == ["ok"]
    assert report.ok, report.to_text()


@pytest.mark.parametrize("stage_model, says", [
    ("../outside.xml", "is not a file inside"),
    ("/etc/passwd", "is not a file inside"),
])
def test_configured_pipeline_refuses_paths_outside_the_folder(tmp_path, cli, stage_model, says):
    folder = tmp_path / "f"
    folder.mkdir()
    (tmp_path / "outside.xml").write_text("<net/>")
    (folder / "graphlint.toml").write_text(f'[[pipeline]]\n[[pipeline.stage]]\nname = "a"\nmodel = "{stage_model}"\n')
    res = cli(str(folder))
    assert res.code == 2
    assert len(res.err.strip().splitlines()) == 1 and says in res.err and "Traceback" not in res.err


def test_genai_folder_and_a_filename_that_leaves_it(tmp_path):
    found = detect.find(GENAI)
    (pipe,) = found.pipelines
    assert pipe.layout == "onnxruntime-genai" and [s.role for s in pipe.stages] == ["language_model"]
    folder = _copy(GENAI, str(tmp_path / "g"))
    _edit(folder, "genai_config.json", "model.vision", {"filename": "../../secret.onnx"})
    (tmp_path / "secret.onnx").write_bytes(b"not read")
    (pipe,) = detect.find(folder).pipelines
    assert [s.name for s in pipe.stages] == ["decoder"]
    assert any("outside the folder" in n for n in pipe.notes)
    report = graphlint.check(folder, target="ort")
    assert any(f.rule_id == "GL8008" and "outside the folder" in f.message for f in report.findings)


def test_kv_geometry_against_config(tmp_path):
    """genai allocates the cache from genai_config.json: a head count the graph does not have is an error."""
    folder = _copy(GENAI, str(tmp_path / "g"))
    with open(os.path.join(folder, "genai_config.json"), encoding="utf-8") as f:
        kv = json.load(f)["model"]["decoder"]["num_key_value_heads"]
    assert graphlint.check(folder, target="ort", select=["GL8"]).ok
    _edit(folder, "genai_config.json", "model.decoder.num_key_value_heads", kv * 2)
    report = graphlint.check(folder, target="ort", select=["GL8"])
    (err,) = report.errors
    assert err.rule_id == "GL8006" and err.model.endswith("genai_config.json")
    assert f"num_key_value_heads = {kv * 2}" in err.message


def test_mixed_files_lint_each_for_the_targets_that_take_it(cli):
    onnx_file = os.path.join(GENAI, "model.onnx")
    xml = os.path.join(LLAVA, "openvino_text_embeddings_model.xml")
    res = cli(onnx_file, xml, "--target", "ort", "--target", "openvino", "--format", "json")
    assert res.code in (0, 1), res.err
    doc = res.json()
    pairs = {(os.path.basename(m["path"]), m["target"].split("@")[0]) for m in doc["models"]}
    assert pairs == {("model.onnx", "ort"), ("model.onnx", "openvino"),
                     ("openvino_text_embeddings_model.xml", "openvino")}
    assert any(n.startswith("Skipped: ort") and "1 OpenVINO IR file" in n for n in doc["notes"])
    alone = cli(xml, "--target", "ort")
    assert alone.code == 2 and "no requested target can take openvino models" in alone.err


def test_partition_counts_include_subgraphs():
    path = os.path.join(ROOT, "testmodels", "pipelines", "optimum_text", "t5", "decoder_model_merged.onnx")
    report = graphlint.check(path, target="ort")
    (res,) = report.run.results
    assert res.stats["partition"]["nodes"] == res.model.node_count > len(res.model.graph.nodes)


def test_processor_sizes_are_the_fed_sizes_of_the_shape_rules(tmp_path):
    """GL3003's 'whether other sizes will be fed is unknown' on the vision graph alone is settled by the
    folder's processor: gone where every size it feeds holds, an error where one does not."""
    vision = os.path.join(LLAVA, "openvino_vision_embeddings_model.xml")
    alone = graphlint.check(vision, target="openvino", select=["GL3003"])
    assert [f.severity.label for f in alone.findings] == ["warning"]
    assert "unknown" in alone.findings[0].message
    assert graphlint.check(LLAVA, target="openvino", select=["GL3003"]).findings == []
    folder = _copy(LLAVA, str(tmp_path / "llava"))
    _edit(folder, "processor_config.json", "image_processor.crop_size", {"height": 48, "width": 48})
    _edit(folder, "processor_config.json", "image_processor.size", {"shortest_edge": 48})
    pinned = graphlint.check(folder, target="openvino", select=["GL3003"])
    assert [f.severity.label for f in pinned.findings] == ["error"]
    assert "48" in pinned.findings[0].message and "processor" in pinned.findings[0].message
