"""Seeded deployment bugs: ``materialize(seed, dest)`` copies a healthy VLM folder and applies one seed.

Standard library only (it runs in the dev venv's tests and in the optimum-intel venv's truth run): graph
variants are built ahead by the folder builder, a seed only copies them in.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import tomllib

HERE = Path(__file__).resolve().parent
SEEDS_FILE = HERE / "seeds.toml"


def load(path: Path = SEEDS_FILE) -> list[dict[str, Any]]:
    seeds = tomllib.loads(path.read_text())["seed"]
    ids = [s["id"] for s in seeds]
    if len(ids) != len(set(ids)):
        raise ValueError(f"duplicate seed ids in {path}")
    return seeds


def by_id(seed_id: str) -> dict[str, Any]:
    for s in load():
        if s["id"] == seed_id:
            return s
    raise KeyError(seed_id)


def _walk(doc: Any, parts: list[str]) -> tuple[Any, str | int]:
    """The container holding the last key of a dot path; integer segments index lists."""
    for p in parts[:-1]:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    last = parts[-1]
    return doc, int(last) if isinstance(doc, list) else last


def apply_edit(folder: Path, edit: dict[str, Any], root: Path = HERE) -> None:
    op = edit["op"]
    if op == "replace":
        src = root / edit["variant"]
        for ext in (".xml", ".bin"):
            shutil.copyfile(src / (edit["graph"] + ext), folder / (edit["graph"] + ext))
        return
    path = folder / edit["file"]
    doc = json.loads(path.read_text())
    parent, key = _walk(doc, edit["key"].split("."))
    if op == "set":
        parent[key] = edit["value"]
    elif op == "delete":
        del parent[key]
    else:
        raise ValueError(f"unknown edit op {op!r}")
    path.write_text(json.dumps(doc, indent=2) + "\n")


def materialize(seed: dict[str, Any] | str, dest: Path, root: Path = HERE) -> Path:
    """Copy the seed's healthy base folder to ``dest`` (replaced if present), apply its edits, return ``dest``."""
    if isinstance(seed, str):
        seed = by_id(seed)
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(root / seed["base"], dest)
    for edit in seed["edits"]:
        apply_edit(dest, edit, root)
    return dest
