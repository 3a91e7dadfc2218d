"""What the pipeline rules (GL8xxx) share: their facts file and the image sizes in their messages.

Not a rule module (leading underscore).
"""

from __future__ import annotations

import functools
from typing import Any

from graphlint_rules import _contract as C

from graphlint.pipeline import runtimes

FACTS = "pipeline.toml"


def table(key: str) -> Any:
    """A table of rules/data/pipeline.toml (``merge_dtype``, ``agree``, ...)."""
    return runtimes.facts_file().get(key, {})


@functools.cache
def _facts() -> dict[str, dict[str, Any]]:
    return {fact["id"]: fact for fact in runtimes.facts_file()["fact"]}


def basis(fact_id: str) -> dict[str, Any]:
    """The ``basis`` property of an error backed by ``fact_id`` (checked to exist)."""
    if fact_id not in _facts():
        raise KeyError(f"no fact {fact_id!r} in rules/data/{FACTS}")
    return C.props(C.fact_basis(FACTS, fact_id))


def size_text(image: tuple[int, int]) -> str:
    return f"{image[1]}x{image[0]}"  # width x height, as people say image sizes
