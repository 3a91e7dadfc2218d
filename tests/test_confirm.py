"""``--confirm``: models run on the real engines (ONNX Runtime CPU, OpenVINO CPU), in child processes,
and what the runs show settles the static findings. No engine is mocked: each model here is built so
that the engines really fail, really disagree or really run."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import graphlint
from graphlint.confirm import execute

BOTH = ["ort", "openvino"]


def _save(tmp_path, name: str, nodes, inputs, outputs, inits=(), opset: int = 17) -> str:
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 9
    path = str(tmp_path / name)
    onnx.save(m, path)
    return path


@pytest.fixture
def pinned(tmp_path) -> str:
    """A position table added to a sequence the input declares dynamic: runs only at seq = 8."""
    pos = nh.from_array(np.linspace(0, 1, 32, dtype=np.float32).reshape(1, 8, 4), "pos")
    return _save(tmp_path, "pinned.onnx", [h.make_node("Add", ["x", "pos"], ["y"], name="add_pos")],
                 [h.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", 4])],
                 [h.make_tensor_value_info("y", T.FLOAT, ["batch", "seq", 4])], [pos])


@pytest.fixture
def healthy(tmp_path) -> str:
    """A token embedding and a MatMul: runs at any batch and sequence."""
    table = nh.from_array(np.arange(40, dtype=np.float32).reshape(10, 4) / 40, "table")
    w = nh.from_array(np.eye(4, dtype=np.float32), "w")
    return _save(tmp_path, "healthy.onnx",
                 [h.make_node("Gather", ["table", "input_ids"], ["e"], name="embed"),
                  h.make_node("MatMul", ["e", "w"], ["y"], name="proj")],
                 [h.make_tensor_value_info("input_ids", T.INT64, ["batch", "sequence"])],
                 [h.make_tensor_value_info("y", T.FLOAT, ["batch", "sequence", 4])], [table, w])


def _by_target(report) -> dict[str, list]:
    out: dict[str, list] = {}
    for res in report.run.results:
        out[res.target.name] = res
    return out


@pytest.fixture
def pinned_unnamed(tmp_path) -> str:
    """The same, with the dims left unnamed (as exporters do when not told): whether other sizes are
    meant is unknown from the file, so the static finding is a warning even with sizes given."""
    pos = nh.from_array(np.linspace(0, 1, 32, dtype=np.float32).reshape(1, 8, 4), "pos")
    return _save(tmp_path, "unnamed.onnx", [h.make_node("Add", ["x", "pos"], ["y"], name="add_pos")],
                 [h.make_tensor_value_info("x", T.FLOAT, [None, None, 4])],
                 [h.make_tensor_value_info("y", T.FLOAT, [None, None, 4])], [pos])


SHAPES = ["x:1x8x4,1x8x4,2x16x4"]


def test_failure_at_a_given_size_confirms_an_unknown_premise_as_an_error(pinned_unnamed):
    static = graphlint.check(pinned_unnamed, BOTH, shapes=SHAPES)
    assert {f.severity.label for f in static.findings if f.rule_id == "GL3003"} == {"warning"}
    rep = graphlint.check(pinned_unnamed, BOTH, shapes=SHAPES, confirm=True)
    for name, res in _by_target(rep).items():
        pin = next(f for f in res.findings if f.rule_id == "GL3003")
        assert pin.severity.label == "error", name
        assert "unknown" not in pin.properties
        conf = pin.properties["confirm"]
        assert conf["verdict"] == "confirmed" and conf["point"] == "--shapes max"
        assert conf["shapes"] == {"x": [2, 16, 4]}
        assert pin.properties["basis"].startswith("engine-run:")
        # the engine's own words: ORT names the node, OpenVINO's CPU plugin the node's output
        assert ("add_pos" if name == "ort" else "'y'") in conf["message"]
        # the corners, and the size GL3007 says the model breaks at inside them (run to settle that claim)
        assert [(p["label"], p["ok"]) for p in res.confirm["points"]] == [
            ("--shapes min", True), ("--shapes max", False), ("where GL3007 says it breaks", False)]
        assert not any(f.rule_id == "GL9101" for f in res.findings)  # predicted, so not reported twice
        profile = next(f for f in res.findings if f.rule_id == "GL3007")
        assert profile.severity.label == "error" and profile.properties["confirm"]["verdict"] == "confirmed"


def test_a_static_error_gets_the_runs_evidence(pinned):
    rep = graphlint.check(pinned, BOTH, shapes=SHAPES, confirm=True)
    for res in rep.run.results:
        pin = next(f for f in res.findings if f.rule_id == "GL3003")
        assert pin.severity.label == "error" and pin.properties["basis"].startswith("document:")
        assert pin.properties["confirm"]["verdict"] == "confirmed"
        assert "Confirmed:" in pin.message


def test_failure_only_at_a_sample_size_stays_a_warning(pinned):
    rep = graphlint.check(pinned, BOTH, confirm=True)
    for res in rep.run.results:
        pin = next(f for f in res.findings if f.rule_id == "GL3003")
        assert pin.severity.label == "warning"
        assert pin.properties["confirm"]["point"] == "sample x2"
        assert "Confirmed:" in pin.message and "--shapes" in pin.message
    assert rep.ok


def test_runs_that_work_clear_unknown_premises_and_stay_silent(healthy, pinned):
    rep = graphlint.check(healthy, BOTH, confirm=True)
    assert rep.ok and not [f for f in rep.findings if f.severity.label != "info"]
    for res in rep.run.results:
        assert res.confirm["engine"] in ("onnxruntime", "openvino")
        assert [p["label"] for p in res.confirm["points"]] == ["sample", "sample x2"]
        assert all(p["ok"] for p in res.confirm["points"])
    # the pin's premise (which sizes are fed) is settled by the export's size alone: cleared
    rep = graphlint.check(pinned, BOTH, shapes=["x:1x8x4"], confirm=True)
    for res in rep.run.results:
        pin = [f for f in res.findings if f.rule_id == "GL3003"]
        assert all(f.severity.label == "info" or "confirm" not in f.properties for f in pin)


def test_unpredicted_failure_is_a_runtime_finding_with_the_engines_message(pinned):
    # without the shape rules nothing predicts the failure: GL9101 reports it, on the node
    rep = graphlint.check(pinned, BOTH, ignore=["GL3"], shapes=SHAPES, confirm=True)
    for res in rep.run.results:
        (f,) = [f for f in res.findings if f.rule_id == "GL9101"]
        assert f.severity.label == "error"
        assert f.node == "add_pos"
        assert f.properties["confirm"]["point"] == "--shapes max"
        assert "2x16x4" in f.message


def test_openvino_with_one_thread_returns_an_empty_tensor_where_the_default_raises(pinned, tmp_path):
    cfg = tmp_path / "graphlint.toml"
    cfg.write_text('[confirm]\n[confirm.openvino]\nINFERENCE_NUM_THREADS = 1\n')
    rep = graphlint.check(pinned, BOTH, ignore=["GL3"], shapes=SHAPES, config=str(cfg),
                          confirm=True)
    ov = _by_target(rep)["openvino"]
    (f,) = [f for f in ov.findings if f.rule_id == "GL9102"]
    got = f.properties["confirm"]["got"]
    assert f.severity.label == "error" and got != [2, 16, 4] and "declares [2, 16, 4]" in f.message
    assert all(p["ok"] for p in ov.confirm["points"])  # no error raised: only the shape shows it
    ort = _by_target(rep)["ort"]
    assert any(f.rule_id == "GL9101" for f in ort.findings)


def test_engines_disagreeing_is_bisected_and_the_reference_names_the_wrong_engine(tmp_path):
    """OpenVINO 2026.4 ignores Resize's antialias (rules/data/engine_drift.toml): the run confirms
    GL2010 for openvino only, since onnx.reference agrees with ONNX Runtime on that node."""
    scales = nh.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "scales")
    relu = h.make_node("Relu", ["x"], ["r"], name="relu")
    resize = h.make_node("Resize", ["r", "", "scales"], ["z"], name="down", mode="linear", antialias=1)
    tail = h.make_node("Mul", ["z", "z"], ["y"], name="square")
    path = _save(tmp_path, "aa.onnx", [relu, resize, tail], [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 16, 16])],
                 [h.make_tensor_value_info("y", T.FLOAT, [1, 3, 8, 8])], [scales], opset=18)
    rep = graphlint.check(path, BOTH, confirm=True)
    by = _by_target(rep)
    drift = [f for f in by["openvino"].findings if f.rule_id == "GL2010"]
    assert drift and drift[0].severity.label == "error" and drift[0].node == "down"
    assert drift[0].properties["confirm"]["against"] == "onnxruntime"
    assert not [f for f in by["ort"].findings if f.severity.label == "error"]


def test_pytorch_reference_for_an_onnx_program(tmp_path):
    torch = pytest.importorskip("torch")

    class Down(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True)

    program = torch.onnx.export(Down().eval(), (torch.randn(1, 3, 16, 16),), dynamo=True)
    rep = graphlint.check(program, BOTH, confirm=True)
    by = _by_target(rep)
    ref = [f for f in by["openvino"].findings if f.rule_id == "GL9103"]
    assert ref and "PyTorch reference" in ref[0].message and ref[0].severity.label == "error"
    assert not [f for f in by["ort"].findings if f.rule_id == "GL9103"]  # ONNX Runtime matches torch


def test_time_budget_stops_the_engine_and_says_so(healthy, tmp_path):
    cfg = tmp_path / "graphlint.toml"
    cfg.write_text("[confirm]\nbudget = 0.05\n")
    rep = graphlint.check(healthy, ["ort"], config=str(cfg), confirm=True)
    (res,) = rep.run.results
    text = json.dumps(res.confirm)
    assert "time budget" in text
    assert not rep.errors  # a run that did not finish proves nothing


def test_model_too_large_for_the_machine_is_skipped_with_a_note(healthy, monkeypatch):
    monkeypatch.setattr(execute, "available_memory", lambda: 1 << 20)
    rep = graphlint.check(healthy, ["ort"], confirm=True)
    (res,) = rep.run.results
    assert "GiB available" in res.confirm["skipped"]
    assert "not run" in rep.to_text()


def test_engine_version_other_than_the_target_is_not_confirmed(healthy):
    rep = graphlint.check(healthy, ["ort@1.20"], confirm=True)
    (res,) = rep.run.results
    assert "not the target's 1.20" in res.confirm["skipped"]


def test_external_data_outside_the_folder_is_never_handed_to_an_engine(tmp_path):
    inner = tmp_path / "model"
    inner.mkdir()
    w = nh.from_array(np.ones((4, 4), np.float32), "w")
    w.data_location = T.EXTERNAL
    del w.external_data[:]
    w.external_data.add(key="location", value="../outside.bin")
    w.ClearField("raw_data")
    (tmp_path / "outside.bin").write_bytes(np.ones((4, 4), np.float32).tobytes())
    path = _save(inner, "m.onnx", [h.make_node("MatMul", ["x", "w"], ["y"])],
                 [h.make_tensor_value_info("x", T.FLOAT, [1, 4])], [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
                 [w])
    for ignore in ((), ("GL0005",)):  # the guard reads the model, not a finding the user may ignore
        rep = graphlint.check(path, ["ort"], ignore=ignore, confirm=True)
        (res,) = rep.run.results
        assert "outside the model folder" in res.confirm["skipped"] and "no engine is given it" in res.confirm["skipped"]


def test_cli_confirm_json_and_bad_config(pinned, cli, tmp_path):
    r = cli(pinned, "--target", "ort", "--confirm", "--shapes", "x:1x8x4,1x8x4,2x16x4", "-f", "json")
    assert r.code == 1, r.err
    (model,) = r.json()["models"]
    assert model["confirm"]["engine"] == "onnxruntime" and len(model["confirm"]["points"]) == 3
    assert "Traceback" not in r.err
    bad = tmp_path / "graphlint.toml"
    bad.write_text("[confirm]\nbudgett = 3\n")
    r = cli(pinned, "--confirm", "--config", str(bad))
    assert r.code == 2 and "did you mean 'budget'" in r.err and len(r.err.strip().splitlines()) == 1
    r = cli(pinned, "--target", "ort")  # without --confirm nothing runs
    assert "confirm:" not in r.out


def test_feeds_keep_the_input_contracts(tmp_path):
    """Token ids below the table, masks of ones, positions counting on from the past, a KV cache as
    long as the past, and a mask spanning past + new."""
    from graphlint.confirm.plan import make_plan
    from graphlint.load import load_model

    table = nh.from_array(np.zeros((7, 4), np.float32), "table")
    nodes = [h.make_node("Gather", ["table", "input_ids"], ["e"]),
             h.make_node("Identity", ["attention_mask"], ["m"]),
             h.make_node("Identity", ["position_ids"], ["p"]),
             h.make_node("Identity", ["past_key_values.0.key"], ["k"])]
    ins = [h.make_tensor_value_info("input_ids", T.INT64, ["batch", "sequence_length"]),
           h.make_tensor_value_info("attention_mask", T.INT64, ["batch", "total_sequence_length"]),
           h.make_tensor_value_info("position_ids", T.INT64, ["batch", "sequence_length"]),
           h.make_tensor_value_info("past_key_values.0.key", T.FLOAT, ["batch", 2, "past_sequence_length", 4])]
    outs = [h.make_tensor_value_info(n, T.FLOAT if n in "ek" else T.INT64, None) for n in "empk"]
    model = load_model(_save(tmp_path, "kv.onnx", nodes, ins, outs, [table]))
    plan = make_plan(model, lambda v: None, {}, [], None)
    point = plan.points[0]
    feeds = plan.feeds(point)
    assert plan.inputs["input_ids"].kind == "ids" and feeds["input_ids"].max() < 7
    past = point.past
    assert past > 0 and feeds["past_key_values.0.key"].shape[2] == past
    seq = feeds["input_ids"].shape[1]
    assert feeds["attention_mask"].shape[1] == past + seq and set(np.unique(feeds["attention_mask"])) <= {0, 1}
    assert feeds["position_ids"][0].tolist() == list(range(past, past + seq))


def test_no_engine_process_outlives_the_run(healthy):
    before = set(os.listdir("/proc")) if os.path.isdir("/proc") else set()
    graphlint.check(healthy, BOTH, confirm=True)
    after = set(os.listdir("/proc")) if os.path.isdir("/proc") else set()
    leftover = [p for p in after - before if p.isdigit() and _is_child(p)]
    assert not leftover


def _is_child(pid: str) -> bool:
    """An engine child of this process (other processes on the machine may run their own)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            mine = b"graphlint.runners.child" in f.read()
        with open(f"/proc/{pid}/stat") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return mine and ppid == os.getpid()


def test_every_error_under_confirm_has_a_basis_of_the_contract(pinned_unnamed, tmp_path):
    from graphlint_rules._contract import BASIS_KINDS

    rep = graphlint.check(pinned_unnamed, BOTH, shapes=SHAPES, ignore=["GL3007"], confirm=True)
    assert rep.errors
    for f in rep.errors:
        assert f.properties.get("basis", "").split(":")[0] in BASIS_KINDS, f


def test_a_static_break_is_run_at_the_size_it_names(tmp_path):
    """GL3007's shape walk says a Reshape of [batch, seq, 6] to [-1, 4] breaks where 6 * seq is no multiple
    of 4. Between the profile's corners that is a size nobody said is fed (a warning on ONNX Runtime); at a
    corner it is a given size (an error). --confirm runs the size the finding names, and the engine agrees."""
    shape = nh.from_array(np.array([-1, 4], np.int64), "shape")
    path = _save(tmp_path, "reshape.onnx", [h.make_node("Reshape", ["x", "shape"], ["y"], name="flat")],
                 [h.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", 6])],
                 [h.make_tensor_value_info("y", T.FLOAT, [None, 4])], [shape])
    for corners, severity in (("x:1x2x6,1x2x6,1x4x6", "warning"), ("x:1x2x6,1x2x6,1x3x6", "error")):
        rep = graphlint.check(path, ["ort"], shapes=[corners], confirm=True)
        (res,) = rep.run.results
        (f,) = [f for f in res.findings if f.rule_id == "GL3007"]
        assert f.properties["fails_at"] == {"x": [1, 3, 6]}
        assert f.severity.label == severity, corners
        run = next(p for p in res.confirm["points"] if p["shapes"] == {"x": [1, 3, 6]})
        assert not run["ok"] and f.properties["confirm"]["verdict"] == "confirmed"
