"""What ``graphlint scan`` lints: folders, globs, model files and manifests turned into models.

* a folder: every ``.onnx`` file under it, and every ``.xml`` that is an OpenVINO IR (its root
  element is ``<net``), skipping hidden folders (``.git``, virtual environments); a deployment
  folder under it (graphlint.pipeline.detect: an optimum-intel, optimum ONNX or onnxruntime-genai
  export, or a ``[pipeline]`` table) is one item, its pipeline, and its graphs are not items of their own;
* a glob (``models/**/*.onnx``);
* a manifest, ``.csv`` (a header with a ``path`` column, optionally ``shapes``) or ``.jsonl``
  (one ``{"path": ..., "shapes": [...]}`` object a line): paths relative to the manifest's
  folder; ``shapes`` are ``--shapes`` profiles for that model only (in CSV, several are
  separated by ``;`` or spaces).

A model is named by its path relative to the working folder when it is under it, else its
absolute path: the store's key, and what every report shows.
"""

from __future__ import annotations

import csv
import glob
import json
import os
from dataclasses import dataclass

from graphlint.errors import UsageError

MANIFEST_SUFFIXES = (".csv", ".jsonl")


@dataclass(frozen=True)
class Item:
    path: str
    shapes: tuple[str, ...] = ()
    pipeline: bool = False  # a deployment folder: its pipelines are linted as one item (path: the folder)
    kinds: tuple[str, ...] = ()  # a deployment folder's stage formats (onnx, openvino): the targets it can take


def expand(sources: list[str]) -> list[Item]:
    """The models ``sources`` name, each once (its first mention wins), in the order given."""
    seen: dict[str, Item] = {}
    for source in sources:
        for item in _expand_one(source):
            seen.setdefault(item.path, item)
    return list(seen.values())


def display_path(path: str) -> str:
    full = os.path.abspath(path)
    rel = os.path.relpath(full)
    return full if rel.startswith(os.pardir) else rel


def _expand_one(source: str) -> list[Item]:
    if source.lower().endswith(MANIFEST_SUFFIXES) and os.path.isfile(source):
        return _manifest(source)
    if os.path.isdir(source):
        from graphlint.pipeline import detect

        found = detect.find(source)
        staged = {os.path.abspath(p) for pipe in found.pipelines for p in pipe.paths}
        folders: dict[str, set[str]] = {}
        for pipe in found.pipelines:
            folders.setdefault(pipe.folder, set()).update(
                "openvino" if p.lower().endswith(".xml") else "onnx" for p in pipe.paths)
        return ([Item(display_path(f), pipeline=True, kinds=tuple(sorted(k))) for f, k in folders.items()]
                + [Item(display_path(p)) for p in _walk(source) if os.path.abspath(p) not in staged])
    if os.path.isfile(source):
        return [Item(display_path(source))]
    if glob.has_magic(source):
        found = sorted(p for p in glob.glob(source, recursive=True) if os.path.isfile(p) and _is_model(p))
        if not found:
            raise UsageError(f"{source!r} matches no model")
        return [Item(display_path(p)) for p in found]
    raise UsageError(f"{source!r}: no such file or folder")


def _walk(folder: str) -> list[str]:
    out = []
    for dirpath, dirnames, files in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        out.extend(os.path.join(dirpath, fn) for fn in sorted(files) if _is_model(os.path.join(dirpath, fn)))
    return out


def _is_model(path: str) -> bool:
    low = path.lower()
    if low.endswith(".onnx"):
        return True
    if not low.endswith(".xml"):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b"<net" in head


def _manifest(path: str) -> list[Item]:
    base = os.path.dirname(os.path.abspath(path))
    items = []
    with open(path, encoding="utf-8", newline="") as f:
        if path.lower().endswith(".csv"):
            reader = csv.DictReader(f)
            if not reader.fieldnames or "path" not in reader.fieldnames:
                raise UsageError(f"{path}: a manifest needs a header with a 'path' column")
            entries = [(reader.line_num, rec.get("path") or "", (rec.get("shapes") or "").replace(";", " ").split())
                       for rec in reader]
        else:
            entries = []
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise UsageError(f"{path}:{n}: not a JSON object ({e.msg})") from None
                if not isinstance(rec, dict):
                    raise UsageError(f"{path}:{n}: expected an object with a \"path\"")
                shapes = rec.get("shapes") or []
                entries.append((n, rec.get("path") or "", [shapes] if isinstance(shapes, str) else list(shapes)))
    for n, rel, shapes in entries:
        if not isinstance(rel, str) or not rel:
            raise UsageError(f"{path}:{n}: no path")
        model = os.path.join(base, rel)
        if not os.path.isfile(model):
            raise UsageError(f"{path}:{n}: {rel!r}: no such file")
        items.append(Item(display_path(model), tuple(str(s) for s in shapes)))
    return items
