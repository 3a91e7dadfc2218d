"""Fetch the pinned graph layout library from the npm registry and check it before vendoring.

    python graphlint/html/vendor/update.py          # re-fetch, verify, rewrite the vendored files
    python graphlint/html/vendor/update.py --check  # verify the vendored files against manifest.json

``npm pack`` downloads the package tarball; its sha512 must equal both the integrity pinned here
and the one the registry reports (``npm view ... dist.integrity``). The minified build and the
license are copied out unchanged, and manifest.json records name, version, license, the
tarball's integrity and the sha256 of each vendored file (tests/test_html_report.py checks them).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile

PACKAGE = "@dagrejs/dagre"
VERSION = "3.1.3"
INTEGRITY = "sha512-X4aUTwOReZvthaZWOVHqlJ52/ZdhZFEM4+Lh/uR4XooUSLE6p71bcy7MPGzYnNUcNh+nj+i/qJQpCMIdQnSmrg=="
FILES = {"package/dist/dagre.min.js": f"dagre-{VERSION}.min.js", "package/LICENSE": "LICENSE-dagre.txt"}
HERE = os.path.dirname(os.path.abspath(__file__))


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def fetch() -> dict:
    registry = subprocess.run(["npm", "view", f"{PACKAGE}@{VERSION}", "dist.integrity", "license"],
                              check=True, capture_output=True, text=True).stdout
    if INTEGRITY not in registry:
        sys.exit(f"registry integrity differs from the pinned one:\n{registry}")
    license_id = registry.rsplit("=", 1)[-1].strip().strip("'") if "license" in registry else "MIT"
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(["npm", "pack", f"{PACKAGE}@{VERSION}", "--pack-destination", tmp, "--json"],
                             check=True, capture_output=True, text=True).stdout
        tgz = os.path.join(tmp, json.loads(out)[0]["filename"])
        with open(tgz, "rb") as f:
            digest = "sha512-" + base64.b64encode(hashlib.sha512(f.read()).digest()).decode()
        if digest != INTEGRITY:
            sys.exit(f"tarball {digest} does not match the pinned {INTEGRITY}")
        files = {}
        with tarfile.open(tgz) as tar:
            for member, name in FILES.items():
                data = tar.extractfile(member).read()  # type: ignore[union-attr]
                with open(os.path.join(HERE, name), "wb") as f:
                    f.write(data)
                files[name] = hashlib.sha256(data).hexdigest()
    manifest = {"name": PACKAGE, "version": VERSION, "license": license_id, "integrity": INTEGRITY,
                "tarball": f"https://registry.npmjs.org/{PACKAGE}/-/dagre-{VERSION}.tgz",
                "script": FILES["package/dist/dagre.min.js"], "files": files}
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    return manifest


def check() -> list[str]:
    """Problems with the vendored files (empty when each matches manifest.json)."""
    with open(os.path.join(HERE, "manifest.json")) as f:
        manifest = json.load(f)
    return [f"{name}: sha256 differs from manifest.json" for name, digest in manifest["files"].items()
            if _sha256(os.path.join(HERE, name)) != digest]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only verify the vendored files")
    args = ap.parse_args()
    if args.check:
        problems = check()
        print("\n".join(problems) or "vendored files match manifest.json")
        return 1 if problems else 0
    print(json.dumps(fetch(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
