"""Broken and hostile .onnx files: a finding or one clear error line, never a crash.

Each case builds its file in tmp_path; the contract checks live in tests/hostile_support.py.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from graphlint.errors import DataError
from graphlint.load import load_model
from tests.hostile_support import assert_input_error, assert_loads, messages, nested_if_model


def vi(name: str, dims, dtype=T.FLOAT) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, dtype, dims)


def model(nodes, inputs, outputs, inits=(), opsets=(("", 17),), sparse=()) -> onnx.ModelProto:
    g = h.make_graph(nodes, "g", inputs, outputs, initializer=list(inits), sparse_initializer=list(sparse))
    return h.make_model(g, opset_imports=[h.make_opsetid(d, v) for d, v in opsets])


def relu() -> onnx.ModelProto:
    return model([h.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [1, 4])], [vi("y", [1, 4])])


def write(tmp_path, name: str, data: bytes | onnx.ModelProto) -> str:
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.SerializeToString())
    return str(p)


# --- files that are not an ONNX model: exit 2 --------------------------------------------------

def test_empty_file(tmp_path):
    assert_input_error(write(tmp_path, "empty.onnx", b""), str(tmp_path), says="empty")


def test_random_bytes(tmp_path):
    rng = np.random.default_rng(7)
    for i in range(5):
        p = write(tmp_path, f"random{i}.onnx", rng.bytes(int(rng.integers(1, 4096))))
        assert_input_error(p, str(tmp_path))


def test_truncated_at_many_offsets(tmp_path):
    """Every cut either fails with one line or (a cut between fields) still parses as a model."""
    data = relu().SerializeToString()
    failed = loaded = 0
    for cut in range(1, len(data), 3):
        p = write(tmp_path, "cut.onnx", data[:cut])
        try:
            load_model(p)
            loaded += 1
        except Exception as e:
            assert type(e).__name__ == "InputError", (cut, e)
            failed += 1
    assert failed > len(data) // 6
    # and through the CLI contract for a few of them
    for cut in (1, 10, len(data) // 2, len(data) - 1):
        p = write(tmp_path, f"cut{cut}.onnx", data[:cut])
        try:
            load_model(p)
        except Exception:
            assert_input_error(p, str(tmp_path))
        else:
            assert_loads(p, str(tmp_path))


def test_valid_protobuf_of_the_wrong_message(tmp_path):
    tensor = h.make_tensor("t", T.FLOAT, [2], [1.0, 2.0])
    assert_input_error(write(tmp_path, "tensor.onnx", tensor.SerializeToString()), str(tmp_path))
    graph_only = relu().graph.SerializeToString()
    assert_input_error(write(tmp_path, "graph.onnx", graph_only), str(tmp_path), says="not an ONNX ModelProto")


# --- models that load but are wrong: findings, exit 1 -----------------------------------------

def test_ir_version_from_the_future(tmp_path):
    m = relu()
    m.ir_version = 99
    run = assert_loads(write(tmp_path, "future.onnx", m), str(tmp_path))
    assert "IR version 99" in messages(run)


def test_unknown_opset_domain(tmp_path):
    m = model([h.make_node("Frob", ["x"], ["y"], domain="com.evil", name="frob")], [vi("x", [1, 4])],
              [vi("y", [1, 4])], opsets=(("", 17), ("com.evil", 3)))
    run = assert_loads(write(tmp_path, "domain.onnx", m), str(tmp_path), "--target", "trt")
    assert "'com.evil'" in messages(run)


def test_cycle(tmp_path):
    nodes = [h.make_node("Relu", ["b"], ["a"], name="n1"), h.make_node("Relu", ["a"], ["b"], name="n2"),
             h.make_node("Add", ["x", "a"], ["y"], name="add")]
    m = model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])])
    run = assert_loads(write(tmp_path, "cycle.onnx", m), str(tmp_path))
    assert "on a cycle through it" in messages(run)


def test_input_nothing_produces(tmp_path):
    m = model([h.make_node("Add", ["x", "ghost"], ["y"], name="add")], [vi("x", [1, 4])], [vi("y", [1, 4])])
    run = assert_loads(write(tmp_path, "dangling.onnx", m), str(tmp_path))
    assert "input 'ghost' is not produced by any node" in messages(run)


def test_duplicate_value_names(tmp_path):
    nodes = [h.make_node("Relu", ["x"], ["y"], name="a"), h.make_node("Sigmoid", ["x"], ["y"], name="b")]
    run = assert_loads(write(tmp_path, "dupv.onnx", model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])])),
                       str(tmp_path))
    assert "'y' is assigned more than once" in messages(run)


def test_duplicate_node_names(tmp_path):
    nodes = [h.make_node("Relu", ["x"], ["t"], name="same"), h.make_node("Relu", ["t"], ["y"], name="same")]
    p = write(tmp_path, "dupn.onnx", model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])]))
    run = assert_loads(p, str(tmp_path))
    (dup,) = [x for x in run["results"] if x["properties"].get("details", {}).get("kind") == "duplicate-node-name"]
    assert dup["ruleId"] == "GL9001" and "node #0" in dup["message"]["text"]


def test_missing_subgraph_attributes(tmp_path):
    for op, extra in (("If", {}), ("Loop", {}), ("Scan", {"num_scan_inputs": 1})):
        inputs = ["c"] if op == "If" else ["", "c"] if op == "Loop" else ["x"]
        m = model([h.make_node(op, inputs, ["y"], name="ctl", **extra)],
                  [vi("c", [], T.BOOL), vi("x", [1, 4])], [vi("y", None)])
        run = assert_loads(write(tmp_path, f"nosub_{op}.onnx", m), str(tmp_path))
        assert "Required attribute" in messages(run), op


def test_if_nested_just_under_the_protobuf_limit_loads(tmp_path):
    p = write(tmp_path, "nested30.onnx", nested_if_model(30))
    m = load_model(p)
    assert max(g.path.count("/then_branch") for g in m.graph.graphs()) == 30
    assert_loads(p, str(tmp_path))


@pytest.mark.parametrize("depth", [300, 3000])
def test_if_nested_hundreds_deep_is_one_line_not_recursion_error(tmp_path, depth):
    p = write(tmp_path, f"nested{depth}.onnx", nested_if_model(depth))
    with pytest.raises(Exception, match="MaxDepth"):
        onnx.load(p)  # the onnx library itself cannot read it either
    assert_input_error(p, str(tmp_path), says="nested deeper")


def test_dims_of_2_pow_62_and_negative(tmp_path):
    m = model([h.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2**62, -5])], [vi("y", [1, 4])])
    run = assert_loads(write(tmp_path, "dims.onnx", m), str(tmp_path))
    assert str(2**62) in messages(run)


def test_initializer_declaring_2_pow_62_elements_is_never_allocated(tmp_path):
    w = T(name="w", data_type=T.FLOAT, dims=[2**62, 4], raw_data=b"\0" * 16)
    m = model([h.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x", [1, 4])], [vi("y", [1, 4])], [w])
    p = write(tmp_path, "huge.onnx", m)
    run = assert_loads(p, str(tmp_path))
    assert "dimension product overflow" in messages(run)
    tensor = load_model(p).graph.values["w"].const
    with pytest.raises(DataError, match="'w'"):
        tensor.numpy()


def test_declared_size_disagrees_with_data(tmp_path):
    short = T(name="w", data_type=T.FLOAT, dims=[1, 4], raw_data=b"\0" * 8)
    long = T(name="v", data_type=T.FLOAT, dims=[1, 1], float_data=[1.0, 2.0, 3.0])
    nodes = [h.make_node("Add", ["x", "w"], ["t"], name="add"), h.make_node("Mul", ["t", "v"], ["y"], name="mul")]
    p = write(tmp_path, "mismatch.onnx", model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])], [short, long]))
    run = assert_loads(p, str(tmp_path))
    assert "raw_data size (8 bytes) is too small" in messages(run)
    values = load_model(p).graph.values
    for name in ("w", "v"):
        with pytest.raises(DataError):
            values[name].const.numpy()


def test_string_tensors(tmp_path):
    utf8 = h.make_tensor("s", T.STRING, [2], vals=["a", "é"])
    raw = h.make_tensor("r", T.STRING, [2], vals=[b"a", b"\xff\xfe"])  # not UTF-8: kept as bytes
    short = T(name="q", data_type=T.STRING, dims=[3], string_data=[b"\xff"])
    nodes = [h.make_node("Identity", [n], [f"y{n}"], name=f"id_{n}") for n in "srq"]
    m = model(nodes, [], [vi(f"y{n}", None, T.STRING) for n in "srq"], [utf8, raw, short])
    p = write(tmp_path, "string.onnx", m)
    assert_loads(p, str(tmp_path), "--target", "ort")
    values = load_model(p).graph.values
    assert values["s"].const.numpy().tolist() == ["a", "é"]
    assert values["r"].const.numpy().tolist() == [b"a", b"\xff\xfe"]
    with pytest.raises(DataError, match="holds 1 strings"):
        values["q"].const.numpy()


def test_sparse_initializer(tmp_path):
    sp = h.make_sparse_tensor(h.make_tensor("sv", T.FLOAT, [2], [1.0, 2.0]),
                              h.make_tensor("si", T.INT64, [2], [0, 3]), [1, 4])
    m = model([h.make_node("Add", ["x", "sv"], ["y"], name="add")], [vi("x", [1, 4])], [vi("y", [1, 4])],
              sparse=[sp])
    p = write(tmp_path, "sparse.onnx", m)
    assert_loads(p, str(tmp_path))
    v = load_model(p).graph.values["sv"]
    assert v.const is not None and v.const.shape == (1, 4) and v.const.location == "sparse"


def test_sparse_initializer_claiming_2_pow_62_elements(tmp_path):
    sp = h.make_sparse_tensor(h.make_tensor("sv", T.FLOAT, [1], [1.0]), h.make_tensor("si", T.INT64, [1], [0]),
                              [2**62])
    m = model([h.make_node("Identity", ["sv"], ["y"], name="id")], [], [vi("y", None)], sparse=[sp])
    assert_loads(write(tmp_path, "sparse_huge.onnx", m), str(tmp_path))


def test_constant_of_shape_with_enormous_shape_is_not_materialized(tmp_path):
    shape = h.make_tensor("shape", T.INT64, [2], [2**40, 2**40])
    nodes = [h.make_node("ConstantOfShape", ["shape"], ["z"], name="cos"),
             h.make_node("Add", ["x", "z"], ["y"], name="add")]
    run = assert_loads(write(tmp_path, "cos.onnx", model(nodes, [vi("x", [1, 4])], [vi("y", None)], [shape])),
                       str(tmp_path))
    assert run["results"]  # the broadcast of [1,4] with [2^40,2^40] is reported, not computed


def test_directory_named_like_a_model(tmp_path):
    d = tmp_path / "model.onnx"
    d.mkdir()
    assert_input_error(str(d), str(tmp_path), says="directory")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_fifo_named_like_a_model_is_not_read(tmp_path):
    """Reading a FIFO would block forever: refused from stat alone."""
    p = tmp_path / "pipe.onnx"
    os.mkfifo(p)
    assert_input_error(str(p), str(tmp_path), says="not a regular file")


def test_symlink_to_a_device_is_not_read(tmp_path):
    p = tmp_path / "zero.onnx"
    os.symlink("/dev/zero", p)
    assert_input_error(str(p), str(tmp_path), says="not a regular file")


def test_op_type_and_domain_that_are_not_utf8(tmp_path):
    """An op type or domain protobuf hands back as bytes loads with its strings decoded (the IR
    interns both, which bytes would break), the same way as names."""
    m = relu()
    m.graph.node[0].op_type = "OPTYPE_D"
    m.graph.node.add().CopyFrom(h.make_node("Identity", ["y"], ["z"], name="other", domain="DOMAIN_E"))
    m.graph.output[0].name = "z"
    m.opset_import.add(domain="DOMAIN_E", version=1)
    data = m.SerializeToString()
    for marker, junk in ((b"OPTYPE_D", b"OP\xffTYPED"), (b"DOMAIN_E", b"DO\xfeMAINE")):
        assert data.count(marker) >= 1
        data = data.replace(marker, junk)
    p = write(tmp_path, "utf8op.onnx", data)
    run = assert_loads(p, str(tmp_path))
    assert "not valid UTF-8" in messages(run)
    model = load_model(p)
    assert [(n.op_type, n.domain) for n in model.graph.nodes] == [("OP\ufffdTYPED", "ai.onnx"),
                                                                  ("Identity", "DO\ufffdMAINE")]


def test_names_that_are_not_utf8(tmp_path):
    """proto2 hands invalid UTF-8 strings back as bytes: they must not reach sorting or JSON."""
    m = relu()
    m.graph.node[0].name = "NAME_A"
    m.graph.output[0].name = "OUT_B"
    m.graph.node[0].output[0] = "OUT_B"
    m.metadata_props.add(key="k", value="META_C")
    data = m.SerializeToString()
    for marker, junk in ((b"NAME_A", b"\xff\xfeAAAA"), (b"OUT_B", b"o\xc3(BB"), (b"META_C", b"\x80CCCCC")):
        data = data.replace(marker, junk)  # same length: the protobuf framing stays valid
    p = write(tmp_path, "utf8.onnx", data)
    run = assert_loads(p, str(tmp_path))
    assert "not valid UTF-8" in messages(run)
    model = load_model(p)
    assert model.graph.nodes[0].name == "\ufffd\ufffdAAAA" and "o\ufffd(BB" in model.graph.values
    assert isinstance(model.proto.graph.output[0].name, str)
