"""The ONNX backend node tests on disk, and a process pool that survives engine crashes.

``case_folder()`` materializes ``onnx.backend.test.case.node.collect_testcases()`` (about 1,900
single-op models with their inputs and reference outputs) under testmodels/out, one folder per
test in the layout of onnx's own test data: ``<name>/model.onnx``, ``input_<j>.pb`` and
``output_<j>.pb`` (tensors, sequences and optionals as onnx.numpy_helper writes them).

Engines run over the cases in testmodels.pool.isolated_map (a native crash kills only its worker).
Used by tests/test_conformance_backend.py and rules/data/gen/gen_engine_drift.py.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from testmodels.common import cached


def _write(folder: str, kind: str, j: int, value: Any, vtype: Any) -> None:
    from onnx import TensorProto, numpy_helper

    if vtype.HasField("sequence_type"):
        proto = numpy_helper.from_list(value)
    elif vtype.HasField("optional_type"):
        proto = numpy_helper.from_optional(value)
    elif vtype.HasField("map_type"):
        proto = numpy_helper.from_dict(value)
    else:
        proto = value if isinstance(value, TensorProto) else numpy_helper.from_array(value)
    with open(os.path.join(folder, f"{kind}_{j}.pb"), "wb") as f:
        f.write(proto.SerializeToString())


def _build(folder: str) -> None:
    import onnx
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    for c in cases:
        d = os.path.join(folder, c.name)
        os.makedirs(d)
        onnx.save(c.model, os.path.join(d, "model.onnx"))
        inputs, outputs = c.data_sets[0]
        for kind, values, decl in (("input", inputs, c.model.graph.input), ("output", outputs, c.model.graph.output)):
            for j, v in enumerate(values):
                _write(d, kind, j, v, decl[j].type)


def case_folder() -> str:
    return cached("onnx-backend-node-data", _build)


def model_paths(folder: str | None = None) -> list[str]:
    folder = folder or case_folder()
    return sorted(os.path.join(folder, n, "model.onnx") for n in os.listdir(folder)
                  if os.path.isfile(os.path.join(folder, n, "model.onnx")))


def case_name(path: str) -> str:
    return os.path.basename(os.path.dirname(path))


def _read(path: str, vtype: Any) -> Any:
    import onnx
    from onnx import numpy_helper

    with open(path, "rb") as f:
        data = f.read()
    if vtype.HasField("sequence_type"):
        p = onnx.SequenceProto()
        p.ParseFromString(data)
        return numpy_helper.to_list(p)
    if vtype.HasField("optional_type"):
        p = onnx.OptionalProto()
        p.ParseFromString(data)
        return numpy_helper.to_optional(p)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def load_io(model_path: str, model: Any) -> tuple[list[Any], list[Any]]:
    """The test's inputs and reference outputs, in graph input / output order."""
    d = os.path.dirname(model_path)
    ins = [_read(os.path.join(d, f"input_{j}.pb"), v.type) for j, v in enumerate(model.graph.input)
           if os.path.exists(os.path.join(d, f"input_{j}.pb"))]
    outs = [_read(os.path.join(d, f"output_{j}.pb"), v.type) for j, v in enumerate(model.graph.output)]
    return ins, outs
