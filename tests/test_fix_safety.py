"""graphlint fix never writes what it has not verified, and never leaves a clobbered or partial file."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import helper

from graphlint.fix.base import Pass, PassResult
from testmodels.fix_models import model
from tests.conftest import ROOT, run_cli
from tests.fixhelp import ops, ort_outputs, run_fix, steps


class NegateFirstOutput(Pass):
    """Deliberately broken: claims to keep results but negates the first graph output."""

    name = "negate-output"
    after = ("unfuse-contrib",)

    def apply(self, model, requests, ctx):
        g = model.graph
        out = g.output[0].name
        inner = out + "/before_neg"
        for n in g.node:
            for k, o in enumerate(n.output):
                if o == out:
                    n.output[k] = inner
            for k, i in enumerate(n.input):
                if i == out:
                    n.input[k] = inner
        g.node.append(helper.make_node("Neg", [inner], [out], name="sneaky_neg"))
        return PassResult(model, True, ["negated the first output (a bug)"])


class Crashes(Pass):
    name = "crashing-pass"

    def apply(self, model, requests, ctx):
        raise RuntimeError("boom")


def _sha(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture(scope="module")
def bert() -> str:
    return model("bert_fused")


def test_broken_pass_is_bisected_refused_named_and_not_written(bert, tmp_path):
    out = str(tmp_path / "out.onnx")
    rep = run_fix(bert, out, rewrites=["unfuse-contrib", "negate-output", "remove-dead-nodes", "crashing-pass"],
                  extra_passes={"negate-output": NegateFirstOutput(), "crashing-pass": Crashes()})
    st = steps(rep)
    # Ordered unfuse -> negate -> remove-dead: the broken pass sits mid-batch and bisection finds it.
    assert [s.name for s in rep.outcome.steps][:3] == ["unfuse-contrib", "negate-output", "remove-dead-nodes"]
    assert st["unfuse-contrib"] == "applied"
    assert st["negate-output"] == "refused"
    assert st["crashing-pass"] == "crashed"
    refused = {s.name: s.reason for s in rep.outcome.refused}
    assert "last_hidden_state" in refused["negate-output"] and "differs" in refused["negate-output"]
    assert "boom" in refused["crashing-pass"]
    written = onnx.load(out)
    assert not any(n.op_type == "Neg" for n in written.graph.node)
    assert not any(d == "com.microsoft" for d, _ in ops(out))  # the good pass's result was kept
    feeds = {"input_ids": np.arange(10).reshape(2, 5) % 100, "attention_mask": np.ones((2, 5), np.int64),
             "token_type_ids": np.zeros((2, 5), np.int64)}
    np.testing.assert_allclose(ort_outputs(out, feeds)["last_hidden_state"],
                               ort_outputs(bert, feeds)["last_hidden_state"], rtol=1e-4, atol=1e-5)


def _script(body: str) -> str:
    return textwrap.dedent("""
        import os, sys, signal
        sys.path.insert(0, {root!r})
        import onnx
        from onnx import helper
        from graphlint.fix.base import Pass, PassResult, register_pass
    """).format(root=ROOT) + textwrap.dedent(body) + textwrap.dedent("""
        from graphlint.cli import main
        sys.argv = ["graphlint", *sys.argv[1:]]
        main()
    """)


def _run_script(body: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _script(body), *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_cli_refuses_registered_broken_pass(bert, tmp_path):
    out = str(tmp_path / "out.onnx")
    body = textwrap.dedent('''
        @register_pass
        class NegateFirstOutput(Pass):
            name = "negate-output"
            after = ("unfuse-contrib",)
            def apply(self, model, requests, ctx):
                g = model.graph
                out = g.output[0].name
                for n in g.node:
                    for k, o in enumerate(n.output):
                        if o == out:
                            n.output[k] = out + "/x"
                    for k, i in enumerate(n.input):
                        if i == out:
                            n.input[k] = out + "/x"
                g.node.append(helper.make_node("Neg", [out + "/x"], [out]))
                return PassResult(model, True, ["negate"])
    ''')
    r = _run_script(body, "fix", bert, "--rewrite", "unfuse-contrib", "--rewrite", "negate-output", "-o", out)
    assert r.returncode == 1, r.stderr
    assert "refused    negate-output: output 'last_hidden_state' differs" in r.stdout
    assert "applied    unfuse-contrib" in r.stdout
    assert not any(n.op_type == "Neg" for n in onnx.load(out).graph.node)


@pytest.mark.parametrize("how", ["raise", "kill"])
@pytest.mark.parametrize("in_place", [False, True])
def test_interrupted_write_leaves_input_untouched_and_no_partial_output(tmp_path, how, in_place):
    src = str(tmp_path / "m.onnx")
    shutil.copy(model("uint8_input"), src)
    before = _sha(src)
    out = src if in_place else str(tmp_path / "out.onnx")
    stop = ("os.kill(os.getpid(), signal.SIGKILL)" if how == "kill"
            else "raise OSError(28, 'No space left on device')")
    body = f'''
        real = onnx.save_model
        def half_then_stop(proto, f, *a, **k):
            real(proto, f, *a, **k)
            with open(f, "r+b") as fh:  # leave the temporary file half written
                fh.truncate(os.path.getsize(f) // 2)
            {stop}
        onnx.save_model = half_then_stop
    '''
    args = ["fix", src, "--rewrite", "input-cast-normalize", "--unsafe-fixes"]
    args += ["--in-place"] if in_place else ["-o", out]
    r = _run_script(textwrap.dedent(body), *args)
    if how == "kill":
        assert r.returncode == -9
    else:
        assert r.returncode == 2
        assert r.stderr.strip().splitlines()[-1].startswith("graphlint: error: cannot write")
        assert "Traceback" not in r.stderr
        assert sorted(os.listdir(tmp_path)) == ["m.onnx"]  # no temp files, no partial output
    assert _sha(src) == before
    if not in_place:
        assert not os.path.exists(out)
    onnx.checker.check_model(src, full_check=True)


def test_diff_writes_nothing_and_input_is_never_overwritten(tmp_path):
    src = str(tmp_path / "m.onnx")
    shutil.copy(model("uint8_input"), src)
    before = _sha(src)
    r = run_cli("fix", src, "--rewrite", "input-cast-normalize", "--diff")
    assert r.code == 0, r.err
    assert "applied    input-cast-normalize" in r.out and "nothing written" in r.out
    assert sorted(os.listdir(tmp_path)) == ["m.onnx"] and _sha(src) == before
    r = run_cli("fix", src, "--rewrite", "input-cast-normalize", "-o", src)
    assert r.code == 2 and "use --in-place" in r.err
    r = run_cli("fix", src, "--rewrite", "input-cast-normalize")
    assert r.code == 2 and "-o OUTPUT, --in-place or --diff" in r.err
    assert _sha(src) == before
    r = run_cli("fix", src, "--rewrite", "no-such-pass", "--diff")
    assert r.code == 2 and "no such pass" in r.err and "Traceback" not in r.err
    r = run_cli("fix", src, "--rewrite", "input-cast-normalize", "--in-place")
    assert r.code == 0 and _sha(src) != before
    assert onnx.load(src).graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT


def test_fix_twice_changes_nothing_the_second_time(bert, tmp_path):
    first = str(tmp_path / "once.onnx")
    second = str(tmp_path / "twice.onnx")
    r1 = run_fix(bert, first, rewrites=["unfuse-contrib", "remove-dead-nodes", "fold-transpose-pairs"])
    assert r1.outcome.changed
    r2 = run_fix(first, second, rewrites=["unfuse-contrib", "remove-dead-nodes", "fold-transpose-pairs"])
    assert not r2.outcome.changed
    assert set(steps(r2).values()) == {"unchanged"}
    assert onnx.load(first) == onnx.load(second)


def test_user_inputs_npz(bert, tmp_path):
    npz = str(tmp_path / "in.npz")
    mask = np.ones((1, 16), np.int64)
    mask[0, 10:] = 0
    np.savez(npz, input_ids=np.arange(16).reshape(1, 16), attention_mask=mask,
             token_type_ids=np.zeros((1, 16), np.int64))
    r = run_cli("fix", bert, "--rewrite", "unfuse-contrib", "--inputs", npz, "--diff", "-f", "json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["verified_with"] == "onnxruntime"
    assert doc["passes"][0]["status"] == "applied" and doc["max_abs_diff"]["last_hidden_state"] < 1e-4
    np.savez(npz, input_ids=np.zeros((1, 4), np.int64))
    r = run_cli("fix", bert, "--rewrite", "unfuse-contrib", "--inputs", npz, "--diff")
    assert r.code == 2 and "no array for input(s) attention_mask" in r.err


def test_original_that_no_engine_runs_is_checked_structurally_and_says_so(tmp_path):
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1], name="t1"),
             helper.make_node("Relu", ["t"], ["r"], name="relu"),
             helper.make_node("Transpose", ["r"], ["u"], perm=[0, 2, 1], name="t2"),
             helper.make_node("Foo", ["u"], ["y"], domain="acme.custom", name="foo")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 3])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("acme.custom", 1)])
    m.ir_version = 8
    src = str(tmp_path / "custom.onnx")
    onnx.save(m, src)
    out = str(tmp_path / "out.onnx")
    rep = run_fix(src, out, rewrites=["fold-transpose-pairs"], select=["GL0"])
    assert steps(rep) == {"fold-transpose-pairs": "applied"}
    assert rep.outcome.engine is None
    note = " ".join(rep.outcome.notes)
    assert "does not run in onnxruntime" in note and "acme.custom" in note
    assert "checked instead: onnx.checker full check and strict shape inference" in note
    assert [n.op_type for n in onnx.load(out).graph.node] == ["Relu", "Foo"]


def test_fix_keeps_the_weights_when_openvino_checks_the_rewrite(tmp_path):
    """The OpenVINO and large-model checks save the rewrite to a scratch file with external data;
    that save once moved the bytes out of the very model `graphlint fix` then wrote (an optimum ViT
    whose check fell back to OpenVINO was written 39 KB instead of 131 KB, its weights pointing at a
    scratch file that no longer existed). The written model must load with its weights."""
    import os

    import onnx

    from tests.conftest import run_cli

    vit = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "testmodels", "pipelines",
                       "optimum_vision", "vit", "model.onnx")
    out = tmp_path / "fixed.onnx"
    res = run_cli("fix", vit, "--target", "ort", "--select", "GL3003", "--unsafe-fixes", "-o", str(out))
    assert res.code == 0, res.err
    fixed, original = onnx.load(str(out)), onnx.load(vit)
    assert [d.dim_value for d in fixed.graph.input[0].type.tensor_type.shape.dim][2:] == [32, 32]
    weights = {t.name: t.raw_data for t in original.graph.initializer}
    assert {t.name: t.raw_data for t in fixed.graph.initializer} == weights
