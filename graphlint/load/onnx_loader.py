"""Load an .onnx file into the normalized IR without reading external weight bytes.

Steps: parse the protobuf (external data never loaded), run ONNX shape inference with
data propagation once (failures become load issues, not crashes), then convert graphs,
subgraphs and functions iteratively (no recursion, so deeply nested If/Loop bodies are
safe). Node attributes are decoded only when a rule reads them.
"""

from __future__ import annotations

import os
import re
import time
from collections import deque
from operator import attrgetter
from typing import Any

import numpy as np
import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError

from graphlint import dtypes
from graphlint.errors import DataError, InputError
from graphlint.ir import ONNX, ONNX_DOMAIN, Graph, LoadIssue, Model, Node, Tensor, Value, norm_domain
from graphlint.load import external, shape_infer
from graphlint.load.files import os_problem

# Newest IR version this onnx build understands; newer files may parse but mean other things.
MAX_IR_VERSION = onnx.IR_VERSION
_GRAPH, _GRAPHS = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS


def parse(path: str, keep: list[bytes] | None = None) -> onnx.ModelProto:
    """Parse ``path``; ``keep`` receives the file bytes (shape inference takes them as they are)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(path, os_problem(e)) from None
    if not data:
        raise InputError(path, "empty file, not an ONNX model")
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        if "MaxDepth" in str(e):  # upb's nesting limit (100 messages, about 30 nested If/Loop bodies)
            raise InputError(path, "nested deeper than protobuf's limit of 100 messages (If/Loop bodies "
                                   "inside bodies); onnx and ONNX Runtime cannot load it either") from None
        raise InputError(path, f"not a valid ONNX protobuf ({str(e).splitlines()[0] or 'decode error'})") from None
    if keep is not None:
        keep.append(data)
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


def _count(dims: Any) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _embedded_tensor(tp: onnx.TensorProto) -> Tensor:
    dtype = dtypes.onnx_dtype(tp.data_type) or f"onnx:{tp.data_type}"

    def read() -> np.ndarray:
        # to_array reshapes the data it has (never allocates the declared size); a mismatch
        # between dims and data, or an unknown type, becomes the documented DataError.
        try:
            return onnx.numpy_helper.to_array(tp)
        except UnicodeDecodeError:  # string tensors need not be UTF-8: keep the bytes
            strings = np.empty(len(tp.string_data), dtype=object)
            strings[:] = list(tp.string_data)
            if strings.size == _count(tp.dims):
                return strings.reshape(tuple(tp.dims))
            raise DataError(f"tensor {tp.name!r} declares {list(tp.dims)} but holds {strings.size} strings") from None
        except Exception as e:
            raise DataError(f"tensor {tp.name!r} data cannot be read: {_first_line(e)}") from None

    return Tensor(tp.name, dtype, tuple(tp.dims), read)


class _Converter:
    def __init__(self, path: str, proto: onnx.ModelProto, issues: list[LoadIssue]) -> None:
        self.path = path
        self.dir = os.path.dirname(os.path.abspath(path))
        self.real_dir = os.path.dirname(os.path.realpath(path))  # differs when the model is a symlink
        self.proto = proto
        self.issues = issues
        self.opsets = {norm_domain(o.domain): o.version for o in proto.opset_import}
        self.value_info: dict[str, Any] = {}
        # (graph, GraphProto, initializer fallback types) per non-function graph, in BFS order;
        # apply_types() reads their (possibly just merged) value_info.
        self.typed: list[tuple[Graph, Any, list[tuple[Value, str | None, tuple | None]]]] = []
        self._types: dict[bytes, tuple] = {}  # serialized TypeProto -> (dtype, shape), shared tuples

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
            real = external.resolve(self.dir, ref, expected, also_root=self.real_dir)
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

    def convert(self, types: bool = True) -> tuple[Graph, dict[tuple[str, str], Graph]]:
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
        if types:
            self.apply_types()
        return main, functions

    def apply_types(self) -> None:
        """Value types from value_info/inputs/outputs (later wins), else from initializers."""
        cache = self._types
        for graph, gp, fallback in self.typed:
            value = graph.value
            for vi in (*gp.value_info, *gp.input, *gp.output):
                t = vi.type
                key = t.SerializeToString()  # one C call; decoding dims field by field is 5x dearer
                r = cache.get(key)
                if r is None:
                    r = cache[key] = _dims(t)
                v = value(vi.name)
                v.dtype, v.shape = r
            for v, dtype, shape in fallback:
                if v.dtype is None:
                    v.dtype, v.shape = dtype, shape

    def _fill(self, graph: Graph, gp: Any, opsets: dict[str, int], queue: deque) -> None:
        is_function = isinstance(gp, onnx.FunctionProto)
        value = graph.value
        if is_function:
            for name in gp.input:
                v = value(name)
                v.is_input = True
                graph.inputs.append(v)
        else:
            # Types come later, from apply_types(): shape inference may still be running.
            for vi in (*gp.value_info, *gp.input, *gp.output):
                value(vi.name)
            fallback: list[tuple[Value, str | None, tuple | None]] = []
            for tp in gp.initializer:
                v = value(tp.name)
                v.const = self.tensor(tp, graph.path)
                fallback.append((v, v.const.dtype, v.const.shape))
            for sp in gp.sparse_initializer:
                v = value(sp.values.name)
                dt = dtypes.onnx_dtype(sp.values.data_type)
                v.const = Tensor(sp.values.name, dt or "?", tuple(sp.dims), None, location="sparse")
                fallback.append((v, dt, tuple(sp.dims)))
            self.typed.append((graph, gp, fallback))
            for vi in gp.input:
                v = value(vi.name)
                v.is_input = True
                graph.inputs.append(v)
        for name in (gp.output if is_function else (o.name for o in gp.output)):
            v = value(name)
            v.is_output = True
            graph.outputs.append(v)

        # Runs once per node (100k+ in an LLM): graph.value() and norm_domain() are inlined.
        nodes = graph.nodes
        values = graph.values
        path = graph.path
        opset_of = opsets.get
        for i, np_ in enumerate(gp.node):
            domain = np_.domain
            if domain in ("", "ai.onnx"):
                domain = ONNX_DOMAIN
            op_type = np_.op_type
            node = Node(op_type, np_.name, graph, i, dialect=ONNX, domain=domain, opset=opset_of(domain),
                        decode=_LazyAttrs(np_, self, path))
            ins: list[Value | None] = []
            for n in np_.input:
                if n:
                    v = values.get(n)
                    if v is None:
                        v = values[n] = Value(n, graph)
                    v.consumers.append(node)
                    ins.append(v)
                else:
                    ins.append(None)
            node.inputs = ins
            outs = []
            for n in np_.output:
                if n:
                    v = values.get(n)
                    if v is None:
                        v = values[n] = Value(n, graph)
                    v.producer = node
                else:
                    v = Value("", graph)
                outs.append(v)
            node.outputs = outs
            for a in np_.attribute:
                t = a.type
                if t == _GRAPH:
                    self._sub(node, a.name, a.g, opsets, queue)
                elif t == _GRAPHS:
                    for k, g in enumerate(a.graphs):
                        self._sub(node, f"{a.name}[{k}]", g, opsets, queue)
            if op_type == "Constant" and domain == ONNX_DOMAIN and outs:
                outs[0].const = _constant_tensor(np_, self, path)
            nodes.append(node)
        self._duplicate_names(graph)

    def _duplicate_names(self, graph: Graph) -> None:
        """ONNX requires node names unique per graph; reports and engines key layers by them."""
        seen: dict[str, Node] = {}
        for node in graph.nodes:
            if node.name and seen.setdefault(node.name, node) is not node:
                self.issues.append(LoadIssue(
                    "duplicate-node-name",
                    f"node {node.name!r} ({node.op_type}) reuses the name of node #{seen[node.name].index}; "
                    f"ONNX requires node names to be unique within a graph",
                    node=node, graph_path=graph.path))

    def _sub(self, node: Node, attr: str, gp: onnx.GraphProto, opsets: dict[str, int], queue: deque) -> None:
        sub = Graph(gp.name or attr, f"{node.graph.path}/{node.label}/{attr}", owner=node)
        node.subgraphs[attr] = sub
        queue.append((sub, gp, opsets))


class _LazyAttrs:
    """A node's attribute decoder: a slotted object costs a third of a closure per node."""

    __slots__ = ("conv", "graph_path", "np_")

    def __init__(self, np_: onnx.NodeProto, conv: _Converter, graph_path: str) -> None:
        self.np_, self.conv, self.graph_path = np_, conv, graph_path

    def __call__(self) -> dict[str, Any]:
        return _attr_decoder(self.np_, self.conv, self.graph_path)()


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


def load(path: str, *, infer: bool = True, _decode: bool = False) -> Model:
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    keep: list[bytes] = []
    proto = parse(path, keep=keep)
    data = keep.pop()
    t1 = timings["parse"] = time.perf_counter() - t0
    if _decode:  # second pass for a model with non-UTF-8 strings (see _undecoded)
        _decode_strings(proto)
        data = proto.SerializeToString()
    issues: list[LoadIssue] = []
    declared = {vi.name: _dims(vi.type) for vi in (*proto.graph.input, *proto.graph.output)}
    precomputed: dict[str, Any] = {}
    pending = shape_infer.start(data, len(proto.graph.node), infer_shapes, check=True) if infer else None
    if pending is not None:
        # Inference (then onnx.checker) runs in a child while this process builds the IR.
        del data
        conv = _Converter(path, proto, issues)
        try:
            main, functions = conv.convert(types=False)
        except BaseException:
            pending.cancel()
            raise
        t2 = time.perf_counter() - t0
        timings["build IR (shape inference + checker in parallel)"] = t2 - t1
        result = pending.join() or shape_infer._work(proto.SerializeToString(), infer_shapes, False)
        t3 = time.perf_counter() - t0
        timings["wait for shape inference"] = t3 - t2
        parts, inference_issues, verdict = result
        issues[:0] = inference_issues  # same order as in-process: inference issues first
        if parts is not None:
            shape_infer.merge([gp for _, gp, _ in conv.typed], parts)
        conv.apply_types()
        timings["merge inferred types"] = time.perf_counter() - t0 - t3
        inferred = proto
        if verdict != shape_infer.NOT_CHECKED:
            precomputed["onnx_checker"] = verdict or None
    else:
        # onnx's infer_shapes takes the file bytes as they are: no re-serialization.
        inferred = infer_shapes(data, issues) if infer else proto  # type: ignore[arg-type]
        del data
        t2 = time.perf_counter() - t0
        timings["shape inference"] = t2 - t1
        if not isinstance(inferred, onnx.ModelProto):  # inference gave up and returned its input
            inferred = proto
        proto = inferred  # drop the uninferred copy now (same header fields)
        conv = _Converter(path, inferred, issues)
        main, functions = conv.convert()
        timings["build IR"] = time.perf_counter() - t0 - t2
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
        precomputed=precomputed,
        timings=timings,
    )
    if not _decode and _undecoded(model):
        model = load(path, infer=infer, _decode=True)
        model.issues.append(LoadIssue("invalid-utf8", "some names or strings in the model are not valid UTF-8 "
                                                      "(shown with replacement characters)"))
    return model


def _undecoded(model: Model) -> bool:
    """Whether any name came out of protobuf as bytes (proto2 strings that are not UTF-8).

    ``str.join`` raises on the first bytes object at C speed, so a clean model costs a few
    joins per graph rather than a Python loop over every name.
    """
    name, op, dom = attrgetter("name"), attrgetter("op_type"), attrgetter("domain")
    try:
        for g in (*model.graph.graphs(), *model.functions.values()):
            "".join(g.values)
            for get in (name, op, dom):
                "".join(map(get, g.nodes))
            "".join((g.name, g.path))
        "".join((*model.opset_imports, *model.metadata, *model.metadata.values(), model.producer,
                 model.producer_version))
    except TypeError:
        return True
    return False


def _decode_strings(root: Any) -> None:
    """Replace every bytes-valued string field in the message tree by its UTF-8 decoding (iteratively)."""
    string, message = FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE
    stack = [root]
    while stack:
        msg = stack.pop()
        for fd, val in msg.ListFields():
            repeated = fd.is_repeated
            if fd.type == message:
                if repeated:
                    stack.extend(val)
                else:
                    stack.append(val)
            elif fd.type == string:
                if repeated:
                    if any(type(x) is bytes for x in val):
                        val[:] = [x.decode("utf-8", "replace") if type(x) is bytes else x for x in val]
                elif type(val) is bytes:
                    setattr(msg, fd.name, val.decode("utf-8", "replace"))
