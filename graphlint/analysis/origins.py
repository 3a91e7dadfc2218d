"""Origins: where in the model's Python code each node was made.

Exporters record it on the nodes; this reads what they write (formats as torch 2.13 and
OpenVINO 2026.4 write them, see docs/origins.md):

- ``torch.onnx.export(..., dynamo=True)``: ``metadata_props`` on every node, also inside If/Loop
  bodies and on the nodes its optimizer makes: ``pkg.torch.onnx.stack_trace`` (Python frames,
  outermost first: ``File "PATH", line N, in FUNC`` then the source line),
  ``pkg.torch.onnx.name_scopes`` (module paths, a Python list: ``['', 'encoder', ...,
  'matmul']``, the last entry the FX node), ``pkg.torch.onnx.class_hierarchy`` (the modules'
  classes, the last entry the PyTorch op: ``aten.matmul.default``).
- the TorchScript exporter (``dynamo=False``): the module path in the node name
  (``/encoder/layers.0/mixer/MatMul``); with ``verbose=True`` the stack in ``doc_string``
  (``PATH(N): FUNC`` lines, innermost first).
- OpenVINO IR: the layer keeps the ONNX node's name (TorchScript names keep their module path;
  OpenVINO appends ``/WithoutBiases`` and the like to layers it splits), its output ports the
  ONNX tensor names (``/encoder/layers.0/mixer/MatMul_output_0``); IR converted from a torch
  module names layers ``__module.encoder.layers.0.mixer/aten::matmul/MatMul``; older IR lists
  the original names in the layer's ``rt_info`` ``fused_names``. No IR records source lines.

The analysis (``ctx.analysis("origins")``) gives what the model records per node
(:class:`Recorded`); after the rules ran, graphlint.lint resolves the files against the source
tree (:func:`resolve`) and puts an :class:`Origin` on each finding about a node. A frame counts as the user's when its file is in the source
tree (the path as recorded, or its longest suffix that exists under the root, for exports made
on another machine) or, failing that, when it is no library's (site-packages, a torch or
transformers checkout, the standard library, ``<eval_with_key>`` code); the innermost such
frame wins. A library installed inside the source tree (a ``.venv``) is still a library, while
a checkout of transformers that *is* the source tree is the user's code.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass, field
from typing import Any

from graphlint.analysis import AnalysisContext, analysis
from graphlint.ir import OPENVINO, Graph, Model, Node

STACK_TRACE = "pkg.torch.onnx.stack_trace"
NAME_SCOPES = "pkg.torch.onnx.name_scopes"
CLASS_HIERARCHY = "pkg.torch.onnx.class_hierarchy"
DOC_STRING = "doc_string"  # graphlint.ir.Node.metadata's key for an ONNX node's doc_string
FUSED_NAMES = ("fused_names", "fused_names_0")  # OpenVINO IR layer rt_info, before 2023
# torch.export's placeholder scope for nodes no module made (runtime asserts, symbolic sizes)
NO_MODULE = "_empty_nn_module_stack_from_metadata_hook"
# Top-level packages whose frames are library code even outside site-packages (a source checkout).
LIBRARY_PACKAGES = frozenset({"torch", "transformers", "torchvision", "torchaudio", "onnxscript", "diffusers",
                              "timm", "accelerate", "optimum", "peft", "functorch"})
MAX_TEXT = 1 << 16  # a metadata value longer than this is not parsed (model files are untrusted)
MAX_PATH_PARTS = 64

# a frame's line, then its source line unless the next frame follows at once
_DYNAMO_FRAMES = re.compile(r'^[ \t]*File "(?P<file>[^"\n]*)", line (?P<line>\d+), in (?P<func>[^\n]+)'
                            r'(?:\n(?![ \t]*File ")[ \t]*(?P<code>[^\n]*))?', re.M)
_QUOTED = re.compile(r"'([^'\\]*)'")
_TORCHSCRIPT_FRAME = re.compile(r"(?P<file>.+)\((?P<line>\d+)\): (?P<func>.+)")
_LEGACY_OUTPUT = re.compile(r"_output_\d+$")
_PYTHON_DIR = re.compile(r"python\d+(\.\d+)?$", re.I)
_OP_LIKE = re.compile(r"[A-Z][A-Za-z0-9]*(_\d+)?$")  # an ONNX op type in a TorchScript node name


@dataclass(frozen=True)
class Frame:
    file: str  # as the exporter recorded it
    line: int
    function: str
    code: str = ""  # the source line, when recorded


@dataclass(frozen=True)
class Recorded:
    """What a model records about where one node came from."""

    frames: tuple[Frame, ...] = ()  # outermost first
    module: str | None = None  # module path ("encoder.layers.0.mixer"; "" the root module)
    cls: str | None = None  # the module's class as recorded ("pkg.models.Mixer")
    op: str | None = None  # the framework op ("aten.matmul.default")
    nodes: tuple[str, ...] = ()  # the original (ONNX) node names of an OpenVINO layer


@dataclass(frozen=True)
class Origin:
    """Where a finding's node came from, resolved against the source tree."""

    file: str | None = None  # repository-relative (forward slashes) when found, else as recorded
    line: int | None = None
    function: str | None = None
    code: str | None = None
    found: bool = False  # the file exists under the source root
    recorded_file: str | None = None  # the path exactly as the exporter recorded it
    module: str | None = None
    cls: str | None = None
    op: str | None = None
    nodes: tuple[str, ...] = field(default_factory=tuple)
    path: str | None = field(default=None, compare=False)  # the absolute path, when found

    @property
    def class_name(self) -> str | None:
        return self.cls.rsplit(".", 1)[-1] if self.cls else None

    @property
    def op_name(self) -> str | None:
        """The op without its default overload: aten.cat.default -> aten.cat."""
        return self.op.removesuffix(".default") if self.op else None

    def under(self, root: str) -> str | None:
        """The found file's path relative to ``root`` (forward slashes), None when not under it."""
        if self.path is None:
            return None
        try:
            rel = os.path.relpath(self.path, os.path.realpath(root))
        except ValueError:  # another drive (Windows)
            return None
        return None if rel == ".." or rel.startswith(".." + os.sep) else rel.replace(os.sep, "/")

    def describe(self) -> str:
        """One line for people: ``from src/model.py:110 in forward (CLIPVisionEmbeddings
        vision_model.embeddings, aten.cat)``."""
        if self.cls:
            who = " ".join(p for p in (self.class_name, self.module) if p)
        else:
            who = f"module {self.module}" if self.module else "top-level module" if self.module == "" else ""
        what = ", ".join(p for p in (who, self.op_name) if p)
        if self.file is not None:
            text = f"from {self.file}:{self.line} in {self.function}"
            if not self.found:
                text += " (not found under the source root)"
            return text + (f" ({what})" if what else "")
        if self.nodes:
            return f"from ONNX node {', '.join(self.nodes)}" + (f" ({who})" if who else "")
        return f"from {who}" + (f" ({self.op_name})" if self.op_name else "")

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function, "code": self.code,
                "found_in_repo": self.found, "recorded_file": self.recorded_file, "module": self.module,
                "class": self.cls, "framework_op": self.op, "framework_nodes": list(self.nodes)}


# --------------------------------------------------------------------------- what models record

@functools.lru_cache(maxsize=512)  # the nodes one op decomposes into share their trace
def dynamo_frames(text: str) -> tuple[Frame, ...]:
    """The frames of a ``pkg.torch.onnx.stack_trace`` value, outermost first."""
    return tuple(Frame(m["file"], int(m["line"]), m["func"].strip(), (m["code"] or "").strip())
                 for m in _DYNAMO_FRAMES.finditer(text))


def torchscript_frames(text: str) -> tuple[Frame, ...]:
    """The frames of a TorchScript exporter's ``doc_string`` (``PATH(N): FUNC``), outermost first."""
    frames = [Frame(m["file"], int(m["line"]), m["func"].strip())
              for m in map(_TORCHSCRIPT_FRAME.fullmatch, map(str.strip, text.splitlines())) if m]
    return tuple(reversed(frames))


@functools.lru_cache(maxsize=512)
def _string_list(text: str | None) -> tuple[str, ...] | None:
    """A Python list-of-strings literal as torch writes name_scopes and class_hierarchy."""
    if not text or len(text) > MAX_TEXT:
        return None
    if text[0] == "[" and text[-1] == "]" and '"' not in text and "\\" not in text:
        return tuple(_QUOTED.findall(text))  # the usual spelling, read without the parser
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return tuple(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def name_scopes(node: Node) -> tuple[str, ...]:
    """The module scopes the dynamo exporter recorded on ``node`` (``('', 'encoder',
    'encoder.layers.0', ..., 'matmul')``, the FX node last); empty when it recorded none."""
    return _string_list(node.metadata.get(NAME_SCOPES)) or ()


def torchscript_module(name: str, *, layer: bool = False) -> str | None:
    """The module path in a TorchScript exporter's node name: /encoder/layers.0/mixer/MatMul ->
    encoder.layers.0.mixer ("" for the top-level module; None when not such a name). An OpenVINO
    ``layer`` name may have parts appended after the op's (/mixer/Gemm/WithoutBiases)."""
    if not name.startswith("/"):
        return None
    parts = name[1:].split("/")
    if layer:
        cut = next((i for i, p in enumerate(parts) if _OP_LIKE.match(p)), None)
    else:
        cut = len(parts) - 1 if _OP_LIKE.match(parts[-1]) else None
    return None if cut is None else ".".join(parts[:cut])


def _torchscript_node(name: str) -> str:
    """The ONNX node an OpenVINO layer or TorchScript tensor name comes from:
    /a/Gemm/WithoutBiases -> /a/Gemm, /a/MatMul_output_0 -> /a/MatMul."""
    parts = _LEGACY_OUTPUT.sub("", name).split("/")
    cut = next((i for i, p in enumerate(parts) if _OP_LIKE.match(p)), len(parts) - 1)
    return "/".join(parts[:cut + 1])


_OV_TORCH = re.compile(r"__module\.(?P<module>[^/]*)/(?P<op>[a-z_]+::[A-Za-z0-9_.]+)")
_OV_TORCH_ROOT = re.compile(r"(?P<op>aten::[A-Za-z0-9_.]+)/")


def recorded(node: Node) -> Recorded | None:
    """What the model records about where ``node`` came from, or None when nothing."""
    if node.dialect == OPENVINO:
        return _openvino(node)
    meta = node.metadata
    frames: tuple[Frame, ...] = ()
    module = cls = op = None
    trace = meta.get(STACK_TRACE)
    if trace and len(trace) <= MAX_TEXT:
        frames = dynamo_frames(trace)
        scopes = name_scopes(node)
        classes = _string_list(meta.get(CLASS_HIERARCHY)) or ()
        if len(scopes) >= 2 and scopes[0] != NO_MODULE:
            module = scopes[-2]
            if len(classes) == len(scopes):
                cls = classes[-2]
        op = classes[-1] if classes else None
    elif meta.get(DOC_STRING) and len(meta[DOC_STRING]) <= MAX_TEXT:
        frames = torchscript_frames(meta[DOC_STRING])
    if module is None and node.name:
        module = torchscript_module(node.name)
    owner = node.graph.owner
    if module is None and owner is not None:  # a body's node: the module its If/Loop is in
        outer = recorded(owner)
        if outer is not None:
            if not frames:
                return outer
            module, cls = outer.module, outer.cls
    if module is None and not frames:
        return None
    return Recorded(frames, module, cls, op)


def _openvino(node: Node) -> Recorded | None:
    fused = next((node.metadata[k] for k in FUSED_NAMES if node.metadata.get(k)), "")
    names = [n.strip() for n in fused.split(",") if n.strip()]
    m = _OV_TORCH.search(node.name) or _OV_TORCH_ROOT.match(node.name)
    if m:  # converted from a torch module: the module path and op are in the layer name
        return Recorded(module=m.groupdict().get("module", ""), op=m["op"].replace("::", "."), nodes=tuple(names))
    tensors = [v.name for v in node.outputs if _LEGACY_OUTPUT.search(v.name)]
    module = next((mp for mp in (torchscript_module(n, layer=True) for n in (*names, *tensors, node.name))
                   if mp is not None), None)
    if not names and module is not None:
        names = list(dict.fromkeys(map(_torchscript_node, tensors or [node.name])))
    if not names or (names == [node.name] and module is None):
        return None  # nothing beyond the layer's own name
    return Recorded(module=module, nodes=tuple(names))


class Origins:
    """The analysis result: each node's :class:`Recorded`, parsed on first request."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self._cache: dict[int, Recorded | None] = {}
        self._graphs: dict[str, Graph] | None = None

    def of(self, node: Node) -> Recorded | None:
        key = id(node)
        if key not in self._cache:
            self._cache[key] = recorded(node)
        return self._cache[key]

    def node_at(self, graph_path: str, index: int) -> Node | None:
        """The node a finding's location names (graph path and index), None when there is none."""
        if self._graphs is None:
            self._graphs = {}
            for body in (self.model.graph, *self.model.functions.values()):
                for g in body.graphs():
                    self._graphs.setdefault(g.path, g)
        graph = self._graphs.get(graph_path)
        return graph.nodes[index] if graph is not None and 0 <= index < len(graph.nodes) else None


@analysis("origins", per_target=False)
def origins(ctx: AnalysisContext) -> Origins:
    return Origins(ctx.model)


# --------------------------------------------------------------------------- the source tree

def _parts(path: str) -> list[str]:
    return [p for p in re.split(r"[\\/]+", path) if p and not re.fullmatch(r"[A-Za-z]:", p)]


def installed(path: str) -> bool:
    """Whether a file lies in an installation: site-packages (also a virtualenv inside the
    repository), dist-packages, the standard library (lib/python3.11)."""
    return any(p in ("site-packages", "dist-packages") or _PYTHON_DIR.match(p) for p in _parts(path)[:-1])


def is_library(path: str) -> bool:
    """Whether a recorded frame's file is library code rather than the user's."""
    if path.startswith("<"):  # <eval_with_key>.5, <frozen runpy>, <string>
        return True
    return installed(path) or any(p in LIBRARY_PACKAGES for p in _parts(path)[:-1])


class SourceTree:
    """Finds recorded paths in the source tree under ``root`` (each path looked up once).

    Only paths inside the root count; a recorded path is untrusted input, so its ``..``
    components never lead out of it and a symlink pointing outside does not count either."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._found: dict[tuple[str, bool], str | None] = {}

    def find(self, recorded_path: str, by_suffix: bool = True) -> str | None:
        """The repository-relative path (forward slashes) of a recorded file, or None; without
        ``by_suffix`` only the path as recorded counts."""
        key = (recorded_path, by_suffix)
        if key not in self._found:
            self._found[key] = self._lookup(recorded_path, by_suffix)
        return self._found[key]

    def _lookup(self, path: str, by_suffix: bool) -> str | None:
        if not path or path.startswith("<") or "\0" in path:
            return None
        parts = _parts(path)[-MAX_PATH_PARTS:]
        if ".." in parts:
            return None
        if os.path.isabs(path):
            rel = self._inside(os.path.realpath(path))
            if rel is not None or not by_suffix:
                return rel
        for k in range(len(parts) if by_suffix else 0):  # the longest suffix that exists under the root
            rel = self._inside(os.path.realpath(os.path.join(self.root, *parts[k:])))
            if rel is not None:
                return rel
        return None

    def _inside(self, real: str) -> str | None:
        try:
            if os.path.commonpath([self.root, real]) != self.root or not os.path.isfile(real):
                return None
        except ValueError:  # another drive (Windows)
            return None
        return os.path.relpath(real, self.root).replace(os.sep, "/")


def resolve(rec: Recorded, tree: SourceTree) -> Origin | None:
    """The :class:`Origin` of a recorded node: its innermost frame in the source tree, else its
    innermost frame outside any library (shown as not found), else no frame (None when the
    model records neither a module nor original node names either)."""
    base = Origin(module=rec.module, cls=rec.cls, op=rec.op, nodes=rec.nodes)
    for frame in reversed(rec.frames):
        # a library's file counts only where it lies (a checkout that is the source tree), never
        # by a suffix it happens to share with a file of the repository (linear.py)
        rel = tree.find(frame.file, by_suffix=not is_library(frame.file))
        if rel is not None and not installed(rel):
            return _with_frame(base, frame, rel, os.path.join(tree.root, rel))
    for frame in reversed(rec.frames):
        if not is_library(frame.file):
            return _with_frame(base, frame, frame.file, None)
    return base if rec.module is not None or rec.nodes else None


def _with_frame(base: Origin, frame: Frame, file: str, path: str | None) -> Origin:
    return Origin(file=file, line=frame.line, function=frame.function, code=frame.code or None,
                  found=path is not None, recorded_file=frame.file, module=base.module, cls=base.cls, op=base.op,
                  nodes=base.nodes, path=path)


def origin_of(node: Node, source_root: str) -> Origin | None:
    """One node's origin (tools and tests; findings get theirs from graphlint.lint)."""
    rec = recorded(node)
    return None if rec is None else resolve(rec, SourceTree(source_root))

