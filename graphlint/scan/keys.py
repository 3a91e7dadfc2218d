"""The keys that decide whether a stored result still holds: the model's bytes, the rules and
their data, and the options.

A model's digest is the sha256 of its file and of its companion files: an OpenVINO IR's
``.bin``, and an ONNX file's external data when it follows the exporters' naming
(``model.onnx.data``, ``model.onnx_data``, ``model.data``). Each file's own sha256 is cached in
the store by (path, size, mtime), so a re-scan of an unchanged fleet reads no model bytes.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from collections.abc import Iterable
from typing import Any, Protocol

CHUNK = 1 << 20
# graphlint's code that only renders or reads what is stored: changing it changes no finding.
_READERS = {"html", "commands", "cli.py", "docs.py", os.path.join("scan", "dashboard.py"),
            os.path.join("scan", "fleet.py")}


class DigestCache(Protocol):
    def known_digest(self, path: str, size: int, mtime_ns: int) -> str | None: ...


def companions(path: str) -> list[str]:
    """The files beside ``path`` that belong to the model (its weights)."""
    folder, name = os.path.split(path)
    stem = os.path.splitext(name)[0]
    if name.lower().endswith(".xml"):
        names = [stem + ".bin"]
    else:
        names = [name + ".data", name + "_data", stem + ".data", stem + ".onnx_data"]
    out = []
    for n in dict.fromkeys(names):
        p = os.path.join(folder, n)
        if os.path.isfile(p):
            out.append(p)
    return out


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def model_digest(path: str, cache: DigestCache) -> tuple[str, list[tuple[str, int, int, str]]]:
    """The model's sha256 (its file's, or of its files' together when it has companions), and the
    (path, size, mtime_ns, sha256) of each file hashed anew, for the cache. A deployment folder's is
    that of every file directly in it: its graphs, their weights and the configs that feed them."""
    fresh: list[tuple[str, int, int, str]] = []
    parts = []
    files = ([e.path for e in sorted(os.scandir(path), key=lambda e: e.name) if e.is_file(follow_symlinks=False)]
             if os.path.isdir(path) else [path, *companions(path)])
    for p in files:
        st = os.stat(p)
        sha = cache.known_digest(p, st.st_size, st.st_mtime_ns)
        if sha is None:
            sha = file_sha256(p)
            fresh.append((p, st.st_size, st.st_mtime_ns, sha))
        parts.append((os.path.basename(p), sha))
    if len(parts) == 1 and not os.path.isdir(path):
        return parts[0][1], fresh
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest(), fresh


def rule_data_hash(rules: Iterable[type]) -> str:
    """One hash of what decides the findings besides the model: graphlint's own code, every rule
    pack's modules (the folder of each rule's module) and the built-in pack's data tables."""
    from graphlint.target import data_dir

    files: set[str] = set()
    graphlint_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for dirpath, dirnames, names in os.walk(graphlint_dir):
        dirnames[:] = [d for d in dirnames if d not in _READERS and d != "__pycache__"]
        files.update(p for p in (os.path.join(dirpath, n) for n in names if n.endswith(".py"))
                     if os.path.relpath(p, graphlint_dir) not in _READERS)
    for rule in rules:
        folder = os.path.dirname(inspect.getfile(rule))
        files.update(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".py"))
    for dirpath, dirnames, names in os.walk(data_dir()):
        dirnames[:] = [d for d in dirnames if d not in ("__pycache__", "gen")]
        files.update(os.path.join(dirpath, n) for n in names if n.endswith((".json", ".toml")))
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(os.path.basename(f).encode() + b"\0")
        with open(f, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:32]


def options_hash(settings: dict[str, Any], config_file: str | None) -> str:
    """The hash of the options that change findings (selection, shapes) and of the configuration file's bytes."""
    doc = dict(settings, config=file_sha256(config_file) if config_file else None)
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:32]


def engine_versions() -> dict[str, Any]:
    """What ``--confirm`` runs models on here: each engine's installed version (None: not installed) and
    whether a CUDA GPU is present (TensorRT runs only there); found without importing any engine."""
    from graphlint.confirm.engines import RUNNERS, has_gpu, installed

    return {**{runner: installed(runner) for runner in sorted(RUNNERS.values())}, "gpu": has_gpu()}


def confirm_settings(copts: Any, engines: dict[str, Any]) -> dict[str, Any]:
    """The part of the options hash a ``--confirm`` scan adds: the ``[confirm]`` settings and the engines
    (a result confirmed on other engines, or not confirmed at all, is not reused)."""
    import dataclasses

    plain = (bool, int, float, str, dict, list, type(None))  # not a Python API's in-memory reference model
    settings = {f.name: v for f in dataclasses.fields(copts) if isinstance(v := getattr(copts, f.name), plain)}
    return {"settings": settings, "engines": engines}
