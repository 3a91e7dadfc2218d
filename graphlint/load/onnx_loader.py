"""Load an .onnx file into the normalized IR without reading external weight bytes.

Steps: parse the protobuf (external data never loaded), run ONNX shape inference with
data propagation once (failures become load issues, not crashes), then convert graphs,
subgraphs and functions iteratively (no recursion, so deeply nested If/Loop bodies are
safe). Node attributes are decoded only when a rule reads them.
"""

from __future__ import annotations

import os
import re
from collections import deque
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from graphlint import dtypes
from graphlint.errors import InputError
from graphlint.ir import ONNX, ONNX_DOMAIN, Graph, LoadIssue, Model, Node, Tensor, Value, norm_domain
from graphlint.load import external

# Newest IR version this onnx build understands; newer files may parse but mean other things.
MAX_IR_VERSION = onnx.IR_VERSION


def parse(path: str) -> onnx.ModelProto:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a model file") from None
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except PermissionError:
        raise InputError(path, "permission denied") from None
    except OSError as e:
        raise InputError(path, f"cannot read ({e.strerror})") from None
    if not data:
        raise InputError(path, "empty file, not an ONNX model")
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise InputError(path, f"not a valid ONNX protobuf ({str(e).splitlines()[0] or 'decode error'})") from None
    del data
    if not proto.HasField("graph") or (proto.ir_version <= 0 and not proto.opset_import):
        raise InputError(path, "parses as protobuf but is not an ONNX ModelProto (no graph or ir_version)")
    return proto


def infer_shapes(proto: onnx.ModelProto, issues: list[LoadIssue]) -> onnx.ModelProto:
    """ONNX shape inference with data propagation, run once.

    Strict mode first: on a clean model that is the only run, and on a broken one its
    errors (one line per failing node) are recorded as load issues; then a lenient run
    fills in every type it still can.
    """
    infer = onnx.shape_inference.infer_shapes
    try:
        return infer(proto, check_type=True, strict_mode=True, data_prop=True)
    except Exception as e:  # InferenceError, ValidationError, RuntimeError from C++
        for line in _error_lines(e):
            issues.append(LoadIssue("shape-inference", line, value=_node_in(line)))
    try:
        return infer(proto, check_type=False, strict_mode=False, data_prop=True)
    except Exception as e:
        issues.append(LoadIssue("shape-inference", f"shape inference gave up: {_first_line(e)}"))
        return proto


_NODE_RE = re.compile(r"node name: ([^)]*)\)")


def _node_in(line: str) -> str | None:
    m = _NODE_RE.search(line)
    return m.group(1).strip() if m else None


def _error_lines(e: BaseException) -> list[str]:
    text = str(e).strip()
    text = re.sub(r"^\[ShapeInferenceError\] Inference error\(s\):\s*", "", text)
    return [ln.strip() for ln in text.splitlines() if ln.strip()] or [type(e).__name__]


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _dims(type_proto: Any) -> tuple[str | None, tuple | None]:
    which = type_proto.WhichOneof("value")
    if which != "tensor_type":
        return (which, None) if which else (None, None)
    tt = type_proto.tensor_type
    dtype = dtypes.onnx_dtype(tt.elem_type)
    if not tt.HasField("shape"):
        return dtype, None
    shape = []
    for d in tt.shape.dim:
        k = d.WhichOneof("value")
        shape.append(d.dim_value if k == "dim_value" else d.dim_param if k == "dim_param" else None)
    return dtype, tuple(shape)


def _embedded_tensor(tp: onnx.TensorProto) -> Tensor:
    dtype = dtypes.onnx_dtype(tp.data_type) or f"onnx:{tp.data_type}"
    return Tensor(tp.name, dtype, tuple(tp.dims), lambda: onnx.numpy_helper.to_array(tp))


class _Converter:
    def __init__(self, path: str, proto: onnx.ModelProto, issues: list[LoadIssue]) -> None:
        self.path = path
        self.dir = os.path.dirname(os.path.abspath(path))
        self.proto = proto
        self.issues = issues
        self.opsets = {norm_domain(o.domain): o.version for o in proto.opset_import}
        self.value_info: dict[str, Any] = {}

    def tensor(self, tp: onnx.TensorProto, graph_path: str) -> Tensor:
        if tp.data_location != onnx.TensorProto.EXTERNAL:
            return _embedded_tensor(tp)
        dtype = dtypes.onnx_dtype(tp.data_type) or f"onnx:{tp.data_type}"
        shape = tuple(tp.dims)
        np_dtype = dtypes.to_numpy(dtype)
        n = 1
        for d in shape:
            n *= d
        expected = n * np_dtype.itemsize if np_dtype is not None else None
        try:
            ref = external.parse_ref({e.key: e.value for e in tp.external_data})
            real = external.resolve(self.dir, ref, expected)
        except external.ExternalDataRefused as e:
            self.issues.append(
                LoadIssue("external-data", f"external data of {tp.name!r} refused: {e}", value=tp.name,
                          graph_path=graph_path)
            )
            return Tensor(tp.name, dtype, shape, None, location="external:refused")
        read = (
            external.reader(real, ref.offset, expected, np_dtype, shape)
            if np_dtype is not None and expected is not None
            else None
        )
        return Tensor(tp.name, dtype, shape, read, location=f"external:{ref.location}", nbytes=expected)

    def convert(self) -> tuple[Graph, dict[tuple[str, str], Graph]]:
        main = Graph(self.proto.graph.name or "main", "main")
        queue: deque[tuple[Graph, Any, dict[str, int]]] = deque([(main, self.proto.graph, self.opsets)])
        functions: dict[tuple[str, str], Graph] = {}
        for fn in self.proto.functions:
            g = Graph(fn.name, f"function:{fn.domain}.{fn.name}")
            fn_opsets = {norm_domain(o.domain): o.version for o in fn.opset_import} or self.opsets
            functions[(norm_domain(fn.domain), fn.name)] = g
            queue.append((g, fn, fn_opsets))
        while queue:
            graph, gp, opsets = queue.popleft()
            self._fill(graph, gp, opsets, queue)
        return main, functions

    def _fill(self, graph: Graph, gp: Any, opsets: dict[str, int], queue: deque) -> None:
        is_function = isinstance(gp, onnx.FunctionProto)
        value = graph.value
        if is_function:
            for name in gp.input:
                v = value(name)
                v.is_input = True
                graph.inputs.append(v)
        else:
            for vi in (*gp.value_info, *gp.input, *gp.output):
                v = value(vi.name)
                v.dtype, v.shape = _dims(vi.type)
            for tp in gp.initializer:
                v = value(tp.name)
                v.const = self.tensor(tp, graph.path)
                if v.dtype is None:
                    v.dtype, v.shape = v.const.dtype, v.const.shape
            for sp in gp.sparse_initializer:
                v = value(sp.values.name)
                dt = dtypes.onnx_dtype(sp.values.data_type)
                v.const = Tensor(sp.values.name, dt or "?", tuple(sp.dims), None, location="sparse")
                if v.dtype is None:
                    v.dtype, v.shape = dt, tuple(sp.dims)
            for vi in gp.input:
                v = value(vi.name)
                v.is_input = True
                graph.inputs.append(v)
        for name in (gp.output if is_function else (o.name for o in gp.output)):
            v = value(name)
            v.is_output = True
            graph.outputs.append(v)

        nodes = graph.nodes
        for i, np_ in enumerate(gp.node):
            domain = norm_domain(np_.domain)
            node = Node(
                np_.op_type,
                np_.name,
                graph,
                i,
                dialect=ONNX,
                domain=domain,
                opset=opsets.get(domain),
                decode=_attr_decoder(np_, self, graph.path),
            )
            node.inputs = [value(n) if n else None for n in np_.input]
            for v in node.inputs:
                if v is not None:
                    v.consumers.append(node)
            outs = []
            for n in np_.output:
                v = value(n) if n else Value("", graph)
                if n:
                    v.producer = node
                outs.append(v)
            node.outputs = outs
            for a in np_.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    self._sub(node, a.name, a.g, opsets, queue)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for k, g in enumerate(a.graphs):
                        self._sub(node, f"{a.name}[{k}]", g, opsets, queue)
            if node.op_type == "Constant" and domain == ONNX_DOMAIN and outs:
                outs[0].const = _constant_tensor(np_, self, graph.path)
            nodes.append(node)

    def _sub(self, node: Node, attr: str, gp: onnx.GraphProto, opsets: dict[str, int], queue: deque) -> None:
        sub = Graph(gp.name or attr, f"{node.graph.path}/{node.label}/{attr}", owner=node)
        node.subgraphs[attr] = sub
        queue.append((sub, gp, opsets))


def _attr_decoder(np_: onnx.NodeProto, conv: _Converter, graph_path: str):
    def decode() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for a in np_.attribute:
            t = a.type
            if t == onnx.AttributeProto.TENSOR:
                out[a.name] = conv.tensor(a.t, graph_path)
            elif t in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                continue  # available as node.subgraphs
            elif t == onnx.AttributeProto.STRING:
                out[a.name] = a.s.decode("utf-8", "replace")
            elif t == onnx.AttributeProto.STRINGS:
                out[a.name] = [s.decode("utf-8", "replace") for s in a.strings]
            elif t == onnx.AttributeProto.FLOAT:
                out[a.name] = a.f
            elif t == onnx.AttributeProto.INT:
                out[a.name] = a.i
            elif t == onnx.AttributeProto.FLOATS:
                out[a.name] = list(a.floats)
            elif t == onnx.AttributeProto.INTS:
                out[a.name] = list(a.ints)
            elif a.ref_attr_name:
                out[a.name] = ("@ref", a.ref_attr_name)
            else:
                try:
                    out[a.name] = onnx.helper.get_attribute_value(a)
                except Exception:  # unknown or malformed attribute type
                    out[a.name] = None
        return out

    return decode


def _constant_tensor(np_: onnx.NodeProto, conv: _Converter, graph_path: str) -> Tensor | None:
    for a in np_.attribute:
        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
            return conv.tensor(a.t, graph_path)
        simple = {
            "value_float": ("float32", lambda a=a: np.array(a.f, np.float32)),
            "value_int": ("int64", lambda a=a: np.array(a.i, np.int64)),
            "value_floats": ("float32", lambda a=a: np.array(list(a.floats), np.float32)),
            "value_ints": ("int64", lambda a=a: np.array(list(a.ints), np.int64)),
        }.get(a.name)
        if simple:
            dtype, read = simple
            shape = () if a.name in ("value_float", "value_int") else (len(a.floats) or len(a.ints),)
            return Tensor(np_.output[0], dtype, shape, read)
    return None


def load(path: str, *, infer: bool = True) -> Model:
    proto = parse(path)
    issues: list[LoadIssue] = []
    declared = {vi.name: _dims(vi.type) for vi in (*proto.graph.input, *proto.graph.output)}
    inferred = infer_shapes(proto, issues) if infer else proto
    conv = _Converter(path, inferred, issues)
    main, functions = conv.convert()
    model = Model(
        path=path,
        format="onnx",
        graph=main,
        dialect=ONNX,
        ir_version=proto.ir_version,
        opset_imports=conv.opsets,
        producer=proto.producer_name,
        producer_version=proto.producer_version,
        metadata={p.key: p.value for p in proto.metadata_props},
        functions=functions,
        issues=issues,
        proto=inferred,
        declared_io=declared,
    )
    return model
