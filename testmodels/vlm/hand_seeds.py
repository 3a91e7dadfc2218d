"""Seeded deployment bugs on the hand folders: ``hand/seeds.toml`` says, per seed, the healthy base
folder, the bug class, whether it is held out (chosen before any linter ran), the JSON keys it edits
(``file``, dotted ``key``, ``value``) and a ``files`` folder (under hand/) whose graphs replace the base's.

:func:`materialize` copies the base into a temp folder and applies the seed, so committed seeds cost
only their swapped graphs.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import tomllib

HAND = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hand")
SEEDS = os.path.join(HAND, "seeds.toml")


def load_seeds() -> list[dict[str, Any]]:
    with open(SEEDS, "rb") as f:
        return tomllib.load(f)["seed"]


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    *path, last = dotted.split(".")
    for key in path:
        doc = doc[key]
    doc[last] = value


def materialize(seed_id: str, tmp: str) -> str:
    seed = next(s for s in load_seeds() if s["id"] == seed_id)
    dest = os.path.join(tmp, seed_id)
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    shutil.copytree(os.path.join(HAND, seed["base"]), dest)
    if "files" in seed:
        src = os.path.join(HAND, seed["files"])
        for name in os.listdir(src):
            shutil.copy(os.path.join(src, name), os.path.join(dest, name))
    for edit in seed.get("edit", []):
        path = os.path.join(dest, edit["file"])
        with open(path) as f:
            doc = json.load(f)
        _set(doc, edit["key"], edit["value"])
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
    return dest
