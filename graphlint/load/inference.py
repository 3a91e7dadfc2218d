"""ONNX shape inference and onnx.checker, in-process or in a forked child.

Shape inference is the largest single cost of linting a big model, and it is C++ that holds
the GIL. When the machine has a second core and the file is large, the loader forks a child
before it parses the file (:func:`start`): the child runs inference on the file by path
(``onnx.shape_inference.infer_shapes_path``, so the bytes never pass through Python), sends
back only the decoded types, and then runs onnx.checker, which only GL0001 waits for, so
its verdict arrives while the parent runs the other rules. A child's answer counts only if it
read the same file version as the parent (device, inode, size, mtime); otherwise, or when the
child died, the parent does the work itself.

onnx's shape inference aborts the whole process on some negative dims (onnx#8481): what runs
in-process is given bytes with those dims cleared (:func:`without_negative_dims`); the child
reads the file itself, unguarded, with its stderr sent to /dev/null. When it dies of it, or the
model has such dims at all (its answer is then not the guarded one), the parent redoes the
work in-process, guarded.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from itertools import compress
from operator import attrgetter
from typing import Any, NamedTuple

import onnx

from graphlint import procs
from graphlint.ir import LoadIssue
from graphlint.load.onnx_types import Types, decode_types, graph_protos

# Below this file size a fork costs about what it saves (a 2,000-node model is about 0.7 MB).
FORK_MIN_BYTES = 1 << 20

FileKey = tuple[int, int, int, int]


def file_key(fd: int) -> FileKey:
    """Device, inode, size and mtime of an open file: which version of it was read."""
    st = os.fstat(fd)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


# Data propagation is an aid to inference, not part of the spec's check: check_model(full_check=True)
# runs strict inference without it. Inside If branches that read outer-scope values (optimum's merged
# decoders) onnx's data propagation fails on its own ("Data for input 0 already exists", then
# "Incompatible dimensions" from the data it mispropagated) on models the checker passes and every
# engine runs, so a failed strict run with it is retried without it, and only that run's errors count.


def infer(model: onnx.ModelProto | bytes, issues: list[LoadIssue]) -> onnx.ModelProto | None:
    """ONNX shape inference with data propagation; the inferred model, or None when it gave up.

    Strict mode first: on a clean model that is the only run. When it fails, strict mode without
    data propagation (the spec's verdict, above): if that passes, its model is the answer; if not, its errors (one
    line per failing node) are recorded as load issues, and a lenient run with data propagation
    fills in every type it still can. Negative dims are hidden from it (:func:`without_negative_dims`)."""
    data = model if isinstance(model, bytes) else model.SerializeToString()
    model = without_negative_dims(data)
    if model is not data:  # GL0007 reports the dims themselves
        issues.append(LoadIssue("impossible-dims", "negative dims were hidden from ONNX shape inference"))
    del data
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except Exception:  # InferenceError, ValidationError, RuntimeError from C++
        pass
    try:  # the spec's verdict: strict inference as check_model(full_check=True) runs it (above)
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as e:
        issues.extend(LoadIssue("shape-inference", line, value=_node_in(line)) for line in _error_lines(e))
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception as e:
        issues.append(LoadIssue("shape-inference", f"shape inference gave up: {_first_line(e)}"))
        return None


# An int64 varint field 1 or 3 holding a negative value (always 10 bytes, the last 0x01): how
# TensorShapeProto.Dimension.dim_value, TensorProto.dims (1) and SparseTensorProto.dims (3) are
# written. Weight bytes match it by chance a few times per 100 MB; the exact pass below then
# finds nothing to change.
_NEGATIVE_DIM = re.compile(rb"[\x08\x18][\x80-\xff]{9}\x01")


def without_negative_dims(data: bytes) -> bytes:
    """``data`` with every negative declared dim made unknown, for onnx's shape inference.

    onnx >= 1.21's Slice inference aborts the whole process (SIGABRT from a hardened
    ``std::clamp``: https://github.com/onnx/onnx/issues/8481, open for onnx 1.23) when a sliced
    axis has a negative dim_value, which a hostile or broken model declares freely: graph
    inputs, outputs and value_info of any graph, and the dims of initializers and Constant
    tensors. Dims are cleared (value_info) or the tensor's shape dropped (tensors): only
    inference sees this copy; rules read the model as the file has it (GL0007 reports the dims).
    """
    if not may_have_negative_dims(data):
        return data
    model = onnx.ModelProto.FromString(data)
    return model.SerializeToString() if _negative_dims(graph_protos(model), clear=True) else data


def may_have_negative_dims(data: bytes) -> bool:
    """False when no declared dim of the model in ``data`` is negative (a scan at C speed)."""
    return _NEGATIVE_DIM.search(data) is not None


def has_negative_dims(graphs: Iterable[onnx.GraphProto], *, tensors: bool = True) -> bool:
    """Whether :func:`without_negative_dims` would change a model whose graphs (all but function
    bodies: onnx_types.graph_protos) are ``graphs`` (``tensors=False``: in value types only; the
    IR builder checks the tensors as it reads them).

    A child's unguarded inference is not the answer for such a model even when it survives:
    inference on the file's dims and on the cleared ones differ, and findings must not depend
    on which process inferred (the loader checks when :func:`may_have_negative_dims`)."""
    return _negative_dims(graphs, clear=False, tensors=tensors)


def negative_tensor_dims(tensors: Iterable[Any]) -> bool:
    return any(d < 0 for t in tensors for d in t.dims)


def constant_tensors(node: onnx.NodeProto) -> Iterator[Any]:
    """The tensors of a Constant node whose dims ONNX inference reads as its output's shape."""
    for a in node.attribute:
        if a.name == "value":
            yield a.t
        elif a.name == "sparse_value":
            yield from (a.sparse_tensor, a.sparse_tensor.values)


def _negative_dims(graphs: Iterable[onnx.GraphProto], *, clear: bool, tensors: bool = True) -> bool:
    """Whether a dim that ONNX inference reads as a shape is negative, with ``clear``, clear
    them all: graphs' value types, initializers and Constant nodes' tensors (other ops' tensor
    attributes shape no output)."""
    found = False
    for gp in graphs:
        for vi in (*gp.input, *gp.output, *gp.value_info):
            if _negative_dims_in_type(vi.type, clear=clear):
                if not clear:
                    return True
                found = True
        if not tensors:
            continue
        held = [*gp.initializer, *gp.sparse_initializer, *(s.values for s in gp.sparse_initializer)]
        nodes = gp.node
        for i in compress(range(len(nodes)), map(_CONSTANT.__contains__, map(_OP_AND_DOMAIN, nodes))):
            held.extend(constant_tensors(nodes[i]))
        for t in held:
            if any(d < 0 for d in t.dims):
                if not clear:
                    return True
                del t.dims[:]
                found = True
    return found


_OP_AND_DOMAIN = attrgetter("op_type", "domain")
_CONSTANT = frozenset({("Constant", ""), ("Constant", "ai.onnx")})


def _negative_dims_in_type(tp: Any, *, clear: bool) -> bool:
    changed = False
    while tp is not None:
        which = tp.WhichOneof("value")
        if which in ("tensor_type", "sparse_tensor_type"):
            for d in getattr(tp, which).shape.dim:
                if d.HasField("dim_value") and d.dim_value < 0:
                    if not clear:
                        return True
                    d.ClearField("dim_value")
                    changed = True
            return changed
        inner = getattr(tp, which, None) if which else None
        tp = inner.elem_type if which in ("sequence_type", "optional_type") else (
            inner.value_type if which == "map_type" else None)
    return changed


def _infer_path(path: str, scratch: str, issues: list[LoadIssue]) -> onnx.ModelProto | None:
    """:func:`infer` on the file at ``path``, file to file through ``scratch``; unguarded (the
    bytes never pass through Python), so only in the child, whose death the parent survives."""
    try:
        onnx.shape_inference.infer_shapes_path(path, scratch, check_type=True, strict_mode=True, data_prop=True)
    except Exception:
        try:  # the spec's verdict (above infer)
            onnx.shape_inference.infer_shapes_path(path, scratch, check_type=True, strict_mode=True)
        except Exception as e:
            issues.extend(LoadIssue("shape-inference", line, value=_node_in(line)) for line in _error_lines(e))
            try:
                onnx.shape_inference.infer_shapes_path(path, scratch, check_type=False, strict_mode=False,
                                                       data_prop=True)
            except Exception as e2:
                issues.append(LoadIssue("shape-inference", f"shape inference gave up: {_first_line(e2)}"))
                return None
    inferred = onnx.load_model(scratch, load_external_data=False)
    if not inferred.HasField("graph"):  # onnx does not check its write (a full disk leaves the file empty)
        raise OSError("shape inference wrote no model")
    return inferred


Inferred = tuple[Types | None, list[LoadIssue]]


def infer_types(model: onnx.ModelProto | bytes) -> Inferred:
    """Shape inference on a model, decoded to types (None when inference gave up), and its issues."""
    issues: list[LoadIssue] = []
    inferred = infer(model, issues)
    return (None if inferred is None else decode_types(inferred)), issues


def infer_types_at(path: str) -> tuple[FileKey, Inferred]:
    """:func:`infer_types` on the file at ``path`` (the child's work, after :func:`silence_stderr`),
    and which version it read."""
    with open(path, "rb") as f:
        key = file_key(f.fileno())
    folder = tempfile.mkdtemp(prefix="graphlint-infer-")
    try:
        issues: list[LoadIssue] = []
        try:
            inferred = _infer_path(path, os.path.join(folder, "inferred.onnx"), issues)
        except Exception:  # the scratch file could not be written or read back: from the bytes
            with open(path, "rb") as f:
                return key, infer_types(f.read())
        return key, ((None if inferred is None else decode_types(inferred)), issues)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def checker_verdict(model: onnx.ModelProto | bytes) -> str | None:
    """onnx.checker's verdict on the model as inference leaves it (what GL0001 reports): the
    file's own bytes unless the checker fails them, since inference may type graph outputs that
    the checker rejects untyped or unshaped."""
    verdict = check(model)
    if verdict is not None:
        inferred = infer(model, [])
        if inferred is not None:
            verdict = check(inferred)
    return verdict


def check(model: onnx.ModelProto | bytes) -> str | None:
    """What ``onnx.checker.check_model(model)`` says: None when it passes, else its message."""
    try:
        onnx.checker.check_model(model, full_check=False)
        return None
    except Exception as e:
        return str(e).strip()


def silence_stderr() -> None:
    """Send this process's file descriptor 2 to /dev/null (the child's first job): onnx can abort
    on a hostile model and print its assertion there (onnx#8481); the parent then redoes the
    work in-process, guarded, and the user's terminal stays clean."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    os.dup2(fd, 2)
    os.close(fd)


def checker_verdict_at(path: str) -> tuple[FileKey, str | None]:
    """:func:`checker_verdict` on the file at ``path`` (the child's work)."""
    with open(path, "rb") as f:
        key = file_key(f.fileno())
        data = f.read()
    return key, checker_verdict(data)


class Started(NamedTuple):
    """The child of one file: its inference job, then its checker job."""

    child: procs.Child
    inference: Any  # Future of infer_types_at
    checker: Any  # Future of checker_verdict_at


def start(path: str) -> Started | None:
    """Fork the child for the file at ``path`` when it is worth it; None otherwise."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None  # the loader says why
    if size < FORK_MIN_BYTES or not procs.can_fork():
        return None
    onnx.defs.has("Add")  # onnx's schema registry, built once here, is inherited instead of built there
    child = procs.Child()
    try:
        child.submit(silence_stderr)
        inference = child.submit(infer_types_at, path)
        checker = child.submit(checker_verdict_at, path)
    except BaseException:
        child.cancel()
        raise
    return Started(child, inference, checker)


def joined(future: Any, key: FileKey | None) -> Any:
    """A child's result, or procs.DIED when it died or read another version of the file."""
    result = procs.Child.outcome(future)
    if result is procs.DIED or result[0] != key:
        return procs.DIED
    return result[1]


class CheckerVerdict:
    """onnx.checker's verdict from the child (GL0001 waits for it), or in-process if it died."""

    def __init__(self, started: Started, key: FileKey | None, model: onnx.ModelProto) -> None:
        self.started, self.key, self.model = started, key, model

    def result(self) -> str | None:
        verdict = joined(self.started.checker, self.key)
        self.started.child.close()
        return check(self.model) if verdict is procs.DIED else verdict or None

    def cancel(self) -> None:
        self.started.child.cancel()


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
