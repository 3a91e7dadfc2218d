"""``graphlint scan`` over deployment folders: a folder is one item (its pipeline), its graphs are not
items of their own, its key covers its configs, and a config edited after the scan re-lints that folder
alone with the pipeline finding it now has."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from graphlint.scan.store import Store
from tests.conftest import ROOT
from tests.test_scan import _lints, _rows, _scan

VLM = Path(ROOT) / "testmodels" / "vlm"


def test_scan_lints_deployment_folders_as_pipelines(tmp_path):
    fleet = tmp_path / "fleet"
    shutil.copytree(VLM / "optimum_intel" / "llava", fleet / "llava")
    shutil.copytree(VLM / "hand" / "llava_ts", fleet / "llava_ts")
    loose = fleet / "other" / "model.onnx"
    loose.parent.mkdir()
    shutil.copy(Path(ROOT) / "testmodels" / "pipelines" / "optimum_vision" / "vit" / "model.onnx", loose)
    db = tmp_path / "fleet.db"
    args = [str(fleet), "--targets", "openvino,ort", "--store", str(db), "-j", "2"]
    first = _scan(*args, cwd=str(tmp_path))
    assert first.returncode in (0, 1), first.stderr
    assert "3 linted, 0 from the store" in first.stderr, first.stderr
    rows = _rows(db)
    paths = {os.path.basename(p) for p, _ in rows}
    assert paths == {"llava", "llava_ts", "model.onnx"}  # the folders' graphs are not items of their own
    assert rows[("fleet/llava", "ort@1.32:cpu")].status == "n/a"  # no ONNX stage in an optimum-intel IR folder
    assert rows[("fleet/llava", "openvino@2026.4:cpu")].status == "linted"
    assert rows[("fleet/llava_ts", "ort@1.32:cpu")].status == "linted"

    cfg = fleet / "llava" / "processor_config.json"
    doc = json.loads(cfg.read_text())
    doc["num_additional_image_tokens"] = 3
    cfg.write_text(json.dumps(doc, indent=2))
    again = _scan(*args, cwd=str(tmp_path))
    assert "1 linted, 2 from the store" in again.stderr, again.stderr
    assert _lints(db)["fleet/llava"] == 2 and _lints(db)["fleet/llava_ts"] == 1
    with Store(str(db), create=False) as s:
        row = next(r for r in s.rows() if r.path == "fleet/llava" and r.target.startswith("openvino"))
    assert any(f["rule_id"] == "GL8001" and f["severity"] == "error" for f in row.findings)
