"""The engine child: ``python -m graphlint.runners.child JOB.json`` loads one model on one engine
and runs it at each point of the job, writing what happened to the job's ``result.json`` after
every step. The parent reads that file whatever the child's end (a crash, a kill at the time budget):
the last step started and not finished is where the engine died.

A job is JSON: ``engine``, ``path``, ``config`` (engine settings), ``outputs`` (extra values to
return, for bisection), ``runs`` (``[{"feeds": "point0.npz", "save": "out0.npz"}]``), ``result``.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from typing import Any

import numpy as np

from graphlint.runners import write_progress

SAVE_LIMIT = 256 << 20  # outputs larger than this in all are described, not saved


def main(job_path: str) -> int:
    with open(job_path) as f:
        job = json.load(f)
    from graphlint.runners import RunError, failure

    result: dict[str, Any] = {"step": "load", "runs": []}
    write_progress(job["result"], result)
    module = importlib.import_module(f"graphlint.runners.{job['engine']}")
    t0 = time.perf_counter()
    try:
        kwargs = {"profile": {k: tuple(map(tuple, v)) for k, v in job["profile"].items()}} if job.get("profile") else {}
        session = module.Session(job["path"], job.get("config") or {}, job.get("outputs") or None, **kwargs)
    except RunError as e:
        result.update(load={"ok": False, "error": str(e), "node": e.node}, step=None)
        write_progress(job["result"], result)
        return 0
    except Exception as e:
        err = failure(e)
        result.update(load={"ok": False, "error": str(err), "node": err.node}, step=None)
        write_progress(job["result"], result)
        return 0
    result["load"] = {"ok": True, "seconds": time.perf_counter() - t0}
    result.update(version=session.version, precision=getattr(session, "precision", None))
    for i, run in enumerate(job["runs"]):
        result["step"] = f"run {i}"
        write_progress(job["result"], result)
        with np.load(run["feeds"], allow_pickle=False) as z:
            feeds = {k: z[k] for k in z.files}
        t1 = time.perf_counter()
        rec: dict[str, Any] = {}
        try:
            outs = session.run(feeds)
        except RunError as e:
            rec = {"ok": False, "error": str(e), "node": e.node}
        else:
            rec = {"ok": True, "outputs": {k: [list(v.shape), str(v.dtype)] for k, v in outs.items()}}
            numeric = {k: v for k, v in outs.items() if v.dtype.kind in "biufc"}  # strings, maps: not compared
            if run.get("save") and sum(v.nbytes for v in numeric.values()) <= SAVE_LIMIT:
                np.savez(run["save"], **{f"o{j}": v for j, v in enumerate(numeric.values())})
                rec["saved"] = list(numeric)
        rec["seconds"] = time.perf_counter() - t1
        result["runs"].append(rec)
    result["step"] = None
    write_progress(job["result"], result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
