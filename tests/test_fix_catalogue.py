"""Every catalogued rewrite has a pass (or a stated reason not to), and the pass order respects 'after'."""

from __future__ import annotations

import pytest

from graphlint.errors import UsageError
from graphlint.fix.base import NOT_IMPLEMENTED, OPENVINO_FORMAT, Pass
from graphlint.fix.manager import order
from graphlint.fix.passes import load_passes
from graphlint.rewrites import CATALOGUE


def test_every_catalogued_rewrite_has_a_pass_or_a_reason():
    onnx_passes, ir_passes = load_passes(), load_passes(OPENVINO_FORMAT)
    missing = sorted(set(CATALOGUE) - set(onnx_passes) - set(ir_passes) - set(NOT_IMPLEMENTED))
    assert missing == [], f"catalogue rewrites without a pass: {missing}"
    assert not set(NOT_IMPLEMENTED) - set(CATALOGUE), "NOT_IMPLEMENTED names a rewrite the catalogue lacks"
    assert set(onnx_passes) | set(ir_passes) <= set(CATALOGUE)
    assert {"set-layout", "fix-input-shape"} <= set(ir_passes)


def test_order_respects_dependencies():
    passes = {n: cls() for n, cls in load_passes().items()}
    names = list(passes)
    ordered = order(list(reversed(names)), passes)
    assert sorted(ordered) == sorted(names)
    pos = {n: i for i, n in enumerate(ordered)}
    for n, p in passes.items():
        for dep in p.after:
            if dep in pos:
                assert pos[dep] < pos[n], f"{dep} must run before {n}"
    # The drift fixes come before the opset upgrade they protect; clean-up comes last.
    assert pos["resize-coordinate-mode"] < pos["opset-upgrade"] < pos["fold-constants"] < pos["remove-dead-nodes"]


def test_passes_that_wait_for_each_other_are_an_error():
    class First(Pass):
        name = "first-of-two"
        after = ("second-of-two",)

    class Second(Pass):
        name = "second-of-two"
        after = ("first-of-two",)

    with pytest.raises(UsageError, match="ask to run after each other"):
        order(["first-of-two", "second-of-two"], {"first-of-two": First(), "second-of-two": Second()})
