"""VLM deployment-folder corpus: real optimum-intel exports of tiny VLMs, seeded deployment bugs, engine truth.

Arch modules (``archs_a.py``, ``archs_b.py``) each define ``ARCHS: dict[str, Callable[[Path], Arch]]``.
A builder writes, into the Path it is given, the HF source folder of one tiny VLM built from a random
config with seeded weights (``model.save_pretrained`` + ``processor.save_pretrained``, tokenizer and chat
template included, offline) and returns an :class:`Arch` that says how to feed it.

These modules run in the optimum-intel venv (``.venvs/optimum_intel``) and must not import graphlint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Arch:
    # Text with the image placeholder exactly as the processor / chat template expects it
    # (e.g. "USER: <image>\nWhat is this? ASSISTANT:"); the truth runs feed it with one image.
    prompt: str
    # >= 4 source image sizes (H, W) that exercise the processor: square, wide, tall, small, large.
    image_sizes: list[tuple[int, int]]
    notes: str = ""
    # Extra keyword arguments for optimum-cli (e.g. ["--trust-remote-code"]); normally empty.
    export_args: list[str] = field(default_factory=list)


Builder = Callable[[Path], Arch]

SEED = 0


def seed_all(seed: int = SEED) -> None:
    """Seed torch and transformers before building a model, so the weights are the same on every build."""
    import torch
    import transformers

    torch.manual_seed(seed)
    transformers.set_seed(seed)
