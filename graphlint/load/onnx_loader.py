"""Load an .onnx file into the IR without reading external weight bytes.

Steps: read and parse the file with onnx (external data never loaded), run ONNX shape
inference with data propagation (failures become load issues, not crashes; on a big file in a
child process started before the parse, see graphlint.load.inference), build the IR
(graphlint.load.onnx_build) and give its values the inferred types. The model returned is
complete; onnx.checker's verdict may still be on its way from the child (``background``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError

from graphlint import procs
from graphlint.errors import InputError
from graphlint.ir import ONNX, Graph, LoadIssue, Model, freeze_structure
from graphlint.load import inference
from graphlint.load.files import os_problem
from graphlint.load.onnx_build import Builder
from graphlint.load.onnx_types import dims

# Newest IR version this onnx build understands; newer files may parse but mean other things.
MAX_IR_VERSION = onnx.IR_VERSION


def read(path: str) -> tuple[bytes, inference.FileKey]:
    """The file's bytes, and which file version they are."""
    try:
        with open(path, "rb") as f:
            key = inference.file_key(f.fileno())
            data = f.read()
    except OSError as e:
        raise InputError(path, os_problem(e)) from None
    if not data:
        raise InputError(path, "empty file, not an ONNX model")
    return data, key


def parse(path: str, data: bytes) -> onnx.ModelProto:
    """Parse the file's bytes ``data``; InputError with one line when they are no ONNX model."""
    try:
        proto = onnx.load_model_from_string(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        if "MaxDepth" in str(e):  # upb's nesting limit (100 messages, about 30 nested If/Loop bodies)
            raise InputError(path, "nested deeper than protobuf's limit of 100 messages (If/Loop bodies "
                                   "inside bodies); onnx and ONNX Runtime cannot load it either") from None
        raise InputError(path, f"not a valid ONNX protobuf ({str(e).splitlines()[0] or 'decode error'})") from None
    if not proto.HasField("graph") or (proto.ir_version <= 0 and not proto.opset_import):
        raise InputError(path, "parses as protobuf but is not an ONNX ModelProto (no graph or ir_version)")
    return proto


def load(path: str) -> Model:
    """The complete model at ``path`` (onnx.checker's verdict not included: see :func:`load_with_background`)."""
    model, background = load_with_background(path, child=False)
    assert not background
    return model


# Work on the main graph's structure (nodes and the tensors between them, no types), by the
# name its result goes under in ``background``: see load_with_background.
StructureWork = Mapping[str, Callable[[Graph], Any]]


def load_with_background(path: str, *, child: bool = True,
                         meanwhile: StructureWork | None = None) -> tuple[Model, dict[str, Any]]:
    """The complete model at ``path``, and the results still computed in the child for it
    (``{"onnx_checker": ...}`` when one was forked: see graphlint.load.inference).

    ``meanwhile``: functions of the main graph's structure alone, run while the child infers
    the types (the parent would wait idle), after the graphs and nodes are frozen; their
    results go in ``background`` under their names. Without a child they are not run."""
    started = inference.start(path) if child else None
    early: dict[str, Any] = {}
    try:
        model, key = _load(path, started, meanwhile or {}, early)
    except BaseException:
        if started is not None:
            started.child.cancel()
        raise
    if started is None:
        return model, {}
    return model, {**early, "onnx_checker": inference.CheckerVerdict(started, key, model.proto)}


class _NotUtf8(Exception):
    """Some string of the model is not UTF-8: load it again with its strings decoded."""


def _load(path: str, started: inference.Started | None, meanwhile: StructureWork,
          early: dict[str, Any]) -> tuple[Model, inference.FileKey | None]:
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    data, key = read(path)
    proto = parse(path, data)
    t1 = timings["parse"] = time.perf_counter() - t0
    # Without a child, inference runs here on the bytes at hand; either way they are dropped
    # before the IR is built (a child reads the file itself).
    inferred = inference.infer_types(data) if started is None else None
    suspect = started is not None and inference.may_have_negative_dims(data)
    del data
    try:
        model = _build(path, proto, inferred, started, key, timings, meanwhile, early, suspect)
    except _NotUtf8:
        early.clear()
        _decode_strings(proto)
        key = None  # the child's answer was about the file's bytes, not these
        model = _build(path, proto, inference.infer_types(proto.SerializeToString()), None, key, timings, {}, early)
        model.issues.append(LoadIssue("invalid-utf8", "some names or strings in the model are not valid UTF-8 "
                                                      "(shown with replacement characters)"))
    timings["build IR and types"] = (time.perf_counter() - t0 - t1 - timings.get("wait for shape inference", 0.0)
                                     - timings.get("structure work while inference runs", 0.0))
    return model, key


def _build(path: str, proto: onnx.ModelProto, inferred: inference.Inferred | None, started: inference.Started | None,
           key: inference.FileKey | None, timings: dict[str, float], meanwhile: StructureWork,
           early: dict[str, Any], suspect: bool = False) -> Model:
    issues: list[LoadIssue] = []
    declared = {vi.name: dims(vi.type) for vi in (*proto.graph.input, *proto.graph.output)}
    builder = Builder(path, proto, issues)
    try:
        main, functions = builder.convert()
    except TypeError:  # a name, op type or domain that is not UTF-8 (see Builder._fill)
        raise _NotUtf8 from None
    if inferred is None:
        assert started is not None
        if meanwhile:
            t = time.perf_counter()
            freeze_structure((main, *functions.values()))
            for name, work in meanwhile.items():
                early[name] = done = Future()
                done.set_result(work(main))
            timings["structure work while inference runs"] = time.perf_counter() - t
        t = time.perf_counter()
        # Negative declared dims: the child inferred unguarded; redo it as in-process inference does.
        own = suspect and (builder.negative_tensor_dims or inference.has_negative_dims(builder.graph_protos, tensors=False))
        result = procs.DIED if own else inference.joined(started.inference, key)
        # redo in-process what the child could not finish
        inferred = inference.infer_types(proto.SerializeToString()) if result is procs.DIED else result
        timings["wait for shape inference"] = time.perf_counter() - t
    types, inference_issues = inferred
    builder.apply_types(types)
    model = Model(
        path=path,
        format="onnx",
        graph=main,
        dialect=ONNX,
        ir_version=proto.ir_version,
        opset_imports=builder.opsets,
        producer=proto.producer_name,
        producer_version=proto.producer_version,
        metadata={p.key: p.value for p in proto.metadata_props},
        functions=functions,
        issues=[*inference_issues, *issues],  # inference's first, then the builder's
        proto=proto,
        declared_io=declared,
        timings=timings,
    )
    if _undecoded(model):
        raise _NotUtf8
    return model


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
