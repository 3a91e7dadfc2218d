"""The pass interface: a pass takes a model and the requests for it, and says what it changed.

In the spirit of ``onnx_ir.passes``: a pass is a small object with a name (a rewrite name from
graphlint.rewrites.CATALOGUE), what it must run after, and ``run(model, requests, ctx)``
returning a :class:`PassResult` (the new model, whether anything changed, one line per change).
Passes never mutate their input model: they work on a copy, so the manager can keep every
intermediate model for bisection.

A *request* is the ``params`` dict of one finding's Rewrite (nodes named by node label,
values by name). An empty request means "everywhere it applies", used when a rewrite is
named on the command line (``--rewrite NAME``) rather than suggested by a finding.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from graphlint.rewrites import CATALOGUE

ONNX_FORMAT = "onnx"
OPENVINO_FORMAT = "openvino"

# name -> (new dtype name, function mapping an original feed to the new one)
InputMap = dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]]


@dataclass
class PassResult:
    model: Any  # onnx.ModelProto or graphlint.fix.ir_model.IRModel
    modified: bool
    changes: list[str] = field(default_factory=list)  # one human line per change
    # How callers must now feed the inputs whose contract the pass changed (dtype, scale):
    input_map: InputMap = field(default_factory=dict)
    # Requests the pass could not apply, with why (e.g. "value range not provably int32").
    skipped: list[str] = field(default_factory=list)
    # For passes with preserves_results=False: whether *this* result changes outputs on purpose
    # (then the difference is reported, not enforced); False holds it to equal outputs.
    changes_results: bool = True


@dataclass
class FixContext:
    """What passes may read besides the model: the target and the user's options."""

    target: Any = None  # graphlint.target.Target
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # --shapes (opt shape per input)
    layouts: dict[str, str] = field(default_factory=dict)  # --layout name:NCHW
    model_dir: str = "."  # folder of the input model (OpenVINO .bin, external data)
    workdir: str = "."  # scratch folder for passes that must round-trip through files (OpenVINO)


class Pass:
    """Base class. Subclasses set ``name`` (a catalogue rewrite name) and implement ``apply``."""

    name: ClassVar[str]
    formats: ClassVar[frozenset[str]] = frozenset({ONNX_FORMAT})
    after: ClassVar[tuple[str, ...]] = ()  # passes that must run first when both are applied
    # Whether the pass is meant to keep outputs equal (verified numerically against the model
    # before it). False for passes that change results or the input contract on purpose;
    # those are checked structurally and their output difference is reported, not enforced.
    preserves_results: ClassVar[bool] = True

    @property
    def safe(self) -> bool:
        spec = CATALOGUE.get(self.name)
        return spec.safe if spec else False

    def run(self, model: Any, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        work = copy.deepcopy(model)
        return self.apply(work, requests, ctx)

    def apply(self, model: Any, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        raise NotImplementedError


# Catalogue rewrites with no pass, and why (tests/test_fix_catalogue.py keeps this honest).
NOT_IMPLEMENTED: dict[str, str] = {
    "trt-plugin": "a TensorRT plugin cannot be built or verified here; fix applies unfuse-contrib instead",
    "pad-to-multiple": "padding a sequence input changes the interface and every output's shape; do it in the "
                       "tokenizer (pad_to_multiple_of) or bucket lengths",
}

# (rewrite name, model format) -> pass class
PASSES: dict[tuple[str, str], type[Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Register a pass class under its rewrite name for each format it takes (later ones replace earlier)."""
    for fmt in cls.formats:
        PASSES[(cls.name, fmt)] = cls
    return cls
