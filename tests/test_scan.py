"""``graphlint scan`` on this machine's worker pool: the store's keys, re-scans that lint only what
changed, manifests with per-model shapes, failures recorded without stopping the scan, an
interrupted scan resumed, the engine-upgrade diff and the dashboard in Chromium at 1280 px.
(Ray: tests/test_scan_ray.py.)"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import onnx
import pytest

from graphlint.scan.store import Store
from testmodels import fleet
from tests.browser import CHROMIUM, Browser
from tests.conftest import ROOT
from tests.packs import install_pack

PIPELINES = Path(ROOT) / "testmodels" / "pipelines"
# A few real exports of different kinds: a merged decoder, a ViT, a skl2onnx pipeline, an OpenVINO IR.
FEW = ["optimum_text/llama/legacy/decoder_model_merged.onnx", "optimum_vision/vit/model.onnx",
       "skl2onnx/tfidf_logreg/model.onnx", "optimum_intel/vit/openvino_model.xml"]


def _copy_few(dst: Path) -> list[Path]:
    out = []
    for rel in FEW:
        src = PIPELINES / rel
        target = dst / rel.replace("/", "__")
        shutil.copy(src, target)
        if src.suffix == ".xml":
            shutil.copy(src.with_suffix(".bin"), target.with_suffix(".bin"))
        out.append(target)
    return out


def _scan(*args: str, cwd: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphlint", "scan", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, timeout=900)


def _rows(db: Path) -> dict[tuple[str, str], object]:
    with Store(str(db), create=False) as s:
        return {(r.path, r.target): r for r in s.rows()}


def _lints(db: Path) -> dict[str, int]:
    with Store(str(db), create=False) as s:
        return s.lint_counts()


def test_rescan_lints_only_what_changed(tmp_path):
    models = _copy_few(tmp_path)
    db = tmp_path / "fleet.db"
    args = [str(tmp_path), "--targets", "trt@10.15,openvino", "--store", str(db), "-j", "2"]
    first = _scan(*args)
    assert first.returncode in (0, 1), first.stderr
    assert f"{len(models)} linted, 0 from the store" in first.stderr
    rows = _rows(db)
    assert len(rows) == 2 * len(models)
    ir = next(p for p in models if p.suffix == ".xml")
    for (path, target), row in rows.items():
        p = Path(ROOT, path) if not os.path.isabs(path) else Path(path)
        if p.suffix == ".onnx":  # a single-file model: its key is its file's sha256
            assert row.key.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
        assert row.key.graphlint_version and row.key.rule_data_hash and row.key.options_hash
        assert row.status == ("n/a" if (p == ir and target.startswith("trt")) else "linted"), (path, target)
    assert os.path.isfile(str(db) + "-wal") or sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    again = _scan(*args)
    assert f"0 linted, {len(models)} from the store" in again.stderr, again.stderr
    assert again.stdout == first.stdout  # the same summary, served from the store
    assert set(_lints(db).values()) == {1}

    # the same bytes with a new mtime: hashed again, nothing linted
    os.utime(models[1], ns=(time.time_ns(), time.time_ns()))
    assert "0 linted" in _scan(*args).stderr
    # new bytes: only that model is linted again
    m = onnx.load(str(models[0]))
    m.doc_string = "re-exported"
    onnx.save(m, str(models[0]))
    third = _scan(*args)
    assert f"1 linted, {len(models) - 1} from the store" in third.stderr, third.stderr
    counts = _lints(db)
    assert counts[_name(models[0])] == 2 and sum(counts.values()) == len(models) + 1
    # other options: every model again (the options are part of the key)
    assert f"{len(models)} linted" in _scan(*args, "--ignore", "GL0002").stderr


def test_manifest_shapes_reach_the_lint(tmp_path):
    """A manifest's per-model --shapes are that model's optimization profile: TensorRT's GL3007
    (dynamic inputs need a profile) goes away when the manifest gives one."""
    vit = tmp_path / "vit.onnx"
    shutil.copy(PIPELINES / "optimum_vision/vit/model.onnx", vit)
    db = tmp_path / "fleet.db"
    (tmp_path / "none.csv").write_text("path\nvit.onnx\n")
    r = _scan(str(tmp_path / "none.csv"), "--targets", "trt@10.15", "--store", str(db), "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    (row,) = _rows(db).values()
    assert "GL3007" in {f["rule_id"] for f in row.findings}
    (tmp_path / "with.jsonl").write_text(json.dumps({"path": "vit.onnx", "shapes": ["pixel_values:1x3x32x32,"
                                                     "2x3x32x32,4x3x32x32"]}) + "\n")
    r = _scan(str(tmp_path / "with.jsonl"), "--targets", "trt@10.15", "--store", str(db))
    assert "1 linted" in r.stderr, r.stderr
    (row2,) = _rows(db).values()
    assert row2.key.options_hash != row.key.options_hash and row2.key.sha256 == row.key.sha256
    assert "GL3007" not in {f["rule_id"] for f in row2.findings}
    # a CSV manifest: the shapes field quoted (a profile holds commas)
    (tmp_path / "with.csv").write_text('path,shapes\nvit.onnx,"pixel_values:1x3x32x32,2x3x32x32,8x3x32x32"\n')
    r = _scan(str(tmp_path / "with.csv"), "--targets", "trt@10.15", "--store", str(db))
    assert "1 linted" in r.stderr, r.stderr  # another profile: another options hash, linted again
    (row3,) = _rows(db).values()
    assert "GL3007" not in {f["rule_id"] for f in row3.findings}
    bad = tmp_path / "bad.csv"
    bad.write_text("model\nvit.onnx\n")
    r = _scan(str(bad), "--targets", "trt", "--store", str(db))
    assert r.returncode == 2 and "needs a header with a 'path' column" in r.stderr and "Traceback" not in r.stderr


def test_sources_expand_folders_globs_and_manifests(tmp_path):
    from graphlint.errors import UsageError
    from graphlint.scan.sources import expand

    (tmp_path / "a").mkdir()
    (tmp_path / ".venv").mkdir()
    for rel in ("a/m.onnx", ".venv/hidden.onnx", "a/config.xml", "a/ir.xml"):
        (tmp_path / rel).write_bytes(b"")
    (tmp_path / "a" / "ir.xml").write_text('<?xml version="1.0"?>\n<net name="x" version="11"></net>')
    (tmp_path / "a" / "config.xml").write_text("<config/>")
    (tmp_path / "m.csv").write_text('path,shapes\na/m.onnx,"x:1x2,2x2,4x2;y:1 z:2"\n')
    items = expand([str(tmp_path / "m.csv"), str(tmp_path), str(tmp_path / "a" / "*.onnx")])
    names = [os.path.relpath(i.path if os.path.isabs(i.path) else os.path.join(ROOT, i.path), tmp_path)
             for i in items]
    assert names == ["a/m.onnx", "a/ir.xml"]  # once each, the manifest's entry first; no hidden, no non-IR xml
    assert items[0].shapes == ("x:1x2,2x2,4x2", "y:1", "z:2")
    for bad, why in (("nope/", "no such file or folder"), (str(tmp_path / "*.none"), "matches no model")):
        with pytest.raises(UsageError, match=why):
            expand([bad])
    (tmp_path / "bad.jsonl").write_text('{"path": "a/m.onnx"}\n[1]\n')
    with pytest.raises(UsageError, match=r"bad.jsonl:2: expected an object"):
        expand([str(tmp_path / "bad.jsonl")])


CRASH_PACK = '''
import os
import signal

from graphlint.rule import Rule, Severity


class Crash(Rule):
    """Kills its process on models named crash*: a crash in native code, as a worker sees it.

    ## What it checks
    Nothing.

    ## Why it matters
    It is a test.

    ## Example
    crash.onnx

    ## Fix
    None.
    """

    id = "ZZT001"
    name = "kill-the-worker"
    family = "test"
    severity = Severity.WARNING

    def check(self, ctx):
        if os.path.basename(ctx.model.path).startswith("crash"):
            os.kill(os.getpid(), signal.SIGKILL)
        return []


RULES = [Crash]
'''


@pytest.fixture(scope="module")
def crash_site(tmp_path_factory) -> str:
    return install_pack(tmp_path_factory.mktemp("crash_pack_src"), tmp_path_factory.mktemp("crash_site"),
                        "zzt-crash", "zzt_crash", "zzt", CRASH_PACK)


def test_crashes_timeouts_and_unreadable_models_are_recorded(tmp_path, crash_site):
    models = _copy_few(tmp_path)
    shutil.copy(models[1], tmp_path / "crash.onnx")
    (tmp_path / "garbage.onnx").write_bytes(os.urandom(4096))
    db = tmp_path / "fleet.db"
    env = dict(os.environ, PYTHONPATH=crash_site)
    r = _scan(str(tmp_path), "--targets", "ort", "--store", str(db), "-j", "2", env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    rows = {Path(p).name: row for (p, _), row in _rows(db).items()}
    assert rows["crash.onnx"].status == "crashed" and "died on both attempts" in rows["crash.onnx"].failure
    assert rows["garbage.onnx"].status == "failed" and rows["garbage.onnx"].failure
    assert all(rows[m.name].status in ("linted", "n/a") for m in models)
    assert _lints(db)[_name(tmp_path / "crash.onnx")] == 1  # recorded once, after the retry
    # a crashed row is kept on a re-scan; --retry-failed lints it again
    assert "0 linted" in _scan(str(tmp_path), "--targets", "ort", "--store", str(db), env=env).stderr
    again = _scan(str(tmp_path), "--targets", "ort", "--store", str(db), "--retry-failed", env=env)
    assert "1 linted" in again.stderr, again.stderr
    # a model past the time budget is recorded as a timeout, and the scan goes on to the next: a chain of
    # 50,000 nodes takes seconds to lint (a small real export can end within a short budget on a fast core)
    slow = tmp_path / "slow" / "chain.onnx"
    slow.parent.mkdir()
    onnx.save(_chain(50_000), str(slow))
    r = _scan(str(slow), str(models[0]), "--targets", "ort", "--store", str(tmp_path / "t.db"),
              "-j", "2", "--time-budget", "0.05")
    rows = {Path(p).name: row for (p, _), row in _rows(tmp_path / "t.db").items()}
    assert len(rows) == 2 and rows[models[0].name].status in ("timeout", "linted"), r.stderr
    assert rows["chain.onnx"].status == "timeout" and "time budget of 0.05 s" in rows["chain.onnx"].failure


def _chain(n: int) -> onnx.ModelProto:
    nodes = [onnx.helper.make_node("Relu" if i % 2 else "Sigmoid", [f"v{i}"], [f"v{i + 1}"]) for i in range(n)]
    io = [onnx.helper.make_tensor_value_info(f"v{i}", onnx.TensorProto.FLOAT, ["n", 8]) for i in (0, n)]
    graph = onnx.helper.make_graph(nodes, "chain", io[:1], io[1:])
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])


def test_interrupted_scan_resumes_and_lints_each_model_once(tmp_path):
    """SIGINT (Ctrl-C) and SIGKILL (a killed machine) mid-scan: the next scan lints only what was
    not stored, and over all of them each model is linted exactly once."""
    db = tmp_path / "fleet.db"
    args = [str(PIPELINES), "--targets", "trt@10.15,ort", "--store", str(db), "-j", "2"]
    for sig in (signal.SIGINT, signal.SIGKILL):
        proc = subprocess.Popen([sys.executable, "-m", "graphlint", "scan", *args], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            if db.exists() and sum(_lints_safe(db).values()) >= (10 if sig == signal.SIGINT else 40):
                break
        assert proc.poll() is None, "the scan ended before it could be interrupted"
        proc.send_signal(sig)
        err = proc.communicate(timeout=120)[1]
        if sig == signal.SIGINT:
            assert proc.returncode == 130 and "run the same command to resume" in err, err
        done = sum(_lints(db).values())
        assert done >= 10
    final = _scan(*args)
    assert final.returncode in (0, 1), final.stderr
    counts = _lints(db)
    # every item neither target skips: the ONNX files, and the deployment folders (genai, optimum's seq2seq)
    # with an ONNX stage, each one item; the IR: neither target takes it, nothing to lint
    from graphlint.scan.sources import expand

    total = sum(1 for i in expand([str(PIPELINES)]) if "onnx" in (i.kinds if i.pipeline else (
        "openvino" if i.path.endswith(".xml") else "onnx",)))
    assert total > 80
    assert len(counts) == total and set(counts.values()) == {1}, {k: v for k, v in counts.items() if v != 1}
    assert f"{total - done} linted" in final.stderr, final.stderr


def _name(p: Path) -> str:
    """How the store names a model: relative to the working folder (the checkout) when under it."""
    rel = os.path.relpath(p, ROOT)
    return str(p) if rel.startswith(os.pardir) else rel


def _lints_safe(db: Path) -> dict[str, int]:
    try:
        return _lints(db)
    except Exception:  # the store is being created
        return {}


@pytest.fixture(scope="module")
def fleet_store(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("fleet") / "fleet.db"
    r = _scan(*fleet.sources(), "--targets", "trt@10.1,trt@10.15,openvino,ort", "--store", str(db), "-j", "2")
    assert r.returncode == 1, r.stderr
    return db


def test_diff_of_the_two_tensorrt_tables(fleet_store):
    r = _scan("--store", str(fleet_store), "--diff", "trt@10.1", "trt@10.15", "--format", "json")
    assert r.returncode == 0, r.stderr  # nothing gets worse from 10.1 to 10.15
    d = json.loads(r.stdout)
    assert d["before"] == "trt@10.1" and d["after"] == "trt@10.15" and d["worse"] == 0
    changed = {Path(c["path"]).name: c for c in d["changed"]}
    llama = changed[fleet.OP23]
    assert (llama["before"], llama["after"], llama["direction"]) == ("error", "warning", "better")
    gone = {(f["rule_id"], f["op_type"]) for f in llama["go_away"]}
    assert ("GL0002", None) in gone and ("GL1001", "RMSNormalization") in gone and ("GL1001", "RotaryEmbedding") in gone
    assert not [f for f in llama["appear"] if f["severity"] == "error"]
    # the diff agrees with the stored rows it is made of
    rows = _rows(fleet_store)
    for c in d["changed"]:
        assert rows[(c["path"], "trt@10.1")].verdict == c["before"] and rows[(c["path"], "trt@10.15")].verdict == c["after"]
    unchanged = sum(1 for (p, t), row in rows.items() if t == "trt@10.1" and row.verdict == rows[(p, "trt@10.15")].verdict)
    assert d["unchanged"] == unchanged and d["compared"] == unchanged + len(d["changed"])
    missing = _scan("--store", str(fleet_store), "--diff", "trt@10.1", "ort@1.20")
    assert missing.returncode == 2 and "holds no results for ort@1.20:cpu" in missing.stderr
    text = _scan("--store", str(fleet_store), "--diff", "trt@10.1", "trt@10.15")
    assert f"{fleet.OP23}: error -> warning (better)" in text.stdout
    assert "- error GL0002" in text.stdout


def test_fleet_summary_json(fleet_store):
    r = _scan("--store", str(fleet_store), "--format", "json")
    s = json.loads(r.stdout)
    rows = _rows(fleet_store)
    assert s["models_total"] == len({p for p, _ in rows})
    for t in s["targets"]:
        assert sum(s["verdicts"][t].values()) == sum(1 for (_, tt) in rows if tt == t)
        assert s["verdicts"][t]["error"] == sum(1 for (_, tt), row in rows.items() if tt == t and row.verdict == "error")
    errors = [m["errors"] for m in s["models"] if not m["failed"]]
    assert errors == sorted(errors, reverse=True)
    top = s["failing_rules"][0]
    assert top["models"] == len({p for (p, _), row in rows.items()
                                 if any(f["rule_id"] == top["rule_id"] and f["severity"] == "error" for f in row.findings)})
    assert r.returncode == 1  # some model has errors
    assert _scan("--store", str(fleet_store.parent / "missing.db")).returncode == 2


needs_chromium = pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                                    reason="no chromium here (CI installs it)")


@needs_chromium
def test_dashboard_in_chromium(fleet_store, tmp_path):
    page = tmp_path / "fleet.html"
    r = _scan("--store", str(fleet_store), "--report", str(page), "--diff", "trt@10.1", "trt@10.15", "--format", "json")
    assert page.exists() and "model page(s)" in r.stderr, r.stderr
    changed = json.loads(r.stdout)["changed"]  # the diff, printed; its section is on the dashboard
    rows = _rows(fleet_store)
    models = {p for p, _ in rows}
    assert len(list((tmp_path / "fleet_models").glob("*.html"))) == len(models)
    with Browser(tmp_path / "profile", width=1280) as b:
        b.open(page)
        assert b.console() == []
        assert b.js("document.documentElement.scrollWidth - window.innerWidth") <= 0  # readable at 1280 px
        assert b.js("document.querySelectorAll('tr.model').length") == len(models)
        counts = b.js("Array.from(document.querySelectorAll('#verdicts tr[data-target]')).map(r => "
                      "[r.dataset.target, Number(r.children[2].textContent)])")
        for target, errors in counts:
            assert errors == sum(1 for (_, t), row in rows.items() if t == target and row.verdict == "error")
        assert b.js("document.querySelectorAll('#diff tr.change').length") == len(changed) > 0
        assert fleet.OP23 in b.js("document.getElementById('diff').textContent")
        shown = b.js("Array.from(document.querySelectorAll('tr.model td:nth-child(2)')).map(e => Number(e.textContent))")
        assert shown == sorted(shown, reverse=True) and shown[0] > 0
        b.screenshot(Path(ROOT) / "testmodels" / "out" / "screenshots" / "fleet_dashboard.png", max_height=2400)
        first = b.js("document.querySelector('tr.model a').getAttribute('href')")
        path = b.js("document.querySelector('tr.model a').textContent")
        b.open(tmp_path / first)
        assert b.js("document.documentElement.scrollWidth - window.innerWidth") <= 0
        mine = [row for (p, _), row in rows.items() if p == path]
        assert b.js("document.querySelectorAll('section.target').length") == len(mine)
        live = sum(1 for row in mine for f in row.findings if not f.get("suppressed"))
        assert b.js("document.querySelectorAll('section.target tr[data-rule]').length") == live > 0
