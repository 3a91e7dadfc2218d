"""Several models in one run, each linted in a worker process (graphlint.workers).

The run must be what one process gives: same findings, failures and order, whatever order
the workers finish in; a worker that dies has its model linted again in-process; a worker
stuck past the time budget is stopped by the parent.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import time

import pytest
from fork_support import rerun_unthreaded

from graphlint import procs, workers
from graphlint.lint import LintOptions, budget_outcome, lint_one, lint_paths, selected_rules
from graphlint.report import render
from graphlint.rule import Rule, Severity
from graphlint.target import resolve
from testmodels import build_core
from testmodels.common import cached

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="workers need os.fork")
HERE = os.getpid()  # rules below tell a worker by its process id


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> list[str]:
    """Real exports (both torch exporters, OpenVINO IR), an unreadable file and a missing one,
    in an order unlike the workers' (largest file first)."""
    core = cached("core", build_core.build)
    folder = tmp_path_factory.mktemp("models")
    bad = folder / "bad.onnx"
    bad.write_bytes(b"not a protobuf at all")
    out = [str(bad), os.path.join(core, "convnet_opset17.onnx"), str(folder / "missing.onnx"),
           os.path.join(core, "convnet.xml"), os.path.join(core, "convnet_dynamo.onnx")]
    copy = folder / "convnet_copy.onnx"
    shutil.copy(out[1], copy)
    return [*out, str(copy)]


def _each(paths: list[str], rules: list, opts: LintOptions) -> list:
    """workers.lint_each as lint_paths calls it, with these rules for the trt target."""
    lint = functools.partial(lint_one, explicit=[resolve("trt")], rules=rules, opts=opts)
    return workers.lint_each(paths, functools.partial(workers.lint_detached, lint),
                             functools.partial(budget_outcome, seconds=opts.time_budget),
                             jobs=opts.jobs, time_budget=opts.time_budget, on_model=None, died=lint)


def _report(run) -> str:
    return render(run, "json")


def test_workers_give_the_one_process_run(paths, request):
    if rerun_unthreaded(request):
        return
    serial = lint_paths(paths, LintOptions(targets=["trt", "ort", "openvino"]))
    parallel = lint_paths(paths, LintOptions(targets=["trt", "ort", "openvino"], jobs=2))
    assert parallel.failures and [f.path for f in parallel.failures] == [f.path for f in serial.failures]
    assert _report(parallel) == _report(serial)
    assert [r.model.path for r in parallel.results] == [r.model.path for r in serial.results]
    # what came back is each model's header, shared by its targets' results, not its IR
    first = parallel.results[0]
    assert first.model.graph.nodes == [] and serial.results[0].model.graph.nodes
    assert first.model.opset_imports == serial.results[0].model.opset_imports
    assert len({id(r.model) for r in parallel.results}) == len({r.model.path for r in parallel.results})


class _DiesInWorkers(Rule):
    """Kills the process it runs in when that is a worker (a crash the run must survive)."""

    id = "GL9901"
    name = "dies-in-workers"
    severity = Severity.INFO

    def check(self, ctx):
        if os.getpid() != HERE:
            os.kill(os.getpid(), signal.SIGKILL)
        yield ctx.finding(None, f"linted in process {os.getpid()}")


def test_a_worker_that_dies_has_its_model_linted_here(paths, request):
    if rerun_unthreaded(request):
        return
    good = [p for p in paths if p.endswith("convnet_opset17.onnx") or p.endswith("convnet_copy.onnx")]
    rules = [*selected_rules(LintOptions(select=["GL2"])), _DiesInWorkers]
    opts = LintOptions(jobs=2)
    outcomes = _each(good, rules, opts)
    assert [failure for _, failure in outcomes] == [None, None]
    for (results,), path in zip((o[0] for o in outcomes), good, strict=True):
        assert results.model.path == path and results.model.graph.nodes  # linted in this process: IR kept
        mine = [f for f in results.findings if f.rule_id == "GL9901"]
        assert [f.message for f in mine] == [f"linted in process {os.getpid()}"]


class _Stuck(Rule):
    """Blocks the time budget's alarm and sleeps: a C++ call the worker's own timer cannot stop."""

    id = "GL9902"
    name = "stuck"
    severity = Severity.INFO

    def check(self, ctx):
        if os.getpid() != HERE and ctx.model.path.endswith("convnet_copy.onnx"):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(60)
        return []


def test_the_parent_stops_a_worker_stuck_past_the_budget(paths, request, monkeypatch):
    if rerun_unthreaded(request):
        return
    monkeypatch.setattr(workers, "BUDGET_MARGIN", 0.5)
    good = [p for p in paths if p.endswith("convnet_opset17.onnx") or p.endswith("convnet_copy.onnx")]
    t0 = time.monotonic()
    outcomes = _each(good, [_Stuck], LintOptions(jobs=2, time_budget=1.0))
    assert time.monotonic() - t0 < 30
    (ok, none), (nothing, failure) = outcomes
    assert none is None and ok and ok[0].model.path == good[0]
    assert nothing == [] and failure.path == good[1] and "time budget of 1 s" in failure.message
    assert not procs._LIVE  # the stuck worker was killed and reaped


def _live_children() -> int:
    return len(procs._LIVE)


def test_a_child_owns_none_of_its_siblings(request):
    """A worker whose time budget runs out stops its own children (cancel_all): never the
    parent's other workers, which it inherits the records of when forked."""
    if rerun_unthreaded(request):
        return
    sibling = procs.Child(worker=True)
    sibling.submit(time.sleep, 30)
    try:
        child = procs.Child(worker=True)
        assert child.submit(_live_children).result() == 0
        child.close()
        assert sibling in procs._LIVE
    finally:
        sibling.cancel()


def test_cli_jobs_one_and_default_write_the_same_report(paths, cli, tmp_path):
    readable = [p for p in paths if "missing" not in p and "bad" not in p]
    one = cli("check", *readable, "-t", "trt", "-f", "sarif", "-j", "1", "-o", str(tmp_path / "one.sarif"))
    many = cli("check", *readable, "-t", "trt", "-f", "sarif", "-o", str(tmp_path / "many.sarif"))
    assert one.code == many.code
    assert (tmp_path / "one.sarif").read_text() == (tmp_path / "many.sarif").read_text()


class _Pid(Rule):
    """Says which process linted the model."""

    id = "GL9903"
    name = "pid"
    severity = Severity.INFO

    def check(self, ctx):
        yield ctx.finding(None, f"pid {os.getpid()}")


def test_workers_take_options_that_cannot_be_pickled(paths, request):
    """The configuration's per-model hook is a closure: the workers inherit the job instead of
    receiving it pickled, so the models are really linted there."""
    if rerun_unthreaded(request):
        return
    good = [p for p in paths if p.endswith("convnet_opset17.onnx") or p.endswith("convnet_copy.onnx")]
    seen: list[str] = []
    opts = LintOptions(jobs=2, per_model=lambda path, target: (seen.append(path) or target, {}))
    outcomes = _each(good, [_Pid], opts)
    pids = [f.message for results, _ in outcomes for r in results for f in r.findings]
    assert len(set(pids)) == 2 and f"pid {os.getpid()}" not in pids
    assert seen == []  # the hook ran in the workers, not here


_CTRL_C_DURING_FORK = """
import os, signal, sys, time
from graphlint import procs
# a Ctrl-C that lands while os.fork runs its callbacks in the parent (logging's lock release)
os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGINT))
child = procs.Child(worker=True)
try:
    child.submit(time.sleep, 30)
    time.sleep(1)
    print("lost")
except KeyboardInterrupt:
    print("raised", child._process.is_alive(), signal.getsignal(signal.SIGINT) is signal.default_int_handler)
"""


def test_a_ctrl_c_during_a_fork_is_not_lost():
    """Python prints and drops a KeyboardInterrupt raised in an at-fork callback: a Ctrl-C landing
    there let `graphlint scan` run on to the end (CI caught it). It is held over the fork, then
    raised, the new child stopped, and Ctrl-C handled as before."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _CTRL_C_DURING_FORK], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["raised", "False", "True"], (proc.stdout, proc.stderr[-1500:])
