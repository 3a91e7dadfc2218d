"""The normalized graph IR that every loader produces and every rule reads.

ONNX models and OpenVINO IR both become a :class:`Model` holding a main :class:`Graph`
of :class:`Node` and :class:`Value` objects. The IR is deliberately thin: plain slotted
objects, attributes decoded on first use and weights read only on demand, because a
100k-node graph must be built in a fraction of the time ONNX's own checker takes.

Dialects: ``"onnx"`` nodes carry an ONNX domain and the opset version imported for it;
``"openvino"`` nodes carry the OpenVINO opset name (``opset8``). Rules declare which
dialects they understand so ONNX-semantics rules never misfire on OpenVINO ops.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

# A dimension is a static size, a symbolic name, or unknown (None).
Dim = int | str | None
# A shape is a tuple of dims, or None when even the rank is unknown.
Shape = tuple[Dim, ...] | None
INT64_MAX = 2**63 - 1


def impossible_shape(shape: Shape) -> bool:
    """A static dim below -1, or static dims whose product exceeds INT64_MAX (with no 0 among
    them): a tensor no engine can hold (GL0007; loaders flag models that have one)."""
    if not shape:
        return False
    n = 1
    for d in shape:
        if isinstance(d, int):
            if d < -1:
                return True
            n *= d if d > 0 else (0 if d == 0 else 1)
    return n > INT64_MAX

ONNX = "onnx"
OPENVINO = "openvino"
ONNX_DOMAIN = "ai.onnx"  # the default domain, spelled out ("" in protobuf)
# Shared read-only defaults: most of a big graph's values have no rt_info and most nodes no
# subgraphs, and an empty dict each costs 64 bytes. Loaders assign a dict to fill one.
NO_RT_INFO: Mapping[str, str] = MappingProxyType({})
NO_SUBGRAPHS: Mapping[str, Graph] = MappingProxyType({})
_SUBGRAPHS = attrgetter("subgraphs")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while an IR is built and read.

    An IR is millions of small container objects with no garbage cycles: left on, the collector
    rescans all of them about a dozen times per 100k-node model, frees nothing, and costs a
    quarter of the CPU time. It resumes (and collects) afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def norm_domain(domain: str) -> str:
    return ONNX_DOMAIN if domain in ("", "ai.onnx") else domain


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """Where a node or value came from, in terms a person can find again."""

    file: str  # path of the artifact as given on the command line
    graph_path: str = "main"  # e.g. main/If_3/then_branch
    node_index: int | None = None
    node_name: str | None = None
    # OpenVINO IR only
    layer_id: str | None = None
    layer_type: str | None = None
    layer_version: str | None = None
    line: int | None = None  # 1-based line of the <layer> element in the .xml

    def describe(self) -> str:
        parts = [self.graph_path]
        if self.layer_id is not None:
            parts.append(f"layer {self.layer_id}")
        elif self.node_index is not None:
            parts.append(f"node #{self.node_index}")
        if self.line is not None:
            parts.append(f"line {self.line}")
        return ", ".join(parts)


class Tensor:
    """A constant tensor (initializer, Constant attribute, OpenVINO Const) read lazily.

    ``dtype`` and ``shape`` are known without touching the bytes; ``numpy()`` reads them
    through ``reader`` on first use. ``location`` says where the bytes live, for reports.
    """

    __slots__ = ("_array", "_reader", "dtype", "location", "name", "nbytes", "shape")

    def __init__(
        self,
        name: str,
        dtype: str,
        shape: tuple[int, ...],
        reader: Callable[[], np.ndarray] | None,
        location: str = "embedded",
        nbytes: int | None = None,
    ) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self._reader = reader
        self._array: np.ndarray | None = None
        self.location = location
        self.nbytes = nbytes

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def numpy(self) -> np.ndarray:
        """Read the data (may raise graphlint.errors.DataError for unreadable weights)."""
        if self._array is None:
            if self._reader is None:
                raise ValueError(f"tensor {self.name!r} has no readable data")
            object.__setattr__(self, "_array", self._reader())  # a cache: allowed once frozen
        return self._array

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {self.dtype}, {list(self.shape)}, {self.location})"


class Value:
    """A tensor flowing along an edge: produced by at most one node, consumed by many."""

    __slots__ = (
        "const",
        "consumers",
        "dtype",
        "graph",
        "is_input",
        "is_output",
        "name",
        "producer",
        "rt_info",
        "shape",
    )

    def __init__(self, name: str, graph: Graph, dtype: str | None = None, shape: Shape = None) -> None:
        self.name = name
        self.graph = graph
        self.dtype = dtype  # normalized name: float32, float16, int64, uint8, bool, ...
        self.shape = shape
        self.producer: Node | None = None
        self.consumers: list[Node] = []
        self.const: Tensor | None = None  # initializer / Constant data
        self.is_input = False
        self.is_output = False
        self.rt_info: Mapping[str, str] = NO_RT_INFO  # OpenVINO port rt_info (layout, names, ...)

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def is_constant(self) -> bool:
        return self.const is not None

    def __repr__(self) -> str:
        return f"Value({self.name!r}, {self.dtype}, {self.shape})"


class Node:
    """One operation. ``attrs`` is decoded on first access from the loader's raw form."""

    __slots__ = (
        "_attrs",
        "_decode",
        "_meta",
        "dialect",
        "domain",
        "graph",
        "index",
        "inputs",
        "name",
        "op_type",
        "opset",
        "outputs",
        "source",
        "subgraphs",
    )

    def __init__(
        self,
        op_type: str,
        name: str,
        graph: Graph,
        index: int,
        *,
        dialect: str = ONNX,
        domain: str = ONNX_DOMAIN,
        opset: int | str | None = None,
        decode: Callable[[], dict[str, Any]] | None = None,
        source: SourceLoc | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        self.op_type = op_type
        self.name = name
        self.graph = graph
        self.index = index
        self.dialect = dialect
        self.domain = domain
        self.opset = opset  # int for ONNX (imported version of domain), "opsetN" for OpenVINO
        self.inputs: list[Value | None] = []  # None marks an omitted optional input
        self.outputs: list[Value] = []
        self.subgraphs: dict[str, Graph] = {}
        self._decode = decode
        self._attrs: dict[str, Any] | None = None
        self.source = source
        self._meta = NO_RT_INFO if not metadata else MappingProxyType(dict(metadata))

    @property
    def metadata(self) -> Mapping[str, str]:
        """What the producer recorded on the node, read-only: ONNX ``metadata_props`` (plus its
        ``doc_string`` under the key ``"doc_string"``), OpenVINO IR the layer's ``rt_info``."""
        return self._meta

    @property
    def attrs(self) -> dict[str, Any]:
        if self._attrs is None:  # a cache: allowed once frozen (see freeze)
            object.__setattr__(self, "_attrs", self._decode() if self._decode else {})
            object.__setattr__(self, "_decode", None)
        return self._attrs

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def input(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    @property
    def label(self) -> str:
        """How reports name the node: its name, or op type and first output when unnamed."""
        if self.name:
            return self.name
        out = self.outputs[0].name if self.outputs else "?"
        return f"{self.op_type}->{out}"

    @property
    def qualified_name(self) -> str:
        return f"{self.graph.path}/{self.label}"

    def __repr__(self) -> str:
        return f"Node({self.op_type!r}, {self.name!r}, {self.domain}@{self.opset})"


class Graph:
    """A graph (the main one or a subgraph of If/Loop/Scan, or an ONNX function body)."""

    __slots__ = ("inputs", "name", "nodes", "outputs", "owner", "path", "values")

    def __init__(self, name: str, path: str, owner: Node | None = None) -> None:
        self.name = name
        self.path = path
        self.owner = owner  # the node holding this subgraph, None for the main graph
        self.nodes: list[Node] = []
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.values: dict[str, Value] = {}

    def value(self, name: str) -> Value:
        """The value named ``name`` in this graph, created on first reference."""
        v = self.values.get(name)
        if v is None:
            v = self.values[name] = Value(name, self)
        return v

    def walk(self) -> Iterator[Node]:
        """Every node of this graph and, depth-first, of its subgraphs (iteratively)."""
        stack: list[Iterator[Node]] = [iter(self.nodes)]
        while stack:
            for node in stack[-1]:  # resumes a partly consumed iterator after a subgraph
                yield node
                if node.subgraphs:  # its subgraphs come next, first one first, then the rest of this graph
                    stack.extend(iter(sub.nodes) for sub in reversed(node.subgraphs.values()))
                    break
            else:
                stack.pop()

    def graphs(self) -> Iterator[Graph]:
        """This graph and all nested subgraphs."""
        stack = [self]
        while stack:
            g = stack.pop()
            yield g
            # The few nodes with subgraphs are picked at C speed (a 100k-node graph has a handful).
            for subgraphs in filter(None, map(_SUBGRAPHS, g.nodes)):
                stack.extend(subgraphs.values())


def _refuse(self: object, name: str, value: object = None) -> None:
    raise AttributeError(f"{type(self).__name__}.{name}: the model is read-only once loaded "
                         f"(analyses return facts, rules return findings)")


@functools.cache
def _frozen(cls: type) -> type:
    """A subclass of ``cls`` with the same slots whose instances refuse attribute writes."""
    return type(cls.__name__, (cls,), {"__slots__": (), "__setattr__": _refuse, "__delattr__": _refuse,
                                       "__module__": cls.__module__, "__qualname__": cls.__qualname__})


def freeze(model: Model) -> None:
    """Make the model's graphs, nodes, values and constants refuse attribute writes (the loaders
    call this last). Each object changes class to a read-only twin, which costs a few
    milliseconds for a 100k-node model where a checking ``__setattr__`` would slow every write
    while building. Lists and dicts inside stay Python's own; tests/test_ir_frozen.py checks
    that nothing changes them."""
    bodies = (model.graph, *model.functions.values())
    freeze_structure(bodies)
    for body in bodies:
        for g in body.graphs():
            for node in g.nodes:
                for v in node.outputs:
                    _freeze_value(v)
            for v in g.values.values():
                _freeze_value(v)


def freeze_structure(bodies: Iterable[Graph]) -> None:
    """Freeze the graphs and nodes of ``bodies`` (their subgraphs included), not yet the values:
    the ONNX loader does this before the values get their types, so that what it computes from
    the structure meanwhile reads nothing that can change (see :func:`freeze`)."""
    for body in bodies:
        for g in body.graphs():
            if type(g).__setattr__ is _refuse:
                continue
            g.__class__ = _frozen(type(g))
            for node in g.nodes:
                node.__class__ = _frozen(type(node))


def _freeze_value(v: Value) -> None:
    cls = type(v)
    if cls.__setattr__ is _refuse:
        return
    v.__class__ = _frozen(cls)
    if v.const is not None and type(v.const).__setattr__ is not _refuse:
        v.const.__class__ = _frozen(type(v.const))


@dataclass
class LoadIssue:
    """A problem found while loading, turned into a finding by the GL9xx rules."""

    kind: str  # e.g. "external-data", "shape-inference", "xml-edge"
    message: str
    node: Node | None = None
    value: str | None = None
    line: int | None = None
    graph_path: str = "main"
    key: str | None = None  # tells issues of one kind on one node apart (an <edge>'s endpoints)


@dataclass
class Model:
    """A loaded model in normalized form: complete and typed when a loader returns it, and from
    then on read-only (analyses and rules read it; none changes it)."""

    path: str  # as given by the user (used for report locations)
    format: str  # "onnx" or "openvino"
    graph: Graph
    dialect: str = ONNX
    ir_version: int | None = None
    opset_imports: dict[str, int] = field(default_factory=dict)  # ONNX: domain -> version
    producer: str = ""
    producer_version: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    rt_info: dict[str, Any] = field(default_factory=dict)  # OpenVINO model rt_info
    functions: dict[tuple[str, str], Graph] = field(default_factory=dict)  # (domain, name) -> body
    issues: list[LoadIssue] = field(default_factory=list)
    # The onnx.ModelProto as the file has it (weights not loaded), its main graph outputs typed as
    # shape inference found them (onnx.checker rejects untyped ones); inferred value_info is not
    # merged into it: the values carry those types.
    proto: Any = None
    ov_opsets: set[str] = field(default_factory=set)  # OpenVINO opsets used
    ov_layer_types: set[tuple[str, str]] = field(default_factory=set)  # OpenVINO (version, type) pairs used
    stats: dict[str, Any] = field(default_factory=dict)  # loader facts (unknown shapes, ...)
    # Graph input/output types as the file declares them, before shape inference filled gaps.
    declared_io: dict[str, tuple[str | None, Shape]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict, repr=False)  # loader phases (--stats)

    # Graphlint 0.1 let analyses start before the inferred types arrived and left their partial
    # results here; every analysis now sees the complete model, so this is always empty. Kept so
    # that rule packs written for 0.1 still run.
    precomputed: ClassVar[Mapping[str, Any]] = MappingProxyType({})

    def walk(self) -> Iterator[Node]:
        yield from self.graph.walk()
        for body in self.functions.values():
            yield from body.walk()

    @property
    def node_count(self) -> int:
        """How many nodes walk() yields (counted per graph, not per node)."""
        bodies = (self.graph, *self.functions.values())
        return sum(len(g.nodes) for body in bodies for g in body.graphs())

    def opset(self, domain: str = ONNX_DOMAIN) -> int | None:
        return self.opset_imports.get(norm_domain(domain))
