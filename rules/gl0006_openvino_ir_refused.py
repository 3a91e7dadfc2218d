"""GL0006 openvino-ir-refused: layers and edges OpenVINO's IR reader refuses."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Iterator

from graphlint_rules import _contract as C

from graphlint.ir import OPENVINO, Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote
from graphlint.target import data_dir

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

_OPSET = re.compile(r"opset\d+")
FACTS = "openvino_ir.toml"  # what the reader refuses besides operations (the basis of these errors)


class OpenvinoIrRefused(Rule):
    """OpenVINO's IR reader refuses a layer or edge of this .xml.

    ## What it checks
    What `openvino.Core().read_model` checks while it builds the model from an IR `.xml`:
    every `<edge>` joins an existing output port to an existing input port, no input port is
    fed twice, the edges into a layer feed its first input ports with no gap, a layer leaves
    none of the inputs its operation requires unconnected, and each layer's `type` is an
    operation of the opset its `version` names (the tables are generated from the OpenVINO
    wheel's own opset headers: `rules/data/support/openvino-<version>-ir.json`; a constant
    must be spelled `Const`, the only type whose bytes the reader loads). Each finding points
    at the `<edge>` or `<layer>` line.

    ## Why it matters
    `read_model` stops at the first of these with an exception ("Opset opset1 doesn't contain
    the operation with type: ...", "Can not find input port with id 7 in layer ...",
    "... is inconsistent!"), so an IR damaged by hand edits, a truncated copy or a tool that
    writes IR itself cannot be loaded at all. A layer from a custom opset loads only when the
    extension that defines it is added with `core.add_extension` (a warning), except a type that
    OpenVINO's own ONNX frontend makes internally and `save_model` writes as opset `extension`
    (`GroupQueryAttention` from onnxruntime-genai builds): no extension defines it, so such an IR
    cannot be read back at all (an error; `rules/data/openvino_ir.toml#ir-internal-op`). A missing
    optional input silently falls back to the operation's default (a warning).

    ## Example
    `<layer id="2" type="TotallyUnknownOp" version="opset1">`, or
    `<edge from-layer="99" from-port="0" to-layer="2" to-port="1"/>` where no layer has id 99.

    ## Fix
    Regenerate the IR with `openvino.save_model` (or `ovc`) from the source model; for custom
    operations, ship and register the extension that defines them.
    """

    id = "GL0006"
    name = "openvino-ir-refused"
    severity = Severity.ERROR
    dialects = frozenset({OPENVINO})
    source = "openvino 2026.4 read_model, probed per operation and opset (rules/data/support/openvino-2026.4-ir.json)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        model = ctx.model
        table = ctx.target.data("ir_opsets")
        edge_trouble: set[int] = set()
        for issue in model.issues:
            if issue.kind == "xml-edge":
                if issue.node is not None:
                    edge_trouble.add(id(issue.node))
                f = ctx.finding(issue.node, issue.message[:1].upper() + issue.message[1:]
                                + "; OpenVINO's read_model refuses the model.", kind=f"edge {issue.key}",
                                **C.props(C.fact_basis(FACTS, "ir-edge")))
                f.location = dataclasses.replace(f.location, file=model.path, graph_path=issue.graph_path,
                                                 line=issue.line)
                yield f
        for issue in model.issues:  # layers with unconnected input ports, unless an edge problem explains it
            if issue.kind == "xml-port" and issue.node is not None and id(issue.node) not in edge_trouble:
                yield from self._ports(ctx, issue.node, table)
        # The loader lists the (version, type) pairs in use: the layers are walked only if one is refused.
        refused = {pair for pair in model.ov_layer_types if _refused(pair, table)} if table is not None else set()
        if refused:
            for node in model.walk():
                if (node.source.layer_version if node.source else "", node.op_type) in refused:
                    yield from self._type(ctx, node, table)

    def _type(self, ctx: RuleContext, node: Node, table: dict) -> Iterator[Finding]:
        version = node.opset if isinstance(node.opset, str) else ""
        op = table["aliases"].get(node.op_type, node.op_type)
        ops = table["opsets"].get(version)
        engine = f"OpenVINO {table['version']}"
        layer = C.props(C.fact_basis(FACTS, "ir-layer-type"))
        rel = ctx.target.profile["data"]["ir_opsets"]
        opsets = C.props(C.table_basis(rel, f"opsets.{version}" if version in table["opsets"] else "opsets"))
        if node.op_type == "Constant":
            yield ctx.finding(node, f"Layer {quote(node.name)} has type Constant: the IR reader reads a "
                                    f"constant's bytes from the .bin only for type Const, so this one has no "
                                    f"data and {engine}'s compile_model fails.", kind="type", **layer)
        elif not version:
            yield ctx.finding(node, f"Layer {quote(node.name)} (type {node.op_type}) has no version attribute; "
                                    f"{engine}'s read_model refuses a layer without one.", kind="type", **layer)
        elif ops is not None:
            if op not in ops:
                have = sorted((v for v, t in table["opsets"].items() if op in t), key=_n)
                where = f" ({op} is in {', '.join(have[:3])}{', ...' if len(have) > 3 else ''})" if have else ""
                yield ctx.finding(node, f"Layer {quote(node.name)}: {version} has no operation {node.op_type}"
                                        f"{where}; {engine}'s read_model refuses it.", kind="type", **opsets)
        elif _OPSET.fullmatch(version):
            yield ctx.finding(node, f"Layer {quote(node.name)} (type {node.op_type}) names {version}, which "
                                    f"{engine} does not have (its opsets end at {max(table['opsets'], key=_n)}); "
                                    f"read_model refuses it.", kind="type", **opsets)
        elif version == "extension" and node.op_type in _internal_types():
            yield ctx.finding(node, f"Layer {quote(node.name)} (type {node.op_type}) is an operation {engine}'s own "
                                    f"ONNX frontend makes internally, written with opset 'extension': no extension "
                                    f"defines it, so read_model refuses the IR (read the ONNX file instead, or "
                                    f"convert it where it is compiled).", kind="type",
                              **C.props(C.fact_basis(FACTS, "ir-internal-op")))
        else:
            yield ctx.finding(node, f"Layer {quote(node.name)} (type {node.op_type}) is from opset {version!r}, "
                                    f"which {engine} does not define: read_model refuses it unless an extension "
                                    f"that defines it is added with core.add_extension.",
                              severity=Severity.WARNING, kind="type")

    def _ports(self, ctx: RuleContext, node: Node, table: dict | None) -> Iterator[Finding]:
        inputs = node.inputs
        fed = [i for i, v in enumerate(inputs) if v is not None]
        first_gap = inputs.index(None)
        if fed and fed[-1] > first_gap:
            # The reader places the edges into a layer by port position among as many slots as
            # there are edges: a gap leaves a port beyond them ("... is inconsistent!").
            yield ctx.finding(node, f"Layer {quote(node.name)} ({node.op_type}): input {first_gap} has no <edge> "
                                    f"but input {fed[-1]} has one; OpenVINO's read_model refuses a layer whose "
                                    f"connected inputs are not its first ones.", kind="ports",
                              **C.props(C.fact_basis(FACTS, "ir-ports")))
            return
        ops = table["opsets"].get(node.opset or "") if table is not None else None
        op = table["aliases"].get(node.op_type, node.op_type) if table is not None else node.op_type
        required = ops.get(op) if ops is not None else None
        if required is not None and first_gap < required:
            yield ctx.finding(node, f"Layer {quote(node.name)} ({node.op_type}) has {first_gap} of its {len(inputs)} "
                                    f"input ports connected; {node.opset} {op} requires {required} inputs, so "
                                    f"OpenVINO's read_model refuses it.", kind="ports",
                              **C.props(C.fact_basis(FACTS, "ir-ports")))
        else:
            why = (f"input {first_gap} is optional for {node.opset} {op}, so OpenVINO builds the layer "
                   f"without it and its default applies" if required is not None else
                   "OpenVINO builds the layer without it, and refuses the model if the operation requires it")
            yield ctx.finding(node, f"Layer {quote(node.name)} ({node.op_type}) declares input port(s) "
                                    f"{', '.join(str(i) for i in range(first_gap, len(inputs)))} with no <edge>: "
                                    f"{why}.", severity=Severity.WARNING, kind="ports")


@functools.cache
def _internal_types() -> frozenset[str]:
    """Operation types OpenVINO's frontends create internally and save_model writes as 'extension'."""
    path = os.path.join(data_dir(), FACTS)
    with open(path, "rb") as f:
        facts = tomllib.load(f)["fact"]
    return frozenset(next(f for f in facts if f["id"] == "ir-internal-op")["types"])


def _refused(pair: tuple[str, str], table: dict) -> bool:
    version, op = pair
    ops = table["opsets"].get(version)
    return op == "Constant" or ops is None or table["aliases"].get(op, op) not in ops


def _n(opset: str) -> int:
    return int(opset[5:]) if opset[5:].isdigit() else 0
