"""The export-pipeline part of the corpus: models committed under testmodels/pipelines/.

Each ``testmodels/pipelines/NAME.toml`` (written by ``NAME.py`` in its own pinned venv, see
testmodels/pipelines/__init__.py) lists its models: file, pipeline, kind, held-out flag, and the
input shapes and values the pipeline's runtime feeds (``shapes``, ``alt_shapes``, ``values``, as
the wheel manifest has them). The ONNX files are read where they are committed; their OpenVINO IR
is converted here, cached under testmodels/out/ and keyed by the files' bytes.

    python -m testmodels.corpus.pipelines      # list the pipeline models and build their IR
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import sys

from testmodels.common import cached, to_openvino

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pipelines")


def manifests() -> dict[str, dict]:
    """Every pipeline manifest by name."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "*.toml"))):
        with open(path, "rb") as f:
            out[os.path.basename(path)[:-5]] = tomllib.load(f)
    return out


def entries() -> list[dict]:
    """Every model row, with ``path`` (absolute), ``name`` (the pipeline) and ``tools`` added."""
    rows = []
    for name, man in manifests().items():
        for row in man.get("model", []):
            path = os.path.join(ROOT, name, row["file"])
            if os.path.isfile(path):
                rows.append({**row, "path": path, "name": name, "tools": man.get("tools", {})})
    return rows


def _key(rows: list[dict]) -> str:
    h = hashlib.sha256()
    for r in rows:
        with open(r["path"], "rb") as f:
            h.update(r["id"].encode() + hashlib.sha256(f.read()).digest())
    return h.hexdigest()[:12]


def _build_ir(folder: str, rows: list[dict]) -> None:
    report: dict[str, str | None] = {}
    for r in rows:
        try:
            to_openvino(r["path"], os.path.join(folder, f"{r['id']}.xml"))
            report[r["id"]] = None
        except Exception as e:  # OpenVINO's refusal is a fact about the model
            report[r["id"]] = " ".join(str(e).split())[:300]
    with open(os.path.join(folder, "ir.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)


def ir_folder() -> str:
    """The cached IR of every ONNX pipeline model (``<id>.xml``)."""
    rows = [r for r in entries() if r["path"].endswith(".onnx")]
    return cached(f"corpus-ir-pipelines-{_key(rows)}", lambda folder: _build_ir(folder, rows))


if __name__ == "__main__":
    rows = entries()
    print(f"{len(rows)} pipeline models; IR in {ir_folder()}", file=sys.stderr)
