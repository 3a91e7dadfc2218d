"""The 100k-node bench model (bench/make_models.py's ``big100k``) for tests, cached under testmodels/out/.

The cache key includes make_models.py's text, so a changed generator builds the model again.
"""

from __future__ import annotations

import hashlib
import os

from testmodels.common import cached

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "bench", "make_models.py")


def build(folder: str) -> None:
    from bench.make_models import build as make
    from bench.make_models import scenarios

    make(os.path.join(folder, "big100k.onnx"), **scenarios(1.0)["big100k"])


def big100k() -> str:
    with open(SCRIPT, "rb") as f:
        key = hashlib.sha256(f.read()).hexdigest()[:10]
    return os.path.join(cached(f"bench-big100k-{key}", build), "big100k.onnx")
