"""Run a plan on engines, each in a child process of its own, within a time budget and the memory
the machine has.

The child (graphlint.runners.child) is a fresh interpreter, not a fork: an engine's threads and
allocator start clean, and a crash or a kill takes nothing of the linter with it. Before it starts,
the model's weights are compared with the memory available: engines hold their own copy of every
weight (ONNX Runtime also a prepacked one), so a model whose weights times ``MEMORY_FACTOR`` exceed
what the kernel reports available is skipped with a note instead of risking an out-of-memory kill.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphlint.confirm.engines import Engine
from graphlint.confirm.plan import Plan, Point

MEMORY_FACTOR = 3.0  # peak RSS of a session over its weight bytes (ORT prepacks; OpenVINO compiles a copy)
MEMORY_BASE = 512 << 20  # the interpreter, the engine's libraries, activations of small models


@dataclass(eq=False)
class RunRecord:
    point: Point
    ok: bool
    error: str = ""
    node: str | None = None
    outputs: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)  # name -> (shape, dtype)
    values: dict[str, np.ndarray] | None = None  # saved outputs (for comparison)
    seconds: float = 0.0


@dataclass(eq=False)
class EngineRun:
    """What one engine did with one model."""

    engine: Engine
    targets: list[str]  # target specs this engine settles
    load_error: str = ""
    load_node: str | None = None
    runs: list[RunRecord] = field(default_factory=list)
    crashed: str = ""  # the engine process died (signal, exit code) or was stopped at the time budget
    stopped: bool = False  # stopped at the time budget or killed from outside: says nothing of the model
    skipped: str = ""  # not run at all, and why
    precision: str | None = None
    seconds: float = 0.0

    @property
    def loaded(self) -> bool:
        return not (self.load_error or self.skipped or (self.crashed and not self.runs))


def weight_bytes(path: str) -> int:
    """Bytes of the model file and the weight files beside it that it may read."""
    total = 0
    folder = os.path.dirname(os.path.abspath(path))
    try:
        total += os.path.getsize(path)
        if path.lower().endswith(".xml"):
            total += os.path.getsize(os.path.splitext(path)[0] + ".bin")
    except OSError:
        pass
    stem = os.path.basename(path)
    try:
        for e in os.scandir(folder):
            if e.is_file() and e.name != stem and e.name.startswith(os.path.splitext(stem)[0]) \
                    and e.name.endswith((".data", ".onnx_data", ".onnx.data", ".weights")):
                total += e.stat().st_size
    except OSError:
        pass
    return total


def available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def memory_problem(paths: list[str]) -> str:
    """Why the models of ``paths`` (one model, or a pipeline's stages loaded in one process) must not be
    loaded here: their weights need more memory than the kernel reports available. Empty when they fit."""
    need = int(sum(weight_bytes(p) for p in paths) * MEMORY_FACTOR) + MEMORY_BASE
    have = available_memory()
    if have is not None and need > have:
        return (f"needs about {need / 2**30:.1f} GiB to run (weights x {MEMORY_FACTOR:g}), "
                f"{have / 2**30:.1f} GiB available")
    return ""


@dataclass
class ChildEnd:
    """How an engine child ended: what it wrote, and whether it died or was stopped."""

    result: dict[str, Any]  # its result file ({} when it wrote none)
    seconds: float
    crashed: str = ""  # killed by a signal, a non-zero exit, or the time budget
    stopped: bool = False  # stopped at the time budget or killed from outside: says nothing of the model


def run_child(module: str, job: dict[str, Any], job_path: str, budget: float) -> ChildEnd:
    """Write ``job`` to ``job_path``, run ``python -m module job_path`` (a fresh interpreter in a session of
    its own), kill it at ``budget`` seconds (0: none) or when this process is interrupted, read its result."""
    with open(job_path, "w") as f:
        json.dump(job, f)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", module, job_path],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    crashed, stopped = "", False
    try:
        _, err = proc.communicate(timeout=budget if budget > 0 else None)
    except subprocess.TimeoutExpired:
        _kill(proc)
        err = b""
        crashed, stopped = f"stopped at the time budget of {budget:g} s", True
    except BaseException:  # the model's own budget, Ctrl-C: no engine process outlives the linter
        _kill(proc)
        raise
    seconds = time.perf_counter() - t0
    if proc.returncode and not crashed:
        crashed = _death(proc.returncode, err)
        # SIGKILL comes from outside (the kernel's out-of-memory killer, an operator), not the engine
        stopped = proc.returncode == -signal.SIGKILL
    return ChildEnd(_read(job["result"]), seconds, crashed, stopped)


def run_engine(path: str, engine: Engine, targets: list[str], plan: Plan, feeds_dir: str, budget: float,
               config: dict[str, Any], outputs: list[str] | None = None,
               profile: dict[str, list[list[int]]] | None = None) -> EngineRun:
    """Load ``path`` on ``engine`` in a child and run it at every point of ``plan`` (its feeds already
    written to ``feeds_dir`` by :func:`write_feeds`); ``outputs``: intermediate values to return too;
    ``profile``: TensorRT's optimization profile (default: the one ``plan``'s points imply)."""
    if profile is None and engine.runner == "tensorrt":
        profile = profile_for(plan)
    er = EngineRun(engine, targets)
    problem = memory_problem([path])
    if problem:
        er.skipped = problem
        return er
    with tempfile.TemporaryDirectory(prefix="graphlint-confirm-") as work:
        job = {
            "engine": engine.runner, "path": os.path.abspath(path), "config": config, "outputs": outputs or [],
            "profile": profile or {}, "result": os.path.join(work, "result.json"),
            "runs": [{"feeds": os.path.join(feeds_dir, f"point{i}.npz"), "save": os.path.join(work, f"out{i}.npz")}
                     for i in range(len(plan.points))],
        }
        end = run_child("graphlint.runners.child", job, os.path.join(work, "job.json"), budget)
        er.seconds, er.crashed, er.stopped, result = end.seconds, end.crashed, end.stopped, end.result
        if not result:
            er.skipped = er.crashed or "the engine process wrote nothing"
            return er
        load = result.get("load") or {}
        if load and not load.get("ok"):
            er.load_error, er.load_node = load.get("error", ""), load.get("node")
        elif not load and er.crashed and not er.stopped:
            er.load_error = f"the engine process died while loading the model: {er.crashed}"
        er.precision = result.get("precision")
        for i, rec in enumerate(result.get("runs", [])):
            values = None
            saved = rec.get("saved")
            if saved and os.path.exists(job["runs"][i]["save"]):
                with np.load(job["runs"][i]["save"], allow_pickle=False) as z:
                    values = {name: z[f"o{j}"] for j, name in enumerate(saved)}
            er.runs.append(RunRecord(plan.points[i], rec["ok"], rec.get("error", ""), rec.get("node"),
                                     {k: (tuple(s), d) for k, (s, d) in rec.get("outputs", {}).items()},
                                     values, rec.get("seconds", 0.0)))
        step = result.get("step")
        if er.crashed and not er.stopped and step and step.startswith("run "):
            i = int(step.split()[1])
            er.runs.append(RunRecord(plan.points[i], False, f"the engine process died: {er.crashed}"))
    return er


def profile_for(plan: Plan) -> dict[str, list[list[int]]]:
    """The optimization profile (TensorRT's) the plan's sizes imply: per input, [min, opt, max] with min
    and max elementwise over every point, and opt the ``--shapes`` opt corner, else the first given
    point, else the first point."""
    from graphlint.confirm.plan import GIVEN

    if not plan.points:
        return {}
    opt = (next((p for p in plan.points if p.label == "--shapes opt"), None)
           or next((p for p in plan.points if p.kind == GIVEN), plan.points[0]))
    out: dict[str, list[list[int]]] = {}
    for name in plan.inputs:
        shapes = [p.shapes[name] for p in plan.points if name in p.shapes]
        if not shapes or len({len(s) for s in shapes}) != 1:
            continue
        out[name] = [[min(d) for d in zip(*shapes, strict=True)], list(opt.shapes.get(name, shapes[0])),
                     [max(d) for d in zip(*shapes, strict=True)]]
    return out


def write_feeds(plan: Plan, folder: str, seed: int = 0) -> None:
    for i, point in enumerate(plan.points):
        np.savez(os.path.join(folder, f"point{i}.npz"), **plan.feeds(point, seed + i))


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()


def _death(code: int, err: bytes) -> str:
    tail = [ln for ln in err.decode(errors="replace").strip().splitlines() if ln.strip()][-1:]
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        what = f"killed by {name}"
    else:
        what = f"exit code {code}"
    return what + (f" ({tail[0][:200]})" if tail else "")


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}
