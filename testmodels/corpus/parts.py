"""The parts of the real-model corpus scored alone (docs/conformance.md): the corpus before the
export pipelines came ("base"), the pipelines, and the held-out models of each. A predicate reads
a corpus Model's ``source`` and ``heldout`` only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PARTS: dict[str, Callable[[Any], bool]] = {
    "all": lambda m: True,
    "base": lambda m: m.source != "pipeline",
    "heldout": lambda m: m.heldout and m.source != "pipeline",
    "pipeline": lambda m: m.source == "pipeline",
    "pipeline-heldout": lambda m: m.heldout and m.source == "pipeline",
}
