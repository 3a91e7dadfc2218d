"""The Ray executor of a scan (``--ray auto|ADDRESS``, the ``graphlint[ray]`` extra): each model
is a Ray task on an existing cluster.

* A task lints one model for its stale targets in a Ray worker and returns the findings
  (graphlint.scan.work.Outcome), never the IR.
* Each task declares the memory it needs, from its files' size (:func:`task_memory`), so Ray's
  scheduler does not place a 2 GB model beside ten others on one node.
* A worker that dies (a crash in native code, the OOM killer, a lost node) is retried by Ray
  up to ``RETRIES`` times; after that the model is recorded as crashed.
* Only the driver writes the store: outcomes come back here, one at a time, as they end. At most
  a few tasks more than the cluster has CPUs are in flight, so an interrupted scan loses little.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

from graphlint.errors import UsageError
from graphlint.scan.work import BUDGET_MARGIN, Outcome, Spec, Task, gave_up, run_task, task_budget

RETRIES = 2  # Ray re-runs a task whose worker died this many times
# Memory a task declares: the interpreter with onnx and the engines' tables, plus a multiple of
# the model file's bytes (the parsed proto, then the IR built from it); external data is not
# counted, the linter reads it only when needed. Peak RSS measured in bench/README.md ("Fleet scan").
BASE_MEMORY = 384 << 20
MEMORY_PER_BYTE = 6


def task_memory(task: Task, node_memory: float = float("inf")) -> int:
    """Bytes of memory the task declares; never more than the largest node has (Ray would keep a
    task no node can hold waiting for ever: such a model then runs alone on the largest node)."""
    return int(min(BASE_MEMORY + MEMORY_PER_BYTE * task.size, node_memory))


def require_ray() -> Any:
    """The ray module, or a usage error that says how to install it."""
    try:
        import ray
    except ImportError:
        raise UsageError("--ray needs Ray: pip install 'graphlint[ray]'") from None
    return ray


def connect(address: str) -> tuple[Any, bool]:
    """The ray module, connected to the cluster at ``address`` (``auto``: the one this machine
    belongs to, or RAY_ADDRESS); whether this call connected (then the caller disconnects)."""
    ray = require_ray()
    if ray.is_initialized():  # a program that started or joined a cluster itself
        return ray, False
    try:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR", configure_logging=False)
    except (ConnectionError, ValueError, RuntimeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UsageError(f"no Ray cluster at {address!r} ({first}); start one with `ray start --head` "
                         f"or give its address") from None
    return ray, True


def run_ray(tasks: list[Task], spec: Spec, on_outcome: Callable[[Task, Outcome], None], *, address: str,
            on_model: Callable[[str], None] | None = None) -> None:
    ray, connected = connect(address)
    try:
        _dispatch(ray, tasks, spec, on_outcome, on_model)
    finally:
        # Interrupted (Ctrl-C) or not, the tasks still in flight are not cancelled one by one: a
        # ray.cancel racing with the task's own reply aborts the driver (Ray's "Tried to complete task
        # that was not pending" check, 2.60). A job's tasks end with the job: shutting down the
        # connection this scan made kills their workers; on a connection the caller made, each
        # ends within its time budget and its result is dropped.
        if connected:
            ray.shutdown()


def _dispatch(ray: Any, tasks: list[Task], spec: Spec, on_outcome: Callable[[Task, Outcome], None],
              on_model: Callable[[str], None] | None) -> None:
    remote = ray.remote(run_task)
    in_flight = int(ray.cluster_resources().get("CPU", 1)) + 2
    largest = max((n["Resources"].get("memory", 0) for n in ray.nodes() if n.get("Alive")), default=0) or float("inf")
    # A task may wait behind another before it starts; past that, its worker holds a C++ call.
    budget = task_budget(spec)  # under --confirm, the engines' budgets too
    overdue = 2 * budget + BUDGET_MARGIN if budget else float("inf")
    queue = deque(sorted(tasks, key=lambda t: -t.size))  # the biggest first: no long tail at the end
    running: dict[Any, tuple[Task, float]] = {}
    while queue or running:
        while queue and len(running) < in_flight:
            task = queue.popleft()
            if on_model:
                on_model(task.path)
            ref = remote.options(num_cpus=1, memory=task_memory(task, largest), max_retries=RETRIES,
                                 retry_exceptions=False, name=f"graphlint:{task.path}").remote(task, spec)
            running[ref] = (task, time.monotonic() + overdue)
        soonest = min(d for _, d in running.values()) - time.monotonic()
        refs = list(running)
        done, rest = ray.wait(refs, num_returns=1, timeout=max(min(soonest, 60.0), 0.0))
        if done and rest:  # and every other one that is ready: one pass over the refs, not one each
            done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        for ref in done:
            task, _ = running.pop(ref)
            on_outcome(task, _result(ray, ref, task))
        now = time.monotonic()
        for ref, (task, deadline) in list(running.items()):
            if now >= deadline:  # its worker is stuck in a C++ call: only killing it ends the task
                del running[ref]
                ray.cancel(ref, force=True)
                on_outcome(task, gave_up(task, "timeout", f"its Ray task did not end within "
                                                          f"{overdue:g} s and was cancelled"))


def _result(ray: Any, ref: Any, task: Task) -> Outcome:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:  # run_task catches everything; this is Ray's own
        return gave_up(task, "crashed", f"its Ray task failed: {str(e).strip().splitlines()[0]}")
    except ray.exceptions.RayError as e:  # the worker (or its node) died on every attempt
        return gave_up(task, "crashed", f"its Ray worker died on {RETRIES + 1} attempts "
                                        f"({type(e).__name__})", attempts=RETRIES + 1)
