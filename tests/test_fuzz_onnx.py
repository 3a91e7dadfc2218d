"""Property-based fuzzing of the ONNX path (hypothesis, fixed seed and budget in CI).

Three generators: random small *valid* graphs (which must load and lint without a rule
crashing), structured mutations of real torch exports (ops, attributes, dims, types,
inputs, initializers and external-data entries changed at random), and raw byte mutations
of the same exports. For every case: no exception escapes, the exit code is 0, 1 or 2 and
the SARIF validates. Longer runs: see docs/fuzzing.md.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import onnx
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper as h

from testmodels import build_core
from testmodels.common import cached
from tests.hostile_support import crashed_rules, fuzz_settings, lint_in_process

WORK = tempfile.mkdtemp(prefix="graphlint-fuzz-onnx-")


class Seeds(dict):
    def __repr__(self) -> str:  # failing examples print their arguments: not megabytes of model
        return f"Seeds({sorted(self)})"


@pytest.fixture(scope="module")
def seeds() -> dict[str, bytes]:
    folder = cached("core", build_core.build)
    out = Seeds()
    for name in ("convnet_opset17.onnx", "convnet_dynamo.onnx"):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = f.read()
    return out


def write(name: str, data: bytes) -> str:
    path = os.path.join(WORK, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


# --- random small valid graphs ------------------------------------------------------------------

UNARY = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Identity", "Sqrt", "Softplus", "Erf"]
BINARY = ["Add", "Mul", "Sub", "Max", "Min"]
DTYPES = {T.FLOAT: np.float32, T.FLOAT16: np.float16}


@st.composite
def valid_graphs(draw) -> onnx.ModelProto:
    opset = draw(st.integers(13, 21))
    elem = draw(st.sampled_from(sorted(DTYPES)))
    rank = draw(st.integers(1, 4))
    dims: list = [draw(st.one_of(st.integers(1, 6), st.sampled_from(["batch", "seq", "n"]))) for _ in range(rank)]
    shape = list(dims)
    nodes, inits = [], []
    cur = "x"
    for i in range(draw(st.integers(1, 8))):
        out = f"t{i}"
        kind = draw(st.sampled_from(["unary", "binary", "softmax", "transpose", "reduce", "unsqueeze", "concat",
                                     "matmul", "flatten", "slice", "cast"]))
        if kind == "unary":
            nodes.append(h.make_node(draw(st.sampled_from(UNARY)), [cur], [out], name=f"n{i}"))
        elif kind == "binary":
            # a constant broadcastable to the current shape: trailing dims, each 1 or static
            k = draw(st.integers(0, len(shape)))
            cshape = [d if isinstance(d, int) and draw(st.booleans()) else 1 for d in shape[len(shape) - k:]]
            arr = np.full(cshape, draw(st.floats(-2, 2, width=16)), DTYPES[elem])
            inits.append(onnx.numpy_helper.from_array(arr, f"c{i}"))
            nodes.append(h.make_node(draw(st.sampled_from(BINARY)), [cur, f"c{i}"], [out], name=f"n{i}"))
        elif kind == "softmax":
            nodes.append(h.make_node("Softmax", [cur], [out], name=f"n{i}",
                                     axis=draw(st.integers(-len(shape), len(shape) - 1))))
        elif kind == "transpose":
            perm = draw(st.permutations(list(range(len(shape)))))
            nodes.append(h.make_node("Transpose", [cur], [out], name=f"n{i}", perm=perm))
            shape = [shape[p] for p in perm]
        elif kind == "reduce" and len(shape) > 1:
            axis = draw(st.integers(0, len(shape) - 1))
            if opset >= 18:
                inits.append(onnx.numpy_helper.from_array(np.array([axis], np.int64), f"ax{i}"))
                nodes.append(h.make_node("ReduceMean", [cur, f"ax{i}"], [out], name=f"n{i}", keepdims=1))
            else:
                nodes.append(h.make_node("ReduceMean", [cur], [out], name=f"n{i}", axes=[axis], keepdims=1))
            shape[axis] = 1
        elif kind == "unsqueeze" and len(shape) < 5:
            inits.append(onnx.numpy_helper.from_array(np.array([0], np.int64), f"ax{i}"))
            nodes.append(h.make_node("Unsqueeze", [cur, f"ax{i}"], [out], name=f"n{i}"))
            shape = [1, *shape]
        elif kind == "concat":
            axis = draw(st.integers(0, len(shape) - 1))
            nodes.append(h.make_node("Concat", [cur, cur], [out], name=f"n{i}", axis=axis))
            shape[axis] = shape[axis] * 2 if isinstance(shape[axis], int) else None
        elif kind == "matmul" and isinstance(shape[-1], int):
            n = draw(st.integers(1, 6))
            inits.append(onnx.numpy_helper.from_array(np.ones((shape[-1], n), DTYPES[elem]), f"w{i}"))
            nodes.append(h.make_node("MatMul", [cur, f"w{i}"], [out], name=f"n{i}"))
            shape[-1] = n
        elif kind == "flatten" and len(shape) >= 2:
            inits.append(onnx.numpy_helper.from_array(np.array([0, -1], np.int64), f"s{i}"))
            nodes.append(h.make_node("Reshape", [cur, f"s{i}"], [out], name=f"n{i}"))
            rest = shape[1:]
            shape = [shape[0], int(np.prod(rest)) if all(isinstance(d, int) for d in rest) else None]
        elif kind == "slice" and any(isinstance(d, int) and d > 1 for d in shape):
            axis = next(k for k, d in enumerate(shape) if isinstance(d, int) and d > 1)
            for nm, val in (("st", 0), ("en", shape[axis] - 1), ("ax", axis)):
                inits.append(onnx.numpy_helper.from_array(np.array([val], np.int64), f"{nm}{i}"))
            nodes.append(h.make_node("Slice", [cur, f"st{i}", f"en{i}", f"ax{i}"], [out], name=f"n{i}"))
            shape[axis] -= 1
        elif kind == "cast":
            other = T.FLOAT16 if elem == T.FLOAT else T.FLOAT
            nodes.append(h.make_node("Cast", [cur], [f"{out}c"], name=f"n{i}c", to=other))
            nodes.append(h.make_node("Cast", [f"{out}c"], [out], name=f"n{i}", to=elem))
        else:
            nodes.append(h.make_node("Identity", [cur], [out], name=f"n{i}"))
        cur = out
    nodes.append(h.make_node("Identity", [cur], ["y"], name="out"))
    g = h.make_graph(nodes, "fuzz", [h.make_tensor_value_info("x", elem, dims)],
                     [h.make_tensor_value_info("y", elem, shape)], initializer=inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=8)


@fuzz_settings(40)
@given(model=valid_graphs(), target=st.sampled_from(["trt", "ort", "trt@10.1"]))
def test_random_valid_graphs(model, target):
    onnx.checker.check_model(model, full_check=True)  # the generator makes valid models only
    path = write("valid.onnx", model.SerializeToString())
    code, run = lint_in_process([path], [target])
    assert code in (0, 1) and not run.failures, [f.message for f in run.failures]
    assert crashed_rules(run) == []


# --- structured mutations of real exports -------------------------------------------------------

WEIRD_INTS = [0, -1, 1, 2**31, 2**62, -(2**62), 7]
OPS = ["Relu", "Conv", "Gemm", "Reshape", "Resize", "If", "Loop", "Softmax", "NonZero", "Frobnicate", ""]


def mutate(model: onnx.ModelProto, data) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        what = data.draw(st.sampled_from([
            "op_type", "domain", "drop_input", "rename_input", "attr_int", "attr_type", "dim", "elem_type",
            "drop_init", "init_dims", "external", "opset", "ir_version", "dup_output", "subgraph",
        ]), label="what")
        node = g.node[data.draw(st.integers(0, len(g.node) - 1))] if len(g.node) else None
        if what == "op_type" and node is not None:
            node.op_type = data.draw(st.sampled_from(OPS))
        elif what == "domain" and node is not None:
            node.domain = data.draw(st.sampled_from(["com.microsoft", "ai.onnx.ml", "x.y", "ai.onnx"]))
        elif what == "drop_input" and node is not None and node.input:
            del node.input[data.draw(st.integers(0, len(node.input) - 1))]
        elif what == "rename_input" and node is not None and node.input:
            node.input[0] = data.draw(st.sampled_from(["", "ghost", g.output[0].name, node.output[0]]))
        elif what == "attr_int" and node is not None and node.attribute:
            a = node.attribute[data.draw(st.integers(0, len(node.attribute) - 1))]
            a.i = data.draw(st.sampled_from(WEIRD_INTS))
            if a.ints:
                a.ints[0] = data.draw(st.sampled_from(WEIRD_INTS))
        elif what == "attr_type" and node is not None and node.attribute:
            a = node.attribute[0]
            a.type = data.draw(st.integers(0, 14))  # any declared type (upb refuses undeclared enum values)
        elif what == "dim":
            vi = data.draw(st.sampled_from([*g.input, *g.output, *g.value_info])) if len(g.input) else None
            if vi is not None and vi.type.tensor_type.shape.dim:
                d = vi.type.tensor_type.shape.dim[0]
                if data.draw(st.booleans()):
                    d.dim_value = data.draw(st.sampled_from(WEIRD_INTS))
                else:
                    d.dim_param = data.draw(st.sampled_from(["", "b", "??", "N" * 300]))
        elif what == "elem_type" and len(g.input):
            g.input[0].type.tensor_type.elem_type = data.draw(st.sampled_from([0, 2, 7, 8, 9, 16, 40, 999]))
        elif what == "drop_init" and len(g.initializer):
            del g.initializer[data.draw(st.integers(0, len(g.initializer) - 1))]
        elif what == "init_dims" and len(g.initializer):
            t = g.initializer[data.draw(st.integers(0, len(g.initializer) - 1))]
            t.dims[:] = data.draw(st.lists(st.sampled_from(WEIRD_INTS), max_size=3))
        elif what == "external" and len(g.initializer):
            t = g.initializer[data.draw(st.integers(0, len(g.initializer) - 1))]
            t.data_location = T.EXTERNAL
            t.ClearField("raw_data")
            for k, v in (("location", data.draw(st.sampled_from(["/etc/passwd", "../x", "w.bin", "", "a\x00b"]))),
                         ("offset", data.draw(st.sampled_from(["0", "-3", "x", str(2**63)]))),
                         ("length", data.draw(st.sampled_from(["", "4", "-1", "1e9"])))):
                e = t.external_data.add()
                e.key, e.value = k, v
        elif what == "opset" and len(m.opset_import):
            m.opset_import[0].version = data.draw(st.sampled_from([0, 1, 6, 9, 17, 23, 99, -4]))
        elif what == "ir_version":
            m.ir_version = data.draw(st.sampled_from([0, 1, 3, 11, 99, -1]))
        elif what == "dup_output" and node is not None and len(g.node) > 1:
            g.node[0].output[0] = node.output[0]
        elif what == "subgraph" and node is not None:
            sub = h.make_graph([h.make_node("Identity", [node.input[0] if node.input else "x"], ["s"])], "sub", [],
                               [h.make_tensor_value_info("s", T.FLOAT, None)])
            node.attribute.append(h.make_attribute(data.draw(st.sampled_from(["then_branch", "body", "g"])), sub))
    return m


@fuzz_settings(60)
@given(data=st.data())
def test_structured_mutations_of_real_exports(seeds, data):
    name = data.draw(st.sampled_from(sorted(seeds)), label="seed")
    model = mutate(onnx.load_from_string(seeds[name]), data)
    path = write("mutant.onnx", model.SerializeToString())
    lint_in_process([path], [data.draw(st.sampled_from(["trt", "ort"]), label="target")])


# --- raw byte mutations ----------------------------------------------------------------------------

@st.composite
def byte_mutants(draw, seeds: dict[str, bytes]) -> bytes:
    data = bytearray(seeds[draw(st.sampled_from(sorted(seeds)))])
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "duplicate", "zero"]))
        i = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[i:]
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[i:i + draw(st.integers(1, 64))]
        elif op == "duplicate":
            data[i:i] = data[i:i + draw(st.integers(1, 256))]
        elif op == "zero":
            n = draw(st.integers(1, 32))
            data[i:i + n] = bytes(len(data[i:i + n]))
    return bytes(data)


@fuzz_settings(60)
@given(data=st.data())
def test_byte_mutations_of_real_exports(seeds, data):
    blob = data.draw(byte_mutants(seeds))
    assume(blob)
    path = write("bytes.onnx", blob)
    code, run = lint_in_process([path])
    if code == 2:
        (fail,) = run.failures
        assert fail.path == path
