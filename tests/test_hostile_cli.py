"""The command line on hostile paths and mixed batches: real processes, real exit codes, one-line errors."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import time
from collections.abc import Iterator

import pytest

from graphlint import lint
from graphlint.lint import LintOptions, lint_paths
from graphlint.rule import Finding, Rule, RuleContext, Severity
from tests.conftest import ROOT, run_cli
from tests.hostile_support import assert_input_error, lint_cli, lint_sarif, sarif_root
from tests.models import contrib_model, relu_model, save
from tests.sarif_github import check_github_sarif


def one_error_line(err: str, path: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and path in lines[0] and lines[0].startswith("graphlint: error:"), err
    assert "Traceback" not in err
    return lines[0]


def test_paths_with_spaces_and_unicode(tmp_path):
    folder = tmp_path / "my models ünïcødé 模型"
    folder.mkdir()
    good = save(relu_model(), str(folder), "relu net ✓.onnx")
    bad = folder / "cassé – broken.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    r = run_cli(good, str(bad), "--target", "ort", "--format", "sarif", "-o", str(folder / "rapport été.sarif"))
    assert r.code == 2, r.err
    one_error_line(r.err, str(bad))
    doc = json.loads((folder / "rapport été.sarif").read_text(encoding="utf-8"))
    check_github_sarif(doc, ROOT)
    uris = [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for n in doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]]
    assert len(uris) == 1 and "%20" in uris[0] and "cass%C3%A9" in uris[0]


def test_directory_instead_of_a_file(tmp_path):
    r = run_cli(str(tmp_path), "--target", "ort")
    assert r.code == 2
    assert "is a directory" in one_error_line(r.err, str(tmp_path))


def test_missing_file_and_unknown_suffix(tmp_path):
    assert_input_error(str(tmp_path / "nope.onnx"), str(tmp_path), says="no such file")
    other = tmp_path / "model.pb"
    other.write_bytes(relu_model().SerializeToString())
    assert_input_error(str(other), str(tmp_path), says="unknown model format")


def test_unreadable_file(tmp_path):
    """chmod 000 does not stop root, so as root the CLI runs without CAP_DAC_OVERRIDE (setpriv)."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    p = save(relu_model(), str(tmp_path), "locked.onnx")
    os.chmod(p, 0)
    cmd = [sys.executable, "-m", "graphlint", p, "--target", "ort"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: no way to make a file unreadable")
        cmd = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *cmd]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    finally:
        os.chmod(p, stat.S_IRUSR | stat.S_IWUSR)
    assert proc.returncode == 2, proc.stderr
    assert "permission denied" in one_error_line(proc.stderr, p)


def test_output_into_a_missing_folder_writes_nothing(tmp_path):
    p = save(contrib_model(), str(tmp_path), "c.onnx")
    before = sorted(os.listdir(tmp_path))
    r = lint_cli(p, "--format", "sarif", "-o", str(tmp_path / "no" / "such" / "dir" / "r.sarif"))
    assert r.code == 2 and r.out == ""
    assert "does not exist" in r.err and len(r.err.strip().splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == before


def test_output_onto_a_directory_is_refused(tmp_path):
    p = save(relu_model(), str(tmp_path), "r.onnx")
    (tmp_path / "out.sarif").mkdir()
    r = lint_cli(p, "--format", "sarif", "-o", str(tmp_path / "out.sarif"))
    assert r.code == 2 and "is a directory" in r.err
    assert (tmp_path / "out.sarif").is_dir() and not os.listdir(tmp_path / "out.sarif")


def test_existing_report_replaced_whole_or_not_at_all(tmp_path):
    p = save(relu_model(), str(tmp_path), "r.onnx")
    out = tmp_path / "report.json"
    out.write_text("previous report")
    r = lint_cli(p, "--format", "json", "-o", str(out), "--select", "NOPE999")  # usage error: before writing
    assert r.code == 2 and out.read_text() == "previous report"
    r = lint_cli(p, "--format", "json", "-o", str(out), "--target", "ort")
    assert r.code == 0 and json.loads(out.read_text())["models"][0]["path"] == p
    assert [f for f in os.listdir(tmp_path) if f.startswith(".")] == []


def test_several_models_one_broken(tmp_path):
    clean = save(relu_model(), str(tmp_path), "clean.onnx")
    findings = save(contrib_model(), str(tmp_path), "contrib.onnx")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(relu_model().SerializeToString()[:25])
    r = lint_sarif([clean, str(broken), findings], str(tmp_path), "--target", "trt")
    assert r.code == 2  # the failure wins over the findings (1) and the clean model (0)
    one_error_line(r.err, str(broken))
    run = r.sarif["runs"][0]
    files = {x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1]
             for x in run["results"]}
    assert {"contrib.onnx", "broken.onnx"} <= files  # the others were still linted
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "error" and "broken.onnx" in note["locations"][0]["physicalLocation"][
        "artifactLocation"]["uri"]
    j = lint_cli(clean, str(broken), findings, "--target", "trt", "--format", "json")
    doc = json.loads(j.out)
    assert [m["path"] for m in doc["models"]] == [clean, findings]
    assert [f["path"] for f in doc["failures"]] == [str(broken)]


def test_every_output_format_on_a_broken_model(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff" * 64)
    for fmt in ("text", "json", "github", "sarif"):
        r = lint_cli(str(bad), "--format", fmt)
        assert r.code == 2, fmt
        one_error_line(r.err, str(bad))
        if fmt == "sarif":
            check_github_sarif(json.loads(r.out), sarif_root(()))
    r = lint_cli(str(bad), "--format", "github")
    assert "::error" in r.out and "bad.onnx" in r.out


def test_debug_flag_keeps_input_errors_to_one_line(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"")
    r = run_cli(str(bad), "--debug")
    assert r.code == 2
    one_error_line(r.err, str(bad))


# --- the per-model time budget -----------------------------------------------------------------

class Runaway(Rule):
    """A third-party rule that never finishes and swallows every Exception on the way.

    ## What it checks
    Nothing: it spins.

    ## Why it matters
    It stands for a pathological graph or a buggy rule pack.

    ## Example
    Any model.

    ## Fix
    None.
    """

    id = "GLX999"
    name = "runaway"
    severity = Severity.ERROR
    pack = "hostile-test"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        while True:
            with contextlib.suppress(Exception):  # cannot swallow the BaseException the budget raises
                time.sleep(0.01)
        yield from ()


def test_time_budget_stops_a_runaway_and_goes_on(tmp_path, monkeypatch):
    a = save(relu_model(), str(tmp_path), "a.onnx")
    b = save(relu_model(), str(tmp_path), "b.onnx")
    monkeypatch.setattr(lint, "selected_rules", lambda opts: [Runaway])
    run = lint_paths([a, b], LintOptions(targets=["ort"], time_budget=0.5))
    assert [f.path for f in run.failures] == [a, b]  # each model got its own budget
    assert all("time budget of 0.5 s" in f.message for f in run.failures)
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no alarm left armed
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, signal.SIG_IGN, None)


def test_time_budget_option_on_the_command_line(tmp_path):
    p = save(relu_model(), str(tmp_path), "r.onnx")
    r = run_cli(p, "--target", "ort", "--time-budget", "0.000001")
    assert r.code == 2 and "time budget" in one_error_line(r.err, p)
    assert run_cli(p, "--target", "ort", "--time-budget", "0").code == 0  # 0 = no limit
    bad = run_cli(p, "--time-budget", "-3")
    assert bad.code == 2 and "Traceback" not in bad.err


def test_stat_only_checks_never_open_special_files(tmp_path):
    fifo = tmp_path / "pipe.xml"
    os.mkfifo(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    r = lint_cli(str(fifo))  # would block forever if it were opened
    assert r.code == 2 and "not a regular file" in r.err


def test_fix_on_hostile_inputs_never_touches_them(tmp_path):
    """`fix` on unreadable or hostile models: exit 2 (or 1), input bytes unchanged, no output, no temp files."""
    import hashlib

    from tests.test_hostile_external import ext_model

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.bin").write_bytes(b"\0" * 64)
    data = relu_model().SerializeToString()
    cases = {}
    for name, blob in (("empty", b""), ("random", os.urandom(300)), ("truncated", data[: len(data) // 2])):
        (tmp_path / f"{name}.onnx").write_bytes(blob)
        cases[name] = str(tmp_path / f"{name}.onnx")
    cases["escape"] = ext_model(str(tmp_path / "esc"), "../outside/secret.bin")
    for name, path in cases.items():
        with open(path, "rb") as f:
            before = hashlib.sha256(f.read()).hexdigest()
        listing = sorted(os.listdir(os.path.dirname(path)))
        for args in (["--in-place"], ["-o", os.path.join(os.path.dirname(path), "fixed.onnx")]):
            r = lint_cli("fix", path, "--target", "ort", *args)
            assert r.code in (1, 2), (name, args, r.code, r.err)
            assert "Traceback" not in r.err and "internal error" not in r.err, r.err
            if r.code == 2:
                assert len(r.err.strip().splitlines()) == 1 and path in r.err, r.err
            with open(path, "rb") as f:
                assert hashlib.sha256(f.read()).hexdigest() == before, (name, args)
            assert sorted(os.listdir(os.path.dirname(path))) == listing, (name, args)


def _children() -> list[int]:
    me = str(os.getpid())
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me:  # field 4 of stat: the parent pid
                kids.append(int(entry))
    return kids


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to list child processes")
def test_time_budget_leaves_no_inference_child_running(tmp_path):
    """Big models infer shapes in a forked child; running out of budget must kill and reap it."""
    from onnx import TensorProto as T
    from onnx import helper as h

    n = 6000
    nodes = [h.make_node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"r{i}") for i in range(n)]
    g = h.make_graph(nodes, "chain", [h.make_tensor_value_info("v0", T.FLOAT, [1, 4])],
                     [h.make_tensor_value_info(f"v{n}", T.FLOAT, [1, 4])])
    p = save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(tmp_path), "chain.onnx")
    before = set(_children())
    for budget in (0.05, 0.15, 0.3, 0.6):
        run = lint_paths([p], LintOptions(targets=["ort"], time_budget=budget))
        if run.failures:
            assert "time budget" in run.failures[0].message
        assert set(_children()) <= before, budget
