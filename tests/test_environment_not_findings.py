"""A problem of graphlint's own environment is never a finding about the model.

graphlint once filled unknown shapes from onnxruntime's ``tools/symbolic_shape_infer.py``, loaded
from a file inside the onnxruntime package. That module needs sympy, which ``pip install graphlint``
does not bring, so on a plain install it crashed and nearly every model got a GL3009 warning about
the missing package. The fallback is gone; these tests hold the two halves of that line: no
module is loaded from another package's files, and a real export's findings never name a Python
package.
"""

from __future__ import annotations

import os
import re

import pytest

from tests.conftest import run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "testmodels", "examples", "tiny_vlm.onnx")
# what a finding about graphlint's environment would say: a module, a package's tool, an import failure
_ENVIRONMENT = re.compile(r"sympy|onnxruntime\.tools|symbolic_shape_infer|No module named|ModuleNotFoundError|"
                          r"ImportError|pip install", re.I)


def _sources() -> list[str]:
    out = []
    for top in ("graphlint", "rules"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            out += [os.path.join(folder, f) for f in files if f.endswith(".py")]
    return out


def test_no_module_is_loaded_from_another_packages_files():
    for path in _sources():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        assert "spec_from_file_location" not in text, path
        assert "symbolic_shape_infer" not in text, path


def _findings(path: str, target: str) -> list[dict]:
    r = run_cli(path, "--target", target, "--format", "json")
    assert r.code in (0, 1), r.err
    findings = r.json()["models"][0]["findings"]
    for f in findings:
        assert not _ENVIRONMENT.search(f["message"]), f
    return findings


@pytest.mark.parametrize("target", ["trt", "ort", "openvino"])
def test_no_finding_on_a_real_export_names_a_python_package(target):
    findings = _findings(EXAMPLE, target)
    assert findings, "the example model has findings on every target"
    assert not [f for f in findings if f["rule_id"] == "GL3009"]  # its shapes are all known


@pytest.mark.parametrize("target", ["trt", "ort"])
def test_unknown_shapes_are_an_info_about_the_model(tmp_path, target):
    """A custom-domain op leaves its output's shape unknown: exactly where the removed fallback ran
    (and, without sympy, crashed into a GL3009 warning). Now one info finding about the model."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h

    g = h.make_graph([h.make_node("Mystery", ["x"], ["m"], name="mystery", domain="acme"),
                      h.make_node("Relu", ["m"], ["y"], name="relu")], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, ["batch", 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)])
    path = str(tmp_path / "mystery.onnx")
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("acme", 1)]), path)
    gl3009 = [f for f in _findings(path, target) if f["rule_id"] == "GL3009"]
    assert [(f["severity"], f["node"]) for f in gl3009] == [("info", "mystery")]
    assert "after ONNX and graphlint shape inference" in gl3009[0]["message"]
