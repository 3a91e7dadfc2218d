"""What the TensorRT 10.15 parser's operator document says about each node of an ONNX model.

The document (onnx-tensorrt ``docs/operators.md`` for TensorRT 10.15, kept in the steering
repo's ``shared/reference/onnx-tensorrt-operators-trt10.15.md``) lists per operator: supported
Y/N, the element types, and restrictions; its header gives the opset range (9 to 24). Read here
straight from the markdown, independently of graphlint's generated support table.

A node is **unsupported** when its domain is not the ONNX domain (the parser has no importer for
com.microsoft / ai.onnx.ml ops; only a plugin registered under that name could take one), its op
is not in the matrix or is marked N, or its first input's element type is not in the row's types
(DOUBLE excepted: the document says it is cast down to FLOAT); a model whose ONNX opset is outside
the range is unsupported as a whole. A node is **constrained** when its row has a restriction;
``violated`` shows a restriction broken where its premise is known from the file (an ``axes``
input computed from a graph input, If branches of known different ranks, a listed attribute
value, a non-zero zero point), and a model with such a node is a positive too
("restriction broken"). A restriction whose premise is unknown is not counted.
Model-local functions are expanded (the parser imports their bodies); If/Loop/Scan bodies are
walked.

Where the document and the onnx-tensorrt importer source at the same tag disagree, the source
decides: ``rules/data/trt_source_overrides.toml`` (also read by ``rules/data/gen/gen_trt.py`` for
graphlint's support table) replaces a row's types, widens or drops a restriction, or adds one the
source checks at parse time (cubic Resize only on the innermost 2 dims, Mod fmod=0 on floats, ...).
"""

from __future__ import annotations

import contextlib
import os
import re
from functools import cache

import onnx

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

DOC_NAME = "onnx-tensorrt-operators-trt10.15.md"
TYPES = {"FP32": 1, "FLOAT32": 1, "FP16": 10, "BF16": 16, "INT32": 6, "INT64": 7, "INT8": 3, "UINT8": 2, "BOOL": 9,
         "FP8": 17, "FP4": 23, "INT4": 22, "DOUBLE": 11}
ONNX_DOMAINS = ("", "ai.onnx")
VERSION = "10.15"  # the document's TensorRT version, whose source overrides apply
OVERRIDES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "rules", "data",
                         "trt_source_overrides.toml")
ONNX_TYPES = {"float32": 1, "float16": 10, "bfloat16": 16, "int32": 6, "int64": 7, "int8": 3, "uint8": 2, "bool": 9}


@cache
def source_overrides(version: str = VERSION) -> dict[str, list[dict]]:
    """op -> the [[override]] entries of the shared TOML that apply to this TensorRT version."""
    with open(OVERRIDES, "rb") as f:
        data = tomllib.load(f)
    out: dict[str, list[dict]] = {}
    for o in data["override"]:
        if version in o["versions"]:
            for op in [o["op"]] if isinstance(o["op"], str) else o["op"]:
                out.setdefault(op, []).append(o)
    return out


def doc_path() -> str | None:
    """The document beside the checkout (CI: ../shared/reference) or where GRAPHLINT_TRT_DOC points."""
    here = os.path.dirname(os.path.abspath(__file__))
    for p in (os.environ.get("GRAPHLINT_TRT_DOC", ""),
              os.path.join(here, "..", "..", "..", "shared", "reference", DOC_NAME),
              os.path.join("/work/shared/reference", DOC_NAME)):
        if p and os.path.isfile(p):
            return os.path.abspath(p)
    return None


@cache
def matrix(path: str) -> tuple[tuple[int, int], dict[str, dict]]:
    """((min opset, max opset), op -> {supported, types, restriction, line})."""
    rows: dict[str, dict] = {}
    lo = hi = 0
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            m = re.search(r"range of opset (\d+) to opset (\d+)", line)
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 2 or cells[1] not in ("Y", "N") or not re.fullmatch(r"[A-Za-z0-9]+", cells[0]):
                continue
            types = {TYPES[t.strip()] for t in (cells[2] if len(cells) > 2 else "").split(",") if t.strip() in TYPES}
            restriction = cells[3] if len(cells) > 3 and cells[1] == "Y" else ""
            rows[cells[0]] = {"supported": cells[1] == "Y", "types": types, "restriction": restriction,
                              "line": lineno}
            for o in source_overrides().get(cells[0], []):  # the importer source decides
                rows[cells[0]].setdefault("overrides", []).append(o["id"])
                if "types" in o:
                    rows[cells[0]]["types"] = {ONNX_TYPES[t] for t in o["types"]}
    if not (lo and hi and rows):
        raise ValueError(f"{path}: not the onnx-tensorrt operator matrix")
    return (lo, hi), rows


def _nodes(graph: onnx.GraphProto, functions: dict[tuple[str, str], onnx.FunctionProto]):
    for node in graph.node:
        fn = functions.get((node.domain, node.op_type))
        if fn is not None:
            yield from _nodes(onnx.helper.make_graph(fn.node, fn.name, [], []), functions)
            continue
        yield node
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(a.g, functions)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from _nodes(g, functions)


class _Facts:
    """Element types, ranks, constants and producers of every value, over all graph scopes."""

    def __init__(self, model: onnx.ModelProto) -> None:
        with contextlib.suppress(Exception):  # else the file's own annotations
            model = onnx.shape_inference.infer_shapes(model)
        self.types: dict[str, int] = {}
        self.ranks: dict[str, int] = {}
        self.constants: dict[str, onnx.TensorProto | None] = {}  # initializers and Constant outputs
        self.producers: dict[str, onnx.NodeProto] = {}
        self.inputs: set[str] = set()  # graph and subgraph inputs: values known only at run time
        self._visit(model.graph, top=True)

    def _visit(self, g: onnx.GraphProto, top: bool = False) -> None:
        inits = {t.name for t in g.initializer}
        self.inputs.update(vi.name for vi in g.input if vi.name not in inits)
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            tt = vi.type.tensor_type
            if vi.type.HasField("tensor_type") and tt.elem_type:
                self.types[vi.name] = tt.elem_type
            if vi.type.HasField("tensor_type") and tt.HasField("shape"):
                self.ranks[vi.name] = len(tt.shape.dim)
        for t in g.initializer:
            self.types[t.name] = t.data_type
            self.ranks[t.name] = len(t.dims)
            self.constants[t.name] = t
        for n in g.node:
            for o in n.output:
                self.producers[o] = n
            if n.op_type == "Constant" and n.domain in ONNX_DOMAINS:
                value = next((a.t for a in n.attribute if a.name == "value"), None)
                self.constants[n.output[0]] = value
                if value is not None:
                    self.types[n.output[0]] = value.data_type
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    self._visit(a.g)
                for sub in a.graphs:
                    self._visit(sub)

    def from_run_time(self, name: str) -> bool:
        """The value depends on a graph input (so no build-time constant folding resolves it)."""
        stack, seen = [name], set()
        while stack:
            v = stack.pop()
            if v in seen or v in self.constants:
                continue
            seen.add(v)
            if v in self.inputs:
                return True
            node = self.producers.get(v)
            if node is not None:
                stack.extend(i for i in node.input if i)
        return False


def _attr(node: onnx.NodeProto, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


RESIZE = {"coordinate_transformation_mode": {b"half_pixel", b"pytorch_half_pixel", b"tf_half_pixel_for_nn",
                                             b"asymmetric", b"align_corners"},
          "mode": {b"nearest", b"linear"},
          "nearest_mode": {b"floor", b"ceil", b"round_prefer_floor", b"round_prefer_ceil"}}

def _resize_allowed() -> dict[str, set[bytes]]:
    """The document's Resize values, widened where the source overrides patch them (cubic)."""
    allowed = {k: set(v) for k, v in RESIZE.items()}
    for o in source_overrides().get("Resize", []):
        for p in o.get("patch", []):
            if p["match"].get("kind") == "attr_in" and p["match"].get("attr") in allowed:
                allowed[p["match"]["attr"]] = {str(v).encode() for v in p["set"]["values"]}
    return allowed


def _dropped(op: str, kind: str, attr: str) -> bool:
    return any(d.get("kind") == kind and d.get("attr", attr) == attr
               for o in source_overrides().get(op, []) for d in o.get("drop", []))


def _schema_attr(node: onnx.NodeProto, name: str, opset: int):
    """The node's attribute, else the schema default (str for strings)."""
    v = _attr(node, name)
    if v is None:
        try:
            a = onnx.defs.get_schema(node.op_type, opset).attributes.get(name)
        except onnx.defs.SchemaError:
            a = None
        if a is not None and a.default_value.name:
            v = onnx.helper.get_attribute_value(a.default_value)
    return v.decode() if isinstance(v, bytes) else v


def _added(node: onnx.NodeProto, opset: int, facts: _Facts) -> str | None:
    """A parse-time check the importer source adds (the override file's ``add``), broken by this node."""
    for o in source_overrides().get(node.op_type, []):
        for c in o.get("add", []):
            if any(_schema_attr(node, k, opset) != v for k, v in c.get("when", {}).items()):
                continue
            kind = c["kind"]
            if kind == "attr_in":
                v = _schema_attr(node, c["attr"], opset)
                if v is not None and v not in c["values"]:
                    return f"{c['attr']}={v} ({o['id']})"
            elif kind == "input_dtype":
                t = facts.types.get(node.input[c["inputs"][0]]) if len(node.input) > c["inputs"][0] else None
                if t and t not in {ONNX_TYPES[x] for x in c["types"]}:
                    return f"input type {onnx.TensorProto.DataType.Name(t)} ({o['id']})"
            elif kind == "const_input":
                i = c["inputs"][0]
                if len(node.input) > i and node.input[i] and node.input[i] not in facts.constants:
                    return f"input {i} is not an initializer ({o['id']})"
            elif kind == "scales_innermost":
                i = 1 if opset < 11 else 2
                t = facts.constants.get(node.input[i]) if len(node.input) > i and node.input[i] else None
                scales = onnx.numpy_helper.to_array(t).reshape(-1).tolist() if t is not None else []
                axes = _attr(node, "axes")
                rank = facts.ranks.get(node.input[0])
                if axes and rank:
                    full = [1.0] * rank
                    for a, v in zip(axes, scales, strict=False):
                        full[a % rank] = v
                    scales = full
                n = c["n"]
                if len(scales) > n and any(v != 1 for v in scales[:-n]):
                    return f"scales {scales} resize outside the innermost {n} dims ({o['id']})"
            elif kind == "real_signal":
                r = facts.ranks.get(node.input[0])
                if r is not None and r not in (2, 3):
                    return f"signal of rank {r} ({o['id']})"
    return None


REDUCE_AXES_INPUT = 18  # Reduce* take axes as an input from opset 18 (ReduceSum from 13)


def violated(node: onnx.NodeProto, opset: int, facts: _Facts) -> str | None:
    """A restriction of the document this node is shown to break (known premises only), or None."""
    op = node.op_type
    if op in ("Squeeze", "Unsqueeze") and len(node.input) > 1 and node.input[1] and \
            facts.from_run_time(node.input[1]):
        return "`axes` computed from a graph input, not resolvable to a constant"
    if op.startswith("Reduce") and len(node.input) > 1 and node.input[1] and \
            (opset >= REDUCE_AXES_INPUT or op == "ReduceSum") and node.input[1] not in facts.constants:
        return "`axes` is not an initializer"
    if op == "If":
        then, other = _attr(node, "then_branch"), _attr(node, "else_branch")
        for a, b in zip(then.output, other.output, strict=False):
            ra, rb = facts.ranks.get(a.name), facts.ranks.get(b.name)
            if ra is not None and rb is not None and ra != rb:
                return f"branch outputs of rank {ra} and {rb}"
            if a.name == b.name:
                return "branch outputs with the same name"
    if op == "LSTM" and (_attr(node, "layout", 0) or _attr(node, "input_forget", 0)):
        return "`layout` or `input_forget` is not 0"
    added = _added(node, opset, facts)
    if added:
        return added
    if op == "Resize":
        for attr, ok in _resize_allowed().items():
            v = _attr(node, attr)
            if v is not None and v not in ok:
                return f"{attr}={v.decode()}"
    if op in ("QuantizeLinear", "DequantizeLinear") and len(node.input) > 2 and node.input[2]:
        zp = facts.constants.get(node.input[2])
        if zp is not None and onnx.numpy_helper.to_array(zp).any():
            return "zero point is not 0"
    if op == "TopK" and _attr(node, "sorted", 1) != 1 and not _dropped("TopK", "attr_in", "sorted"):
        return "`sorted` is not 1"
    if op in ("MaxPool", "AveragePool", "LpPool"):
        if any(d != 1 for d in _attr(node, "dilations", []) or []):
            return "`dilations` not all ones"
        if op == "MaxPool" and len(node.output) > 1 and node.output[1]:
            return "`Indices` output used"
        rank = facts.ranks.get(node.input[0])
        if op != "LpPool" and rank is not None and rank not in (4, 5):
            return f"{rank - 2}-D pooling"
    if op == "LayerNormalization" and any(node.output[1:]):
        return "outputs other than `Y` used"
    return None


def judge(path: str, doc: str) -> dict:
    """{"verdict": "unsupported" | "restriction broken" | "supported", the nodes behind it} for one model."""
    (lo, hi), rows = matrix(doc)
    model = onnx.load(path, load_external_data=False)
    opset = next((o.version for o in model.opset_import if o.domain in ONNX_DOMAINS), 0)
    functions = {(f.domain, f.name): f for f in model.functions}
    facts = _Facts(model)
    unsupported: set[str] = set()
    constrained: set[str] = set()
    broken: set[str] = set()
    if not lo <= opset <= hi:
        unsupported.add(f"opset {opset} outside {lo}-{hi} (line 5)")
    for node in _nodes(model.graph, functions):
        name = f"{node.op_type}-{opset}"
        if node.domain not in ONNX_DOMAINS:
            unsupported.add(f"{node.domain}:{node.op_type}: not an ONNX-domain op")
            continue
        row = rows.get(node.op_type)
        if row is None:
            unsupported.add(f"{name}: not in the matrix")
        elif not row["supported"]:
            unsupported.add(f"{name}: N (line {row['line']})")
        else:
            t = facts.types.get(node.input[0]) if node.input and node.input[0] else None
            if t and row["types"] and t not in row["types"] and t != onnx.TensorProto.DOUBLE:
                tname = onnx.TensorProto.DataType.Name(t)
                unsupported.add(f"{name}: input type {tname} not listed (line {row['line']})")
            if row["restriction"] or row.get("overrides"):
                why = violated(node, opset, facts)
                if why:
                    broken.add(f"{name}: {why} (line {row['line']})")
                else:
                    constrained.add(node.op_type)
    verdict = "unsupported" if unsupported else "restriction broken" if broken else "supported"
    return {"verdict": verdict, "unsupported": sorted(unsupported), "restriction_broken": sorted(broken),
            "constrained_ops": sorted(constrained)}
