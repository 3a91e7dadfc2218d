"""graphlint fix moves a drifting node off the engine's wrong path: the rewritten model matches the spec on the engine.

SpaceToDepth mode=CRD (OpenVINO computes DCR) -> Reshape/Transpose/Reshape; MaxPool ceil_mode=1 whose
last window starts in the end padding (OpenVINO keeps it: wrong shape) -> ceil_mode=0 with explicit
end padding. Both are applied from the findings' rewrites by `graphlint fix --target openvino`,
verified by the fix command on onnxruntime, and then run on OpenVINO against the spec's outputs.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from testmodels import engines
from testmodels.node_cases import case_folder, load_io
from tests.fixhelp import run_fix, steps


def _fix_and_check(path: str, out: str, inputs: list, refs: list, rewrite: str, rule: str) -> onnx.ModelProto:
    before = engines.compare(refs, engines.run("openvino", path, inputs))
    assert before.differs, "OpenVINO no longer drifts here"
    report = run_fix(path, out, target="openvino", select=[rule])
    assert steps(report).get(rewrite) == "applied", report.to_dict()
    fixed = onnx.load(out)
    assert not engines.compare(refs, engines.run("openvino", out, inputs)).differs
    assert not engines.compare(refs, engines.run("ort", out, inputs)).differs
    return fixed


def test_spacetodepth_crd_decomposed_matches_spec_on_openvino(tmp_path):
    path = os.path.join(case_folder(), "test_spacetodepth_crd_mode_example", "model.onnx")
    model = onnx.load(path)
    inputs, refs = load_io(path, model)
    fixed = _fix_and_check(path, str(tmp_path / "fixed.onnx"), inputs, refs, "space-to-depth-decompose", "GL2010")
    assert "SpaceToDepth" not in {n.op_type for n in fixed.graph.node}


@pytest.mark.parametrize("blocksize,shape", [(2, [2, 3, 4, 6]), (3, [1, 2, 6, 9])])
def test_spacetodepth_decompose_is_exact_for_both_modes(tmp_path, blocksize, shape):
    from graphlint.fix.base import FixContext
    from graphlint.fix.passes.engine_drift import SpaceToDepthDecompose

    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for mode in ("CRD", "DCR"):
        node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=blocksize, mode=mode, name="s2d")
        out = [shape[0], shape[1] * blocksize**2, shape[2] // blocksize, shape[3] // blocksize]
        m = helper.make_model(helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                                [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)]),
                              opset_imports=[helper.make_opsetid("", 28)])
        res = SpaceToDepthDecompose().run(m, [{"node": "s2d"}], FixContext())
        assert res.modified
        np.testing.assert_array_equal(ReferenceEvaluator(res.model).run(None, {"x": x})[0],
                                      ReferenceEvaluator(m).run(None, {"x": x})[0])


def test_maxpool_ceil_explicit_pads_gives_the_spec_shape_on_openvino(tmp_path):
    path = os.path.join(case_folder(), "test_maxpool_2d_ceil_output_size_reduce_by_one", "model.onnx")
    model = onnx.load(path)
    inputs, refs = load_io(path, model)
    fixed = _fix_and_check(path, str(tmp_path / "fixed.onnx"), inputs, refs, "maxpool-explicit-pads", "GL2011")
    attrs = {a.name: helper.get_attribute_value(a) for a in fixed.graph.node[0].attribute}
    assert attrs["ceil_mode"] == 0


@pytest.mark.parametrize("size,kernel,stride,pad", [(5, 2, 2, 1), (7, 3, 3, 1), (6, 1, 4, 0), (9, 3, 2, 1)])
def test_maxpool_explicit_pads_keeps_values_where_the_window_is_dropped(size, kernel, stride, pad):
    from graphlint.fix.base import FixContext
    from graphlint.fix.passes.engine_drift import MaxPoolExplicitPads

    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[kernel, kernel], strides=[stride, stride],
                            pads=[pad] * 4, ceil_mode=1, name="mp")
    m = helper.make_model(helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, size, size])],
                                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
                          opset_imports=[helper.make_opsetid("", 18)])
    x = np.random.default_rng(1).standard_normal([1, 2, size, size]).astype(np.float32)
    res = MaxPoolExplicitPads().run(m, [{"node": "mp"}], FixContext())
    assert res.modified
    spec, new = engines.run("ort", m, [x])[0], engines.run("ort", res.model, [x])[0]
    np.testing.assert_array_equal(spec, new)
    np.testing.assert_array_equal(engines.run("openvino", res.model, [x])[0], spec)
