"""What engines do with models onnx.checker rejects: the classes of ``data/validity.toml``.

Read by GL0001 (checker and strict-inference complaints) and GL0005 (unreadable weights). Not a
rule module (leading underscore: rule discovery skips it).
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from graphlint.target import data_dir

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

TABLE = "validity.toml"


@functools.cache
def table() -> dict[str, Any]:
    with open(os.path.join(data_dir(), TABLE), "rb") as f:
        data = tomllib.load(f)
    for entry in data["complaint"]:
        entry["_re"] = [re.compile(p) for p in entry["match"]]
    return data


def fact(cid: str) -> dict[str, Any]:
    """A class by id."""
    return next(e for e in table()["complaint"] if e["id"] == cid)


def for_op(op_type: str) -> dict[str, Any] | None:
    """The shape-contract class for an op whose engines hold its shape rules differently, if any."""
    return next((e for e in table()["complaint"] if op_type in e.get("ops", ())), None)


def classify(key: str, unsorted: bool = False) -> dict[str, Any] | None:
    """The complaint class a checker / inference message belongs to, or None (not recorded).

    In a graph that is not topologically sorted, strict inference also complains that the nodes
    reading later values get inputs without a type: those are part of the ordering problem."""
    if unsorted and "expected to have type but instead is null" in key:
        return fact("unsorted")
    return next((e for e in table()["complaint"] if any(r.search(key) for r in e["_re"])), None)
