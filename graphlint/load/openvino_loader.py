"""Load an OpenVINO IR (.xml + .bin) into the normalized IR, safely and lazily.

The .xml is parsed with defusedxml's SAX parser: DTDs, entity declarations and external
entities are refused, so billion-laughs and XXE files fail with a clear error instead of
expanding or reading local files. SAX also gives the 1-based line of each ``<layer>``
element for reports. The .bin is never read whole: Const layers keep their offset and
size and read only their own bytes when a rule asks.

Mapping: every layer becomes a Node in the ``openvino`` dialect (op type = layer type,
opset = the layer's ``version``); every output port becomes a Value named by the port's
first tensor name (or ``layer:port``); Parameter outputs are graph inputs and Result
inputs graph outputs. Bodies of TensorIterator/Loop/If layers become subgraphs.
"""

from __future__ import annotations

import functools
import os
import re
import xml.sax
from dataclasses import dataclass, field
from typing import Any

import defusedxml.sax
import numpy as np
from defusedxml import DefusedXmlException

from graphlint import dtypes
from graphlint.errors import InputError
from graphlint.ir import (
    INT64_MAX,
    OPENVINO,
    Graph,
    LoadIssue,
    Model,
    Node,
    SourceLoc,
    Tensor,
    Value,
    impossible_shape,
)
from graphlint.load.files import os_problem, read_range

BODY_TAGS = {"body", "then_body", "else_body"}
# Real IR nests about 6 elements per body level and rt_info 2-4 deep; these caps keep
# hostile nesting from costing quadratic time and memory (graph paths and rt_info keys
# grow with depth) while a few hundred nested Loop/If bodies still load.
MAX_XML_DEPTH = 4096
MAX_BODY_DEPTH = 512
MAX_RT_DEPTH = 16
# layer rt_info that keeps a layer in f32 (ov::disable_fp16_compression; 2026 spelling)
KEEP_PRECISION = frozenset({"precise", "DisablePrecisionConversion"})


class _TooDeep(Exception):
    """Raised from the SAX handler; parse_xml turns it into an InputError."""


_LEADING_INT = re.compile(r"\s*([+-]?\d+)")


def _dim(text: str) -> int | None:
    text = text.strip()
    try:
        v = int(text)
    except ValueError:
        return None  # "1..128", "-1..-1": dynamic (bounds kept in rt_info)
    return v if 0 <= v <= INT64_MAX else None


def const_shape(text: str) -> tuple[int, ...] | None:
    """A Const layer's ``shape`` attribute, or None where the reader refuses it: it parses each
    comma-separated item as an integer ("Cannot parse 'abc'", an empty item "is incorrect"),
    and a negative one makes the element count disagree with ``size`` (observed on 2026.4)."""
    if not text.strip():
        return ()  # a scalar
    items = [t.strip() for t in text.split(",")]
    if not all(map(str.isdigit, items)):
        return None
    shape = tuple(map(int, items))
    return shape if all(d <= INT64_MAX for d in shape) else None


@functools.lru_cache(maxsize=4096)
def refused_dim(text: str) -> bool:
    """Whether OpenVINO's IR reader refuses this ``<dim>`` text ("dimension (X) in node dim must
    be greater or equal to -1"). As observed on 2026.4 (tests/test_hostile_dims.py checks
    each case against read_model): it reads the leading integer of the text, or of the part
    before ``..`` of an interval, and needs -1 <= value <= INT64_MAX; "", "?" and "..5" have none.
    """
    lower = text.split("..", 1)[0]
    m = _LEADING_INT.match(lower)
    return m is None or not -1 <= int(m.group(1)) <= INT64_MAX


@dataclass
class _Port:
    pid: str
    precision: str | None = None
    names: str | None = None
    dims: list[str] = field(default_factory=list)
    rt_info: dict[str, str] = field(default_factory=dict)


@dataclass
class _Layer:
    lid: str
    name: str
    type: str
    version: str
    line: int
    attrs: dict[str, str] = field(default_factory=dict)
    inputs: list[_Port] = field(default_factory=list)
    outputs: list[_Port] = field(default_factory=list)
    rt_info: dict[str, str] = field(default_factory=dict)
    bodies: dict[str, _GraphCtx] = field(default_factory=dict)


@dataclass
class _GraphCtx:
    path: str
    layers: list[_Layer] = field(default_factory=list)
    edges: list[tuple[str, str, str, str, int]] = field(default_factory=list)


class _Handler(xml.sax.ContentHandler):
    def __init__(self) -> None:
        super().__init__()
        self.locator: Any = None
        self.root = _GraphCtx("main")
        self.net_attrs: dict[str, str] = {}
        self.model_rt: dict[str, str] = {}
        self._graphs = [self.root]
        self._layers: list[_Layer] = []
        self._stack: list[str] = []
        self._port: _Port | None = None
        self._dim_text: list[str] | None = None
        self._section: str | None = None  # "input" | "output"
        self._rt_path: list[str] = []
        self.root_line: int | None = None  # line of the document element

    def setDocumentLocator(self, locator: Any) -> None:
        self.locator = locator

    def startElement(self, tag: str, attrs: Any) -> None:
        a = dict(attrs)
        parent = self._stack[-1] if self._stack else None
        if parent is None and self.locator is not None:
            self.root_line = self.locator.getLineNumber()
        self._stack.append(tag)
        if len(self._stack) > MAX_XML_DEPTH:
            raise _TooDeep(f"XML elements nested deeper than {MAX_XML_DEPTH} levels")
        layer = self._layers[-1] if self._layers else None
        if tag == "rt_info" or self._rt_path:
            self._rt_info(tag, a, layer)
        elif tag == "net" and parent is None:
            self.net_attrs = a
        elif tag == "layer":
            lay = _Layer(a.get("id", "?"), a.get("name", ""), a.get("type", "?"), a.get("version", ""),
                         self.locator.getLineNumber() if self.locator else 0)
            self._graphs[-1].layers.append(lay)
            self._layers.append(lay)
        elif tag in BODY_TAGS and layer is not None:
            ctx = _GraphCtx(f"{self._graphs[-1].path}/{layer.name or layer.lid}/{tag}")
            layer.bodies[tag] = ctx
            self._graphs.append(ctx)
            if len(self._graphs) > MAX_BODY_DEPTH + 1:
                raise _TooDeep(f"layer bodies nested deeper than {MAX_BODY_DEPTH} levels")
        elif tag == "edge" and parent == "edges":
            line = self.locator.getLineNumber() if self.locator else 0
            self._graphs[-1].edges.append(
                (a.get("from-layer", ""), a.get("from-port", ""), a.get("to-layer", ""), a.get("to-port", ""), line)
            )
        elif layer is not None and tag == "data" and parent == "layer":
            layer.attrs.update(a)
        elif layer is not None and tag in ("input", "output") and parent == "layer":
            self._section = tag
        elif layer is not None and tag == "port" and self._section and parent == self._section:
            self._port = _Port(a.get("id", ""), a.get("precision"), a.get("names"))
            (layer.inputs if self._section == "input" else layer.outputs).append(self._port)
        elif tag == "dim" and self._port is not None:
            self._dim_text = []

    def _rt_info(self, tag: str, a: dict[str, str], layer: _Layer | None) -> None:
        # <rt_info><attribute name="layout" layout="[N,C,H,W]"/></rt_info> -> {"layout": "[N,C,H,W]"};
        # nested model info (<conversion_parameters><framework value=.../>) -> "conversion_parameters/framework".
        self._rt_path.append(a.get("name", tag))
        if len(self._rt_path) == 1 or len(self._rt_path) > MAX_RT_DEPTH:
            return
        vals = [v for k, v in a.items() if k not in ("name", "version")]
        if not vals and self._rt_path[-1] not in KEEP_PRECISION:
            return
        target = self._port.rt_info if self._port is not None else layer.rt_info if layer else self.model_rt
        target["/".join(self._rt_path[1:])] = vals[0] if vals else ""

    def characters(self, content: str) -> None:
        if self._dim_text is not None:
            self._dim_text.append(content)

    def endElement(self, tag: str) -> None:
        self._stack.pop()
        if self._rt_path:
            self._rt_path.pop()
            return
        if tag == "dim" and self._port is not None and self._dim_text is not None:
            self._port.dims.append("".join(self._dim_text).strip())
            self._dim_text = None
        elif tag == "port":
            self._port = None
        elif tag in ("input", "output") and self._stack and self._stack[-1] == "layer":
            self._section = None
        elif tag == "layer":
            self._layers.pop()
        elif tag in BODY_TAGS and len(self._graphs) > 1:
            self._graphs.pop()


def parse_xml(path: str) -> _Handler:
    """Parse the .xml; refusals carry the line the parser stopped at (reports put it in the region)."""
    handler = _Handler()

    def line() -> int | None:  # where the parser is: the DOCTYPE, the too-deep element, ...
        n = handler.locator.getLineNumber() if handler.locator is not None else None
        return n if isinstance(n, int) and n > 0 else None

    try:
        with open(path, "rb") as f:
            defusedxml.sax.parse(f, handler, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except _TooDeep as e:
        n = line()
        raise InputError(path, f"{e}{_at(n)}; refusing to analyse it", n) from None
    except DefusedXmlException as e:
        n = line()
        raise InputError(path, f"unsafe XML refused{_at(n)} ({type(e).__name__}: DTDs and entities are not "
                               f"allowed in OpenVINO IR)", n) from None
    except xml.sax.SAXParseException as e:
        n = e.getLineNumber()
        raise InputError(path, f"malformed XML at line {n}: {e.getMessage()}",
                         n if isinstance(n, int) and n > 0 else None) from None
    except OSError as e:
        raise InputError(path, os_problem(e)) from None
    if not handler.net_attrs and not handler.root.layers:
        raise InputError(path, "XML is not an OpenVINO IR (no <net> element)", handler.root_line)
    return handler


def _at(line: int | None) -> str:
    return f" at line {line}" if line else ""


class _Bin:
    """The weights file: existence and size via stat only; bytes read per Const on demand."""

    def __init__(self, path: str, issues: list[LoadIssue]) -> None:
        self.path = path
        self.size: int | None = None
        try:
            st = os.stat(path)
            self.size = st.st_size if os.path.isfile(path) else None
        except OSError:
            pass
        self.missing = self.size is None
        self.issues = issues

    def tensor(self, layer: _Layer, node: Node) -> Tensor:
        dtype = dtypes.ov_dtype(layer.attrs.get("element_type")) or "?"
        name = layer.name or layer.lid
        shape = const_shape(layer.attrs.get("shape", ""))
        if shape is None:  # no shape to trust, no bytes to read
            self.issues.append(LoadIssue(
                "dim-refused", f"Const layer {name!r} (id {layer.lid}) has shape {layer.attrs['shape']!r}, "
                               f"not a list of integers >= 0", node=node, line=layer.line, graph_path=node.graph.path,
                key="shape"))
            return Tensor(name, dtype, (), None, location="bin:bad-shape")
        try:
            offset, size = int(layer.attrs.get("offset", "0")), int(layer.attrs.get("size", "0"))
        except ValueError:
            offset, size = -1, -1
        if self.missing:
            return Tensor(name, dtype, shape, None, location="bin:missing")
        if offset < 0 or size < 0:
            self.issues.append(LoadIssue(
                "bin-range",
                f"Const layer {name!r} (id {layer.lid}) has an invalid offset {layer.attrs.get('offset')!r} "
                f"or size {layer.attrs.get('size')!r}",
                node=node, line=layer.line,
            ))
            return Tensor(name, dtype, shape, None, location="bin:out-of-range")
        if offset + size > (self.size or 0):
            self.issues.append(LoadIssue(
                "bin-range",
                f"Const layer {name!r} (id {layer.lid}) reads bytes {offset}..{offset + size} "
                f"but the .bin has {self.size} bytes",
                node=node, line=layer.line,
            ))
            return Tensor(name, dtype, shape, None, location="bin:out-of-range")
        np_dtype = dtypes.to_numpy(dtype)
        path = self.path

        def read() -> np.ndarray:
            arr = np.frombuffer(read_range(path, offset, size), dtype=np_dtype or np.uint8)
            return arr.reshape(shape) if np_dtype is not None and arr.size == int(np.prod(shape)) else arr

        return Tensor(name, dtype, shape, read, location=f"bin:{offset}+{size}", nbytes=size)


def _build(ctx: _GraphCtx, graph: Graph, file: str, weights: _Bin, issues: list[LoadIssue]) -> set[tuple[str, str]]:
    """Build ``graph`` and its bodies from a work list (no recursion, however deep they nest);
    returns the (version, type) pairs of all their layers."""
    work = [(ctx, graph)]
    layer_types: set[tuple[str, str]] = set()
    while work:
        c, g = work.pop()
        _build_one(c, g, file, weights, issues, work)
        layer_types.update((lay.version, lay.type) for lay in c.layers)
    return layer_types


def _build_one(ctx: _GraphCtx, graph: Graph, file: str, weights: _Bin, issues: list[LoadIssue],
               work: list[tuple[_GraphCtx, Graph]]) -> None:
    nodes: dict[str, Node] = {}
    port_values: dict[tuple[str, str], Value] = {}
    layers: dict[str, _Layer] = {}
    for i, lay in enumerate(ctx.layers):
        if lay.lid in layers:
            issues.append(LoadIssue("xml-structure", f"duplicate layer id {lay.lid!r}", line=lay.line,
                                    graph_path=graph.path, key=f"layer {lay.lid}"))
        layers[lay.lid] = lay
        src = SourceLoc(file=file, graph_path=graph.path, node_index=i, node_name=lay.name,
                        layer_id=lay.lid, layer_type=lay.type, layer_version=lay.version, line=lay.line)
        node = Node(lay.type, lay.name, graph, i, dialect=OPENVINO, domain=OPENVINO,
                    opset=lay.version or None, decode=(lambda a=lay.attrs: dict(a)), source=src,
                    metadata=lay.rt_info)
        nodes[lay.lid] = node
        graph.nodes.append(node)
        for port in (*lay.inputs, *lay.outputs):
            if any(map(refused_dim, port.dims)):  # cached per text: a port costs a few dict lookups
                bad = next(d for d in port.dims if refused_dim(d))
                issues.append(LoadIssue(
                    "dim-refused", f"port {port.pid} of layer {lay.name or lay.lid!r} (id {lay.lid}) has <dim> "
                                   f"{bad!r}, not an integer >= -1 or an interval lo..hi",
                    node=node, line=lay.line, graph_path=graph.path, key=f"port {port.pid}"))
        for port in lay.outputs:
            first = (port.names or "").split(",")[0].strip()
            vname = first or f"{lay.name or lay.lid}:{port.pid}"
            v = graph.values.get(vname) or Value(vname, graph)
            graph.values[vname] = v
            v.dtype = dtypes.ov_dtype(port.precision)
            v.shape = tuple(_dim(d) for d in port.dims)
            # GL0007 reports it (only when flagged: no walk over every value). Dims of 18 digits
            # in all multiply to less than 10^18 < INT64_MAX: only longer ones need the product.
            if sum(map(len, port.dims)) > 18 and impossible_shape(v.shape):
                issues.append(LoadIssue("impossible-dims", f"port {port.pid} of layer {lay.lid} has more than "
                                                           f"2^63 - 1 elements", node=node, line=lay.line))
            v.producer = node
            v.rt_info = dict(port.rt_info)
            if any(_dim(d) is None and d != "-1" for d in port.dims):  # intervals, and texts read_model refuses
                v.rt_info.setdefault("bounds", ",".join(port.dims))
            node.outputs.append(v)
            port_values[(lay.lid, port.pid)] = v
        for k in KEEP_PRECISION.intersection(lay.rt_info):  # a layer kept in f32: on its outputs
            for v in node.outputs:
                v.rt_info = {**v.rt_info, k: lay.rt_info[k]}
        if lay.type == "Const" and node.outputs:
            node.outputs[0].const = weights.tensor(lay, node)
        if lay.type == "Parameter" and node.outputs:
            v = node.outputs[0]
            v.is_input = True
            for k, val in lay.rt_info.items():
                v.rt_info.setdefault(k, val)
            graph.inputs.append(v)
        for tag, body in lay.bodies.items():
            sub = Graph(tag, body.path, owner=node)
            node.subgraphs[tag] = sub
            work.append((body, sub))

    # Inputs in port order; edges to unknown layers/ports, or into a port already fed, are
    # reported (on the layer that exists, at the <edge> line), not trusted.
    slots: dict[str, dict[str, Value | None]] = {lid: {p.pid: None for p in lay.inputs} for lid, lay in layers.items()}
    for fl, fp, tl, tp, line in ctx.edges:
        src_v = port_values.get((fl, fp))
        if src_v is None or tl not in slots or tp not in slots[tl]:
            missing = (f"layer {fl} port {fp}" if src_v is None else f"layer {tl} port {tp}")
            problem = f"refers to a missing {missing}"
        elif slots[tl][tp] is not None:
            first = next(e[4] for e in ctx.edges if e[2] == tl and e[3] == tp)
            problem = f"feeds input port {tp} of layer {tl}, which an earlier edge (line {first}) already feeds"
        else:
            slots[tl][tp] = src_v
            continue
        issues.append(LoadIssue("xml-edge", f"edge {fl}:{fp} -> {tl}:{tp} {problem}", node=nodes.get(tl) or nodes.get(fl),
                                line=line, graph_path=graph.path, key=f"{fl}:{fp}->{tl}:{tp}"))
    for lid, ports in slots.items():
        node = nodes[lid]
        node.inputs = list(ports.values())
        if None in node.inputs:  # GL0006 judges it with the operation's input count
            issues.append(LoadIssue("xml-port", f"layer {lid} has input ports without an <edge>", node=node,
                                    line=layers[lid].line, graph_path=graph.path))
        for v in node.inputs:
            if v is not None:
                v.consumers.append(node)
        if node.op_type == "Result" and node.inputs and node.inputs[0] is not None:
            out = node.inputs[0]
            out.is_output = True
            graph.outputs.append(out)


def load(path: str) -> Model:
    h = parse_xml(path)
    issues: list[LoadIssue] = []
    bin_path = os.path.splitext(path)[0] + ".bin"
    weights = _Bin(bin_path, issues)
    main = Graph(h.net_attrs.get("name", "main"), "main")
    layer_types = _build(h.root, main, path, weights, issues)
    if weights.missing:
        # OpenVINO fails on the first Const that reads weights: report it there, at its <layer> line.
        readers = [n for n in main.walk() if n.op_type == "Const" and n.source is not None
                   and n.attr("size") != "0"]
        first = min(readers, key=lambda n: n.source.line or 0, default=None)
        if first is not None:
            issues.append(LoadIssue(
                "bin-missing", f"weights file {os.path.basename(bin_path)!r} is missing or not a file "
                               f"(Const layer {first.name!r}, id {first.source.layer_id}, is the first that reads it)",
                node=first, line=first.source.line))
    model = Model(
        path=path,
        format="openvino",
        graph=main,
        dialect=OPENVINO,
        ir_version=int(h.net_attrs["version"]) if h.net_attrs.get("version", "").isdigit() else None,
        producer="openvino",
        rt_info=h.model_rt,
        issues=issues,
        ov_opsets={version for version, _ in layer_types if version},
        ov_layer_types=layer_types,
    )
    return model
