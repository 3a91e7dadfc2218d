"""``graphlint scan --confirm``: each model run on the installed engines (ONNX Runtime CPU, OpenVINO CPU)
in the scan's workers or Ray tasks, its settled findings and its confirm record stored with the row;
the store's key tells a confirm scan from a static one (and the confirm settings and engines installed
are part of it), and a re-scan with the same inputs reuses the stored confirm results."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from graphlint.scan import keys, scan
from graphlint.scan.store import Store
from tests.conftest import ROOT, run_cli
from tests.models import relu_model, save

TARGETS = ["ort", "openvino"]
# The Add's two inputs declare different dims (GL3001); fed 1x4 and 1x5 the engines refuse it.
MISMATCH = ["a:1x4,1x4,1x4", "b:1x5,1x5,1x5"]


def _add_model():
    from onnx import TensorProto as T
    from onnx import helper as h

    g = h.make_graph([h.make_node("Add", ["a", "b"], ["y"], name="add")], "add",
                     [h.make_tensor_value_info("a", T.FLOAT, ["batch", "seq"]),
                      h.make_tensor_value_info("b", T.FLOAT, ["batch", "len"])],
                     [h.make_tensor_value_info("y", T.FLOAT, ["batch", "seq"])])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    folder = tmp_path / "fleet"
    folder.mkdir()
    save(_add_model(), str(folder), "add.onnx")
    save(relu_model(), str(folder), "relu.onnx")
    return folder


def _rows(db: Path) -> dict:
    with Store(str(db), create=False) as s:
        return {(os.path.basename(r.path), r.target): r for r in s.rows()}


def _scan(fleet: Path, db: Path, **kw):
    kw.setdefault("jobs", 2)
    return scan([str(fleet)], TARGETS, str(db), shapes=MISMATCH, **kw)


def _without_seconds(rec):
    if isinstance(rec, dict):
        return {k: _without_seconds(v) for k, v in rec.items() if k != "seconds"}
    return rec


def test_confirm_scan_stores_settled_findings_and_the_confirm_record(fleet, tmp_path):
    import graphlint

    db = tmp_path / "fleet.db"
    summary = _scan(fleet, db, confirm=True)
    assert summary.confirm and summary.linted == 2 and not summary.failed
    rows = _rows(db)
    ort = rows[("add.onnx", "ort@1.32:cpu")]
    assert ort.confirm["engine"] == "onnxruntime" and ort.confirm["version"] == keys.engine_versions()["onnxruntime"]
    assert ort.confirm["confirmed"] >= 1 and [p["ok"] for p in ort.confirm["points"]] == [False]
    confirmed = [f for f in ort.findings if (f.get("properties") or {}).get("confirm", {}).get("verdict") == "confirmed"]
    assert {f["rule_id"] for f in confirmed} >= {"GL3001"}
    assert rows[("add.onnx", "openvino@2026.4:cpu")].confirm["engine"] == "openvino"
    assert rows[("relu.onnx", "ort@1.32:cpu")].confirm["points"]  # ran (its inputs are not a and b)

    # what the store holds is what `graphlint check --confirm` reports for the model
    report = graphlint.check(str(fleet / "add.onnx"), target=TARGETS, shapes=MISMATCH, confirm=True)
    for res in report.run.results:
        row = rows[("add.onnx", res.target.spec)]
        assert sorted((f["rule_id"], f["severity"], f["message"]) for f in row.findings) == \
            sorted((f.rule_id, f.severity.label, f.message) for f in res.findings)
        assert _without_seconds(row.confirm) == _without_seconds(res.confirm)


def test_confirm_is_part_of_the_key_and_a_rescan_reuses_confirm_results(fleet, tmp_path):
    db = tmp_path / "fleet.db"
    static = _scan(fleet, db)
    assert static.linted == 2 and not static.confirm
    static_rows = _rows(db)
    assert all(r.confirm is None for r in static_rows.values())

    first = _scan(fleet, db, confirm=True)  # a static row is never reused for a confirm scan
    assert first.linted == 2 and first.reused == 0
    confirmed = _rows(db)
    assert all(r.confirm is not None for r in confirmed.values())
    assert {r.key.options_hash for r in confirmed.values()}.isdisjoint({r.key.options_hash for r in static_rows.values()})

    again = _scan(fleet, db, confirm=True)  # same inputs: the stored confirm results
    assert again.linted == 0 and again.reused == 2
    assert {k: r.findings for k, r in _rows(db).items()} == {k: r.findings for k, r in confirmed.items()}
    with Store(str(db), create=False) as s:
        assert set(s.lint_counts().values()) == {2}  # the static lint and the confirm lint, no third
        assert s.scans()[-1]["executor"] == "local:2 --confirm"

    back = _scan(fleet, db)  # nor a confirm row for a static scan: the static findings again
    assert back.linted == 2
    assert {k: r.findings for k, r in _rows(db).items()} == {k: r.findings for k, r in static_rows.items()}


def test_engine_versions_and_confirm_settings_are_part_of_the_key(fleet, tmp_path, monkeypatch):
    from graphlint.confirm.options import ConfirmOptions

    engines = keys.engine_versions()
    assert engines["onnxruntime"] and engines["openvino"] and "gpu" in engines
    base = keys.confirm_settings(ConfirmOptions(), engines)
    assert base != keys.confirm_settings(ConfirmOptions(seed=1), engines)
    assert base != keys.confirm_settings(ConfirmOptions(budget=5), engines)
    assert base != keys.confirm_settings(ConfirmOptions(), dict(engines, onnxruntime="1.32.1"))

    db = tmp_path / "fleet.db"
    assert _scan(fleet, db, confirm=True).linted == 2
    monkeypatch.setattr(keys, "engine_versions", lambda: dict(engines, openvino="2026.4.2"))
    assert _scan(fleet, db, confirm=True).linted == 2  # another OpenVINO installed: confirmed anew
    assert _scan(fleet, db, confirm=True).linted == 0

    config = tmp_path / "graphlint.toml"
    config.write_text("[confirm]\nseed = 3\n")
    assert _scan(fleet, db, confirm=True, config=str(config)).linted == 2  # other confirm settings


def test_rows_confirmed_on_other_engines_than_the_drivers_are_keyed_by_them(fleet, tmp_path, monkeypatch):
    """A task that ran where other engines are installed (a Ray node) stores its rows under those, so
    the driver's next scan does not take them for its own."""
    from graphlint.scan import work

    db = tmp_path / "fleet.db"
    real = work._engines
    monkeypatch.setattr(work, "_engines", lambda opts: dict(real(opts), onnxruntime="0.0.0"))
    assert _scan(fleet, db, confirm=True, jobs=1).linted == 2
    monkeypatch.undo()
    assert _scan(fleet, db, confirm=True, jobs=1).linted == 2
    assert _scan(fleet, db, confirm=True, jobs=1).linted == 0


def test_cli_confirm_summary_json_and_dashboard(fleet, tmp_path):
    db, html = tmp_path / "fleet.db", tmp_path / "fleet.html"
    args = ["scan", str(fleet), "--targets", "ort,openvino", "--store", str(db), "--confirm", "-j", "2",
            *[a for s in MISMATCH for a in ("--shapes", s)]]
    r = run_cli(*args, "--report", str(html), "--format", "json", cwd=str(tmp_path))
    assert r.code == 1, r.err
    assert "and run on the installed engines (--confirm)" in r.err and "2 linted" in r.err
    doc = r.json()
    ort = doc["confirm"]["ort@1.32:cpu"]
    assert ort["ran"] == 2 and ort["skipped"] == 0 and ort["confirmed"] >= 1
    add = next(m for m in doc["models"] if m["path"].endswith("add.onnx"))
    assert add["confirm"]["confirmed"] >= 1
    assert add["targets"]["ort@1.32:cpu"]["confirm"]["engines"] == [f"onnxruntime {keys.engine_versions()['onnxruntime']}"]
    page = html.read_text()
    assert 'id="confirm"' in page and "confirmed / cleared" in page
    model_page = next((tmp_path / "fleet_models").glob("*.html")).read_text()
    assert 'class="sub confirm"' in model_page

    text = run_cli(*args, cwd=str(tmp_path))
    assert "0 linted, 2 from the store" in text.err
    assert "run on the engines (--confirm):" in text.out and "ort@1.32:cpu: 2 model(s) ran" in text.out

    static = run_cli("scan", "--store", str(db), "--confirm", cwd=str(tmp_path))
    assert static.code == 2 and "need SOURCES" in static.err


def test_trt_target_is_stored_with_the_reason_it_did_not_run(fleet, tmp_path):
    db = tmp_path / "fleet.db"
    scan([str(fleet / "relu.onnx")], ["trt", "ort"], str(db), confirm=True, jobs=1)
    rows = _rows(db)
    trt = rows[("relu.onnx", "trt@10.15")]
    assert trt.status == "linted"
    if keys.engine_versions()["tensorrt"] is None:
        assert trt.confirm["skipped"] == "tensorrt is not installed"
    elif not keys.engine_versions()["gpu"]:
        assert "no CUDA GPU" in trt.confirm["skipped"]
    assert rows[("relu.onnx", "ort@1.32:cpu")].confirm["points"]


def test_deployment_folder_keeps_each_stages_record(tmp_path):
    import shutil

    fleet = tmp_path / "fleet"
    shutil.copytree(Path(ROOT) / "testmodels" / "vlm" / "hand" / "llava_ts", fleet / "llava_ts")
    db = tmp_path / "fleet.db"
    summary = scan([str(fleet)], ["ort"], str(db), confirm=True, jobs=1)
    assert summary.linted == 1 and not summary.failed
    row = next(iter(_rows(db).values()))
    stages = row.confirm["stages"]
    assert {"embed.onnx", "lm.onnx", "vision.onnx"} <= set(stages) <= {"embed.onnx", "lm.onnx", "vision.onnx",
                                                                       "pipeline"}
    assert all(stages[s]["engine"] == "onnxruntime" and stages[s]["points"] for s in ("embed.onnx", "lm.onnx"))


def test_a_store_of_schema_1_is_migrated(fleet, tmp_path):
    db = tmp_path / "fleet.db"
    _scan(fleet, db)
    con = sqlite3.connect(str(db))
    con.execute("ALTER TABLE results DROP COLUMN confirm")
    con.execute("UPDATE meta SET value='1' WHERE key='schema'")
    con.commit()
    con.close()
    again = _scan(fleet, db)
    assert again.linted == 0 and again.reused == 2  # the rows of a static scan still hold
    assert _scan(fleet, db, confirm=True).linted == 2
    with Store(str(db), create=False) as s:
        assert s.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == "2"
        assert all(json.loads(c)["engine"] for (c,) in s.db.execute("SELECT confirm FROM results"))


# --- Ray ---------------------------------------------------------------------------------------------

def _ray():
    if os.environ.get("CI"):
        import ray  # CI installs graphlint[ray]

        return ray
    return pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster():
    ray = _ray()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_confirm_scan_runs_the_engines_in_the_ray_tasks(cluster, fleet, tmp_path):
    local_db, ray_db = tmp_path / "local.db", tmp_path / "ray.db"
    _scan(fleet, local_db, confirm=True)
    summary = _scan(fleet, ray_db, confirm=True, ray="auto")
    assert summary.linted == 2 and not summary.failed
    local, remote = _rows(local_db), _rows(ray_db)
    assert local.keys() == remote.keys()
    for k in local:
        assert remote[k].key == local[k].key
        assert remote[k].findings == local[k].findings
        assert _without_seconds(remote[k].confirm) == _without_seconds(local[k].confirm)
    with Store(str(ray_db), create=False) as s:
        workers = {w for (w,) in s.db.execute("SELECT DISTINCT worker FROM lints")}
    assert os.getpid() not in {int(w.rsplit(":", 1)[1]) for w in workers}  # confirmed in Ray's workers
    again = _scan(fleet, ray_db, confirm=True, ray="auto")
    assert again.linted == 0 and again.reused == 2
