"""Load an .onnx file into the normalized IR without reading external weight bytes.

Steps: parse the protobuf (external data never loaded), run ONNX shape inference with
data propagation once (failures become load issues, not crashes), then convert graphs,
subgraphs and functions iteratively (no recursion, so deeply nested If/Loop bodies are
safe). Node attributes are decoded only when a rule reads them. The main graph's nodes and
the inferred types, 100k+ of each in an LLM, go through the C part (``_fastbuild``) when it
is built; the Python loops beside it do the same where it is not, or declines the bytes.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import time
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from itertools import accumulate
from operator import attrgetter, methodcaller
from sys import intern
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
import onnx
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError

from graphlint import dtypes, forked
from graphlint.errors import DataError, InputError
from graphlint.ir import (
    NO_RT_INFO,
    NO_SUBGRAPHS,
    ONNX,
    ONNX_DOMAIN,
    Graph,
    LoadIssue,
    Model,
    Node,
    Tensor,
    Value,
    impossible_shape,
    norm_domain,
)
from graphlint.load import external, shape_infer
from graphlint.load.files import os_problem

try:
    from graphlint.load import _fastbuild
except ImportError:  # built without a C compiler: the Python loop does the same, slower
    _fastbuild = None

_c_infer_shapes = onnx.onnx_cpp2py_export.shape_inference.infer_shapes
_c_infer_shapes_path = onnx.onnx_cpp2py_export.shape_inference.infer_shapes_path
# Open files by descriptor path (Linux): onnx's file entry points then read and write exactly
# the files this process opened.
_PROC_FD = os.path.isdir("/proc/self/fd")

# Newest IR version this onnx build understands; newer files may parse but mean other things.
MAX_IR_VERSION = onnx.IR_VERSION
_GRAPH, _GRAPHS = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS
_NAME = attrgetter("name")


def read(path: str) -> tuple[bytes, FileKey]:
    """The file's bytes, and which file version they are (see :func:`file_key`)."""
    try:
        with open(path, "rb") as f:
            key = file_key(f.fileno())
            data = f.read()
    except OSError as e:
        raise InputError(path, os_problem(e)) from None
    if not data:
        raise InputError(path, "empty file, not an ONNX model")
    return data, key


FileKey = tuple[int, int, int, int]


def file_key(fd: int) -> FileKey:
    """Device, inode, size and mtime of an open file: the forked children read the model
    themselves, and their results count only if they read the same file as the parent."""
    st = os.fstat(fd)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def parse(path: str, data: bytes) -> onnx.ModelProto:
    """Parse the file's bytes ``data``; InputError with one line when they are no ONNX model."""
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        if "MaxDepth" in str(e):  # upb's nesting limit (100 messages, about 30 nested If/Loop bodies)
            raise InputError(path, "nested deeper than protobuf's limit of 100 messages (If/Loop bodies "
                                   "inside bodies); onnx and ONNX Runtime cannot load it either") from None
        raise InputError(path, f"not a valid ONNX protobuf ({str(e).splitlines()[0] or 'decode error'})") from None
    if not proto.HasField("graph") or (proto.ir_version <= 0 and not proto.opset_import):
        raise InputError(path, "parses as protobuf but is not an ONNX ModelProto (no graph or ir_version)")
    return proto


def infer_shapes(data: bytes, issues: list[LoadIssue]) -> bytes | None:
    """ONNX shape inference with data propagation on serialized model ``data``; the inferred
    model's bytes, or None when inference gave up.

    Strict mode first: on a clean model that is the only run, and on a broken one its
    errors (one line per failing node) are recorded as load issues; then a lenient run
    fills in every type it still can. (onnx's C entry point: the Python wrapper would
    parse the result, which only the types are needed from.)
    """
    guarded = shape_infer.without_negative_dims(data)
    if guarded is not data:  # GL0007 reports the dims themselves
        issues.append(LoadIssue("impossible-dims", "negative dims were hidden from ONNX shape inference"))
    return _strict_then_lenient(functools.partial(_c_infer_shapes, guarded), issues)


def _strict_then_lenient(infer: Callable[[bool, bool, bool], bytes], issues: list[LoadIssue]) -> bytes | None:
    try:
        return infer(True, True, True)  # check_type, strict_mode, data_prop
    except Exception as e:  # InferenceError, ValidationError, RuntimeError from C++
        for line in _error_lines(e):
            issues.append(LoadIssue("shape-inference", line, value=_node_in(line)))
    try:
        return infer(False, False, True)
    except Exception as e:
        issues.append(LoadIssue("shape-inference", f"shape inference gave up: {_first_line(e)}"))
        return None


def _infer_file(fd: int, out: Any, issues: list[LoadIssue]) -> bytes | None:
    """:func:`infer_shapes` on an open file, through onnx's file-to-file entry point: the bytes
    never pass through Python on the way in, nor as a second copy on the way out (80 MB less
    peak memory for a 40 MB model). The result goes through the scratch file ``out``."""
    src, dst = f"/proc/self/fd/{fd}", f"/proc/self/fd/{out.fileno()}"

    def infer(check_type: bool, strict: bool, data_prop: bool) -> bytes:
        _c_infer_shapes_path(src, dst, check_type, strict, data_prop)
        out.seek(0)
        return out.read()

    return _strict_then_lenient(infer, issues)


def _scratch_file() -> Any:
    """An unnamed temporary file that onnx can open by path (/proc/self/fd, Linux), or None."""
    if not _PROC_FD:
        return None
    try:
        return tempfile.TemporaryFile()
    except OSError:  # no writable temporary directory
        return None


class Types(NamedTuple):
    """What shape inference found, compactly (a 100k-node model's types pickle in 2 MB)."""

    # Per graph in graph_protos() order: value names (its value_info, then input, then output:
    # later entries win) and their indices into ``table``.
    graphs: list[tuple[list[str], list[int]]]
    table: list[tuple]  # the distinct (dtype, shape) pairs: a few dozen even in a 100k-node model
    outputs: list[bytes]  # the main graph's output ValueInfoProtos, serialized


def decode_types(model: Any, data: bytes | None = None) -> Types:
    """The types of every graph's value_info, inputs and outputs in ``model``: an onnx.ModelProto
    or a :func:`_types_only` message, parsed from ``data`` when given (the main graph's are then
    read from those bytes in C, about twice as fast)."""
    full = isinstance(model, onnx.ModelProto)
    table: list[tuple] = []
    index: dict[bytes, int] = {}
    get_type, serialize = attrgetter("type"), methodcaller("SerializeToString")
    from_string = onnx.TypeProto.FromString
    graphs = []
    fast = _fastbuild.value_types(data) if _fastbuild is not None and data is not None else None
    holders = None if full else _serialized_graph_holders
    if fast is not None and not full:
        holders = _main_first(_fastbuild.graph_holders(data))
    for gp in shape_infer.graph_protos(model, holders):
        if fast is not None:  # the main graph, which comes first
            names, ids, distinct = fast
            fast = None
        else:
            infos = (*gp.value_info, *gp.input, *gp.output)
            names = list(map(_NAME, infos))
            # The serialized TypeProto keys the table: one C call per value, each distinct type
            # decoded once (a few dozen in a 100k-node model; decoding dims field by field is 5x dearer).
            keys = list(map(serialize, map(get_type, infos)) if full else map(get_type, infos))
            local = {key: i for i, key in enumerate(dict.fromkeys(keys))}
            distinct, ids = list(local), list(map(local.__getitem__, keys))
        # This graph's distinct types -> the model's table
        remap = []
        for key in distinct:
            if key not in index:
                index[key] = len(table)
                table.append(_dims(from_string(key)))
            remap.append(index[key])
        graphs.append((names, list(map(remap.__getitem__, ids))))
    return Types(graphs, table, list(map(serialize, model.graph.output)))


# AttributeProto.type (field 20, varint) = GRAPH (5) or GRAPHS (10), as protobuf encodes them.
_GRAPH_TYPE_MARKS = (b"\xa0\x01\x05", b"\xa0\x01\x0a")


def _serialized_graph_holders(nodes: Any, hits: Iterable[int] | None = None) -> list[Any]:
    """shape_infer._graph_holders for a :func:`_types_only` graph, whose nodes stay serialized.

    Looking at each node would cost 1-2 µs; instead the marks of graph-typed attributes are
    searched in all the nodes' bytes at once (or were, in C: ``hits``), and only the nodes they
    fall in are parsed (a mark that is really tensor data, or spans two nodes, only costs a
    parse) and filtered as the full model's nodes are."""
    if hits is None:
        nodes = list(nodes)
        blob = b"".join(nodes)
        found_at: set[int] = set()
        ends: list[int] = []  # end offset of each node in blob, computed on the first hit
        for mark in _GRAPH_TYPE_MARKS:
            at = blob.find(mark)
            while at >= 0:
                ends = ends or list(accumulate(map(len, nodes)))
                found_at.add(bisect_right(ends, at))
                at = blob.find(mark, at + 1)
        hits = found_at
    node_class = _types_only().DESCRIPTOR.file.pool.FindMessageTypeByName("gl.Node")
    parse = message_factory.GetMessageClass(node_class).FromString
    found = (parse(nodes[i]) for i in sorted(hits))
    return [n for n in found if shape_infer.may_hold_graphs(n.op_type, n.domain)]


def _main_first(main_hits: list[int] | None) -> Callable[[Any], list[Any]]:
    """_serialized_graph_holders, given the main graph's ``hits`` (found in C), for graph_protos(),
    which asks for the main graph's holders first."""
    pending = [main_hits]

    def holders(nodes: Any) -> list[Any]:
        return _serialized_graph_holders(nodes, pending.pop() if pending else None)

    return holders


@functools.cache
def _types_only() -> type:
    """A ModelProto look-alike that parses only what decode_types() reads: graphs' value_info,
    inputs and outputs (names, TypeProtos kept serialized) and the nodes that hold graphs.

    An inferred 100k-node model parses in half the time, its 100k types are read as bytes
    instead of a message each that is then serialized again, and nodes stay bytes until
    :func:`_serialized_graph_holders` picks the few with graphs. Field numbers are onnx.proto's;
    every other field is an unknown field, kept as bytes (so an output serializes unchanged).
    """
    f = descriptor_pb2.FieldDescriptorProto
    one, many = f.LABEL_OPTIONAL, f.LABEL_REPEATED
    file = descriptor_pb2.FileDescriptorProto(name="graphlint_onnx_types.proto", package="gl", syntax="proto2")
    for name, fields in {
        "ValueInfo": [("name", 1, f.TYPE_STRING, one), ("type", 2, f.TYPE_BYTES, one)],
        "Attribute": [("type", 20, f.TYPE_INT32, one), ("g", 6, "Graph", one), ("graphs", 11, "Graph", many)],
        "Node": [("op_type", 4, f.TYPE_STRING, one), ("domain", 7, f.TYPE_STRING, one),
                 ("attribute", 5, "Attribute", many)],
        "Graph": [("node", 1, f.TYPE_BYTES, many), ("input", 11, "ValueInfo", many),
                  ("output", 12, "ValueInfo", many), ("value_info", 13, "ValueInfo", many)],
        "Function": [("node", 7, f.TYPE_BYTES, many)],
        "Model": [("graph", 7, "Graph", one), ("functions", 25, "Function", many)],
    }.items():
        message = file.message_type.add(name=name)
        for field_name, number, kind, label in fields:
            if isinstance(kind, str):
                message.field.add(name=field_name, number=number, label=label, type=f.TYPE_MESSAGE,
                                  type_name=f".gl.{kind}")
            else:
                message.field.add(name=field_name, number=number, label=label, type=kind)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("gl.Model"))


def infer_types(data: bytes, inferred_hook: Callable[[], None] = lambda: None) -> tuple[Types | None, list[LoadIssue]]:
    """Shape inference on the file bytes, decoded to types (None when inference gave up);
    runs in the forked child or in-process. ``inferred_hook`` runs once onnx is done, before
    the decoding (the forked child lets the checker start then)."""
    issues: list[LoadIssue] = []
    inferred = infer_shapes(data, issues)
    inferred_hook()
    del data
    return (None if inferred is None else decode_types(_types_only().FromString(inferred), inferred)), issues


def infer_types_at(path: str, inferred_hook: Callable[[], None] = lambda: None,
                   ) -> tuple[FileKey, tuple[Types | None, list[LoadIssue]]]:
    """:func:`infer_types` on the file at ``path`` (the forked child's work), and which file
    version it read.

    The child's stderr goes to /dev/null: onnx can abort on a hostile model and print its
    assertion there (onnx#8481, see shape_infer.without_negative_dims); the parent then redoes
    the work in-process on the guarded bytes, and the user's terminal stays clean.
    """
    _silence_stderr()
    with open(path, "rb") as f:
        key = file_key(f.fileno())
        out = _scratch_file()
        if out is None:
            return key, infer_types(f.read(), inferred_hook)
        issues: list[LoadIssue] = []
        with out:
            inferred = _infer_file(f.fileno(), out, issues)
        inferred_hook()
        if inferred is None:
            return key, (None, issues)
        lite = _types_only().FromString(inferred)
        if not lite.HasField("graph"):
            # onnx writes the result without checking the write (a full disk leaves the file
            # empty or cut short): infer from the bytes instead. (A cut inside the graph fails
            # the parse above, and the parent then redoes the work in-process.)
            f.seek(0)
            return key, infer_types(f.read())
    return key, (decode_types(lite, inferred), issues)


def _silence_stderr() -> None:
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    os.dup2(fd, 2)
    os.close(fd)


def checker_verdict_at(path: str) -> tuple[FileKey, str | None]:
    """:func:`checker_verdict` on the file at ``path`` (the forked child's work)."""
    with open(path, "rb") as f:
        key = file_key(f.fileno())
        data = f.read()
    return key, checker_verdict(data)


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
    return Tensor(tp.name, dtype, tuple(tp.dims), _EmbeddedReader(tp))


class _EmbeddedReader:
    """Reads an embedded tensor's data (a slotted object: a quarter of a closure's memory,
    and an LLM has tens of thousands of initializers)."""

    __slots__ = ("tp",)

    def __init__(self, tp: onnx.TensorProto) -> None:
        self.tp = tp

    def __call__(self) -> np.ndarray:
        tp = self.tp
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


class _Converter:
    def __init__(self, path: str, proto: onnx.ModelProto, issues: list[LoadIssue], data: bytes | None = None) -> None:
        self.path = path
        self.proto = proto
        self.data = data  # the file's bytes (proto serialized), which _fast_nodes() reads the main graph from
        self.issues = issues
        self.opsets = {norm_domain(o.domain): o.version for o in proto.opset_import}
        # (graph, initializer fallback types) per non-function graph, in graph_protos() order,
        # for apply_types().
        self.typed: list[tuple[Graph, list[tuple[Value, str | None, tuple | None]]]] = []
        self.node_protos: dict[Graph, Any] = {}  # each graph's NodeProtos, by node.index
        self.guessed: dict[Graph, tuple[list[Value], list[str]]] = {}  # see guess_order()

    @functools.cached_property
    def resolver(self) -> external.Resolver:
        """External data locations, vetted once each (against the model's folder and, when the
        model path is a symlink, the real file's folder)."""
        return external.Resolver(os.path.dirname(os.path.abspath(self.path)),
                                 also_root=os.path.dirname(os.path.realpath(self.path)))

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
            real = self.resolver.resolve(ref, expected)
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

    def early_types(self, main: Graph, declared: dict[str, tuple]) -> None:
        """Types known before inference: constants' own, then the main graph's declared inputs."""
        for _, fallback in self.typed:
            for v, dtype, shape in fallback:
                v.dtype, v.shape = dtype, shape
        for v in main.inputs:
            v.dtype, v.shape = declared.get(v.name, (None, None))

    def apply_types(self, types: Types | None) -> None:
        """Value types from inference (or, when it gave up, the file's own value_info, inputs and
        outputs), else from initializers."""
        if types is not None:
            self._set_outputs(types.outputs)
        graphs, table, _ = types if types is not None else decode_types(self.proto)
        if any(impossible_shape(shape) for _, shape in table):  # a few dozen distinct types: GL0007 looks closer
            self.issues.append(LoadIssue("impossible-dims", "a declared or inferred shape cannot exist"))
        if len(graphs) != len(self.typed):  # cannot happen for the same bytes; refuse rather than mis-assign
            raise RuntimeError(f"shape inference returned {len(graphs)} graphs for {len(self.typed)}")
        for (graph, fallback), (names, ids) in zip(self.typed, graphs, strict=True):
            values = graph.values
            found, guessed_names = self.guessed.get(graph, (None, None))
            if guessed_names != names:  # (a right guess holds only Values)
                found = list(map(values.get, names))  # lookups at C speed, yet 0.6 µs each: 100k+ values
                if None in found:  # value_info naming a value no node uses
                    found = [v if v is not None else values.setdefault(name, Value(name, graph))
                             for name, v in zip(names, found, strict=True)]
            _assign(found, list(map(table.__getitem__, ids)))
            for v, dtype, shape in fallback:
                if v.dtype is None:
                    v.dtype, v.shape = dtype, shape
        self.typed, self.guessed = [], {}  # needed once; the nodes keep the converter (and so this) alive

    def guess_order(self) -> None:
        """Guess, while inference runs, the values its types will come for, in order: onnx lists
        the node outputs it typed (graph outputs aside), then the graph's inputs and outputs.
        apply_types() checks the guess name by name, several times cheaper than looking 100k names
        up in a big dict, and falls back to the lookups when it is wrong (a file with value_info
        of its own, an output inference could not type)."""
        for graph, _ in self.typed:
            guess = [*(v for node in graph.nodes for v in node.outputs if v.name and not v.is_output),
                     *graph.inputs, *graph.outputs]
            self.guessed[graph] = guess, list(map(_NAME, guess))

    def _set_outputs(self, outputs: list[bytes]) -> None:
        """Give ``proto``'s main graph outputs the types inference found: onnx.checker rejects an
        untyped graph output, and GL0001 reports what the checker says of the inferred model."""
        gp = self.proto.graph
        if list(map(methodcaller("SerializeToString"), gp.output)) != outputs:
            gp.ClearField("output")
            gp.output.extend(map(onnx.ValueInfoProto.FromString, outputs))

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
            self.typed.append((graph, fallback))
            for vi in gp.input:
                v = value(vi.name)
                v.is_input = True
                graph.inputs.append(v)
        for name in (gp.output if is_function else (o.name for o in gp.output)):
            v = value(name)
            v.is_output = True
            graph.outputs.append(v)

        self.node_protos[graph] = gp.node
        main = graph.owner is None and not is_function
        picked = self._fast_nodes(graph, gp, opsets) if main else None
        if picked is None:
            picked = self._nodes(graph, gp, opsets)
        # Attributes are read for the few nodes that may hold graphs or are Constants only (reading
        # them costs 2 µs a node).
        for i in picked:
            node, np_ = graph.nodes[i], gp.node[i]
            if shape_infer.may_hold_graphs(node.op_type, node.domain):
                self._subgraphs(node, np_, opsets, queue)
            elif node.op_type == "Constant" and node.outputs:
                node.outputs[0].const = _constant_tensor(np_, self, graph.path)
        names = list(map(_NAME, graph.nodes))
        # A string that is not UTF-8 comes out of protobuf as bytes, on which str.join fails at C
        # speed (TypeError, see _convert); op types and domains were interned, which fails alike.
        "".join(names), "".join(graph.values), "".join((graph.name, graph.path))
        self._duplicate_names(graph, names)

    def _nodes(self, graph: Graph, gp: Any, opsets: dict[str, int]) -> list[int]:
        """Build ``gp``'s nodes into ``graph``; the indices of those _fill() finishes (_PICKED)."""
        # Runs once per node (100k+ in an LLM): graph.value() and norm_domain() are inlined.
        nodes = graph.nodes
        values = graph.values
        opset_of = opsets.get
        picked = []
        for i, np_ in enumerate(gp.node):
            domain = np_.domain
            # One string per op type and domain, not per node (intern() also refuses the bytes
            # protobuf hands back for a string that is not UTF-8: see _convert()).
            domain = ONNX_DOMAIN if domain in ("", "ai.onnx") else intern(domain)
            op_type = intern(np_.op_type)
            node = _OnnxNode(np_.name, self, graph, i, op_type, domain, opset_of(domain))
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
            if domain != ONNX_DOMAIN or op_type in _PICKED:
                picked.append(i)
            nodes.append(node)
        return picked

    def _fast_nodes(self, graph: Graph, gp: Any, opsets: dict[str, int]) -> list[int] | None:
        """What _nodes() does, in C from the file's bytes (about 5x faster), or None when the C
        part is not built or declines the bytes (see _fastbuild.c)."""
        data, self.data = self.data, None  # needed for the main graph only
        if _fastbuild is None or data is None:
            return None
        return _fastbuild.fill(data, len(gp.node), graph, _OnnxNode("", self, graph, 0, "", ONNX_DOMAIN, None),
                               _NODE_SLOTS, Value("", graph), _VALUE_SLOTS, ONNX_DOMAIN, opsets, _PICKED)

    def _subgraphs(self, node: Node, np_: onnx.NodeProto, opsets: dict[str, int], queue: deque) -> None:
        for a in np_.attribute:
            t = a.type
            if t == _GRAPH:
                self._sub(node, a.name, a.g, opsets, queue)
            elif t == _GRAPHS:
                for k, g in enumerate(a.graphs):
                    self._sub(node, f"{a.name}[{k}]", g, opsets, queue)

    def _duplicate_names(self, graph: Graph, names: list[str]) -> None:
        """ONNX requires node names unique per graph; reports and engines key layers by them."""
        if len(set(names)) + names.count("") - ("" in names) == len(names):
            return  # the usual case, checked at C speed
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
        if node.subgraphs is NO_SUBGRAPHS:
            node.subgraphs = {}
        node.subgraphs[attr] = sub
        queue.append((sub, gp, opsets))


class _OnnxNode(Node):
    """A Node built from a NodeProto, decoding its attributes from it on first use.

    The loader's hot path builds 100k+ of these: one object a node (no decoder object, no
    throw-away lists), positional arguments, and a shared empty ``subgraphs`` until a graph
    attribute gives it one.
    """

    __slots__ = ("_conv",)  # the NodeProto is looked up when needed: a wrapper each costs 100 bytes

    def __init__(self, name: str, conv: _Converter, graph: Graph, index: int, op_type: str,
                 domain: str, opset: int | None) -> None:
        self.op_type = op_type
        self.name = name
        self.graph = graph
        self.index = index
        self.dialect = ONNX
        self.domain = domain
        self.opset = opset
        self.subgraphs = NO_SUBGRAPHS  # type: ignore[assignment]
        self._decode = None
        self._attrs = None
        self.source = None
        self._meta = None  # read from the NodeProto on first use
        self._conv = conv  # inputs and outputs: set by the converter

    @property
    def attrs(self) -> dict[str, Any]:
        if self._attrs is None:
            graph = self.graph
            self._attrs = _decode_attrs(self._conv.node_protos[graph][self.index], self._conv, graph.path)
        return self._attrs

    @property
    def metadata(self) -> Mapping[str, str]:
        if self._meta is None:
            self._meta = _node_metadata(self._conv.node_protos[self.graph][self.index])
        return self._meta


def _node_metadata(np_: onnx.NodeProto) -> Mapping[str, str]:
    """A NodeProto's metadata_props and doc_string (strings that are not UTF-8 decoded with
    replacement characters: only reports read them)."""
    def text(s: str | bytes) -> str:
        return s.decode("utf-8", "replace") if isinstance(s, bytes) else s

    meta = {text(p.key): text(p.value) for p in np_.metadata_props}
    if np_.doc_string:
        meta.setdefault("doc_string", text(np_.doc_string))
    return MappingProxyType(meta) if meta else NO_RT_INFO


def _slot_names(cls: type) -> tuple[str, ...]:
    return tuple(name for klass in cls.__mro__ for name in getattr(klass, "__slots__", ()))


# What _fastbuild.fill() needs to make Nodes and Values as _nodes() does.
_NODE_SLOTS, _VALUE_SLOTS = _slot_names(_OnnxNode), _slot_names(Value)
# Nodes whose attributes _fill() reads: other domains' and those with graph attributes
# (shape_infer.may_hold_graphs), and Constants.
_PICKED = shape_infer.GRAPH_OPS | {"Constant"}


def _assign(values: list[Value], types: list[tuple]) -> None:
    """values[i].dtype, values[i].shape = types[i] (in C when built: 100k+ values)."""
    if _fastbuild is not None:
        _fastbuild.assign(values, types, Value, _VALUE_SLOTS)
        return
    for v, (dtype, shape) in zip(values, types, strict=True):
        v.dtype, v.shape = dtype, shape


def _decode_attrs(np_: onnx.NodeProto, conv: _Converter, graph_path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in np_.attribute:
        t = a.type
        read = _PLAIN_ATTRS.get(t)
        if read is not None:
            out[a.name] = read(a)
        elif t == _TENSOR:
            out[a.name] = conv.tensor(a.t, graph_path)
        elif t in (_GRAPH, _GRAPHS):
            continue  # available as node.subgraphs
        elif a.ref_attr_name:
            out[a.name] = ("@ref", a.ref_attr_name)
        else:
            try:
                out[a.name] = onnx.helper.get_attribute_value(a)
            except Exception:  # unknown or malformed attribute type
                out[a.name] = None
    return out


_TENSOR = onnx.AttributeProto.TENSOR
# How each plain attribute type is read (a dict lookup instead of a chain of comparisons: attributes
# of 30k nodes are decoded during the early shape pass, on a big model's longest path).
_PLAIN_ATTRS: dict[int, Callable[[Any], Any]] = {
    onnx.AttributeProto.INT: attrgetter("i"),
    onnx.AttributeProto.INTS: lambda a: list(a.ints),
    onnx.AttributeProto.FLOAT: attrgetter("f"),
    onnx.AttributeProto.FLOATS: lambda a: list(a.floats),
    onnx.AttributeProto.STRING: lambda a: a.s.decode("utf-8", "replace"),
    onnx.AttributeProto.STRINGS: lambda a: [s.decode("utf-8", "replace") for s in a.strings],
}


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


def load(path: str, *, infer: bool = True, defer_types: bool = False, _decode: bool = False) -> Model:
    """Load ``path``; with ``defer_types`` a forked inference child may still be running when this
    returns (``model.ready()`` waits for it and applies its types), else the model is complete."""
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    # Fork before reading: the children read the file themselves, so they start sooner and
    # hold neither its bytes nor the parsed model.
    children = (_STARTED.pop(path, None) or _start_children(path)) if infer and not _decode else None
    try:
        data, key = read(path)
        proto = None
        if _decode:  # second pass for a model with non-UTF-8 strings (see _undecoded)
            proto = parse(path, data)
            _decode_strings(proto)
            data, key = proto.SerializeToString(), None
            children = _start_children(path, data) if infer else None
        if proto is None:
            proto = parse(path, data)
        t1 = timings["parse"] = time.perf_counter() - t0
        issues: list[LoadIssue] = []
        declared = {vi.name: _dims(vi.type) for vi in (*proto.graph.input, *proto.graph.output)}
        conv = _Converter(path, proto, issues, data)
        if children is not None:
            del data  # the children read their own; the converter drops it after the main graph
            main, functions = _convert(conv, _decode)
            conv.early_types(main, declared)
            timings["build IR (shape inference + checker in parallel)"] = time.perf_counter() - t0 - t1
        else:
            types, inference_issues = infer_types(data) if infer else (None, [])
            issues.extend(inference_issues)  # before the converter's own issues, as in a forked load
            del data
            t2 = time.perf_counter() - t0
            timings["shape inference"] = t2 - t1
            main, functions = _convert(conv, _decode)
            conv.apply_types(types)
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
            proto=proto,
            declared_io=declared,
            timings=timings,
            _pending=None if children is None else functools.partial(_finish_forked, conv, children, key),
            _arrived=None if children is None else children[0].done,
        )
        if not _decode and _undecoded(model):
            raise _NotUtf8
        if not defer_types:
            model.ready()
            model.wait_background()
    except _NotUtf8:
        _cancel(children)
        model = load(path, infer=infer, defer_types=defer_types, _decode=True)
        model.issues.append(LoadIssue("invalid-utf8", "some names or strings in the model are not valid UTF-8 "
                                                      "(shown with replacement characters)"))
    except BaseException:
        _cancel(children)
        raise
    return model


class _NotUtf8(Exception):
    """Some string of the model is not UTF-8: load it again with its strings decoded."""


def _convert(conv: _Converter, decoded: bool) -> tuple[Graph, dict[tuple[str, str], Graph]]:
    """``conv.convert()``; a name, op type or domain that is not UTF-8 (bytes, which the converter's
    checks refuse with TypeError) raises _NotUtf8 unless the strings were decoded already."""
    try:
        return conv.convert()
    except TypeError:
        if decoded:
            raise
        raise _NotUtf8 from None


Children = tuple[forked.Pending, forked.Pending]


def _start_children(path: str, data: bytes | None = None) -> Children | None:
    """Fork shape inference and the checker on the file at ``path`` (or on ``data``, then they
    report no file key), when it is worth it."""
    try:
        size = os.stat(path).st_size if data is None else len(data)
    except OSError:
        return None  # read() says why
    if not shape_infer.can_fork(size):
        return None
    checker_work = (functools.partial(checker_verdict_at, path) if data is None
                    else functools.partial(_keyless, checker_verdict, data))
    # Gated until a core is free: only GL0001 reads the verdict, and the engine runs it last, so
    # the checker must not slow down the parent and the inference child, the critical path. The
    # inference child lets it start once onnx is done, before it decodes the types; the parent
    # as soon as it has nothing left to do but wait for them (or once that child died).
    checker = forked.start(checker_work, gated=True)
    try:
        infer_work = (functools.partial(infer_types_at, path, checker.release) if data is None
                      else functools.partial(_keyless, functools.partial(infer_types, inferred_hook=checker.release),
                                             data))
        inference = forked.start(infer_work)
    except BaseException:
        checker.cancel()
        raise
    return inference, checker


_STARTED: dict[str, Children] = {}


def start_early(path: str) -> None:
    """Fork the children for ``path`` now: the command line does this first, before its own
    start-up (configuration, rule packs: about 0.1 s), since on a big model the children's
    work is the longest path. The next load() of ``path`` takes them; children nobody takes
    are cancelled with the rest when the command ends (forked.cancel_all)."""
    if path not in _STARTED and (children := _start_children(path)) is not None:
        _STARTED[path] = children


@functools.cache
def warm_schemas() -> None:
    """Build onnx's operator schema registry in this process (about 30 ms, once): children
    forked later inherit it instead of each building its own, which is most of what inference
    and the checker cost on a model of a few thousand nodes."""
    onnx.defs.has("Add")


def _keyless(work: Callable[[bytes], Any], data: bytes) -> tuple[None, Any]:
    return None, work(data)


def _joined(child: forked.Pending, key: FileKey | None) -> Any:
    """A child's result, or DIED when it died or read another version of the file."""
    result = child.join()
    if result is forked.DIED or result[0] != key:
        return forked.DIED
    return result[1]


def checker_verdict(data: bytes) -> str | None:
    """onnx.checker's verdict on the model as inference leaves it (what GL0001 reports, and what
    model.proto holds): the file's own bytes unless the checker fails them, since inference may
    type graph outputs that the checker rejects untyped or unshaped."""
    verdict = shape_infer.checker_verdict(data)
    if verdict is not None:
        inferred = infer_shapes(data, [])
        if inferred is not None:
            verdict = shape_infer.checker_verdict(inferred)
    return verdict


def _cancel(children: Children | None) -> None:
    for child in children or ():
        child.cancel()


def _finish_forked(conv: _Converter, children: Children, key: FileKey | None, model: Model) -> None:
    """Model.ready() of a forked load: wait for the inference child and apply the inferred
    types and issues; the checker's verdict stays in the background (GL0001 waits for it)."""
    timings = model.timings
    t0 = time.perf_counter()
    inference, checker = children
    try:
        if not inference.done():  # while waiting anyway
            warm_schemas()
            conv.guess_order()
            if not inference.done():
                checker.release()  # this process waits: the checker can have its core meanwhile
        result = _joined(inference, key)
        checker.release()  # the core inference used is free now (the inference child released it too)
        if result is forked.DIED:  # redo in-process what the child could not finish
            result = infer_types(conv.proto.SerializeToString())
    except BaseException:
        _cancel(children)
        raise
    t1 = time.perf_counter()
    timings["wait for shape inference"] = t1 - t0
    types, inference_issues = result
    model.issues[:0] = inference_issues  # same order as in-process: inference issues first
    conv.apply_types(types)
    timings["merge inferred types"] = time.perf_counter() - t1
    model.background["onnx_checker"] = _CheckerVerdict(checker, key, model)


class _CheckerVerdict:
    """onnx.checker's verdict from its child (GL0001 waits for it), or in-process if it died."""

    def __init__(self, child: forked.Pending, key: FileKey | None, model: Model) -> None:
        self.child, self.key, self.model = child, key, model

    def result(self) -> str | None:
        verdict = _joined(self.child, self.key)
        return shape_infer.checker_verdict(self.model.proto) if verdict is forked.DIED else verdict or None

    def cancel(self) -> None:
        self.child.cancel()


def _undecoded(model: Model) -> bool:
    """Whether a model-level string came out of protobuf as bytes (a proto2 string that is not
    UTF-8). The graphs' names, op types and domains were checked as the IR was built."""
    try:
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
