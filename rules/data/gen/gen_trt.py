"""Build rules/data/support/trt-<version>.json from the onnx-tensorrt operator matrix (markdown).

    python rules/data/gen/gen_trt.py ../shared/reference/onnx-tensorrt-operators-trt10.15.md 10.15
    python rules/data/gen/gen_trt.py ../shared/reference/onnx-tensorrt-operators.md 10.1

(the markdown files are local copies of the documents in ``DOCUMENTS``, which the table cites).

Every row of the matrix becomes one entry (op, supported flag, types, the row's line number and
its restriction text). Each sentence of a restriction cell is translated into a structured
constraint by the phrase table below; a sentence no phrase matches stops the generator, so a
new engine version's matrix cannot silently lose a restriction. Input and output names in the
sentences are resolved to indices through the onnx operator schemas.

Where the document and the importer source at the same tag disagree, the source decides:
``rules/data/trt_source_overrides.toml`` lists each disagreement with its cite, and
:func:`apply_overrides` edits the parsed rows by it (the corpus truth, ``testmodels/corpus/trtdoc.py``,
reads the same file). Every constraint an override touches or adds carries the source cite.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import onnx.defs

from graphlint.compat import tomllib
from graphlint.fsutil import atomic_write_text

TYPES = {
    "FP32": "float32", "FLOAT32": "float32", "FP16": "float16", "FLOAT16": "float16", "BF16": "bfloat16",
    "BFLOAT16": "bfloat16", "INT32": "int32", "INT64": "int64", "INF64": "int64",  # INF64: typo in the 10.1 doc
    "INT8": "int8", "INT4": "int4", "UINT8": "uint8", "BOOL": "bool", "FP8": "float8e4m3fn", "FP4": "float4e2m1",
    "DOUBLE": "float64",
}
ALIASES = {"is_training": "training_mode", "is_traning": "training_mode", "input": "X", "Input": "X"}

Constraint = dict[str, Any]


def _names(text: str) -> list[str]:
    return [ALIASES.get(n.strip(), n.strip()) for n in re.findall(r"`([^`]+)`", text)]


def _schema(op: str):
    try:
        return onnx.defs.get_schema(op, onnx.defs.onnx_opset_version())
    except onnx.defs.SchemaError:
        return None


def _index(op: str, name: str, outputs: bool = False) -> int:
    s = _schema(op)
    params = (s.outputs if outputs else s.inputs) if s else []
    for i, p in enumerate(params):
        if p.name == name or (name == "X" and i == 0):
            return i
    raise KeyError(f"{op}: no {'output' if outputs else 'input'} named {name!r} in the onnx schema")


def _inputs(op: str, names: list[str]) -> list[int]:
    return [_index(op, n) for n in names]


def _value_constraint(op: str, name: str, value: str) -> Constraint:
    """``x` must be 0``: an input that must hold zeros, or an attribute with a required value."""
    s = _schema(op)
    if s is not None and any(p.name == name for p in s.inputs):
        return {"kind": "zero_input", "inputs": [_index(op, name)]}
    return {"kind": "attr_in", "attr": name, "values": [0 if value == "zero" else int(value)]}


# (pattern, builder(op, match, sentence) -> constraints). Order matters: first match wins.
PHRASES: list[tuple[str, Callable[[str, re.Match, str], list[Constraint]]]] = [
    (r"must be 4D", lambda op, m, s: [{"kind": "input_rank", "inputs": _inputs(op, _names(s)), "ranks": [4]}]),
    (r"^Input must be 4D", lambda op, m, s: [{"kind": "input_rank", "inputs": [0], "ranks": [4]}]),
    (r"inputs are unsupported", lambda op, m, s: [{"kind": "input_absent", "inputs": _inputs(op, _names(s))}]),
    (r"outputs are unsupported", lambda op, m, s: [
        {"kind": "output_unused", "outputs": [_index(op, n, True) for n in _names(s)]}]),
    (r"output tensor unsupported", lambda op, m, s: [
        {"kind": "output_unused", "outputs": [_index(op, n if n != "Indices" else "Indices", True) for n in _names(s)]}]),
    (r"^Only the first output", lambda op, m, s: [
        {"kind": "output_unused", "outputs": list(range(1, len(_schema(op).outputs)))}]),
    (r"attributes are unsupported", lambda op, m, s: [{"kind": "attr_absent", "attrs": _names(s)}]),
    (r"attributes are supported via", lambda op, m, s: [{"kind": "note"}]),
    (r"^2D or 3D [Pp]ooling only", lambda op, m, s: [{"kind": "spatial_rank", "input": 0, "ranks": [2, 3]}]),
    (r"must have 1D or 2D spatial", lambda op, m, s: [{"kind": "spatial_rank", "input": 0, "ranks": [1, 2]}]),
    (r"`dilations` must be empty or all ones", lambda op, m, s: [{"kind": "attr_ones", "attr": "dilations"}]),
    (r"`pads` for the beginning and end .* must be the same",
     lambda op, m, s: [{"kind": "pads_symmetric", "attr": "pads"}]),
    (r"`axis` dimension of input must be a build-time constant",
     lambda op, m, s: [{"kind": "static_axis_dim", "input": 0, "attr": "axis"}]),
    (r"must be an initializer and evaluate to False", lambda op, m, s: [
        {"kind": "const_input", "inputs": _inputs(op, _names(s)), "initializer": True, "values": [False]}]),
    (r"must be (an initializer|a build-time constant|a constant tensor|resolvable to a constant)",
     lambda op, m, s: [{"kind": "const_input", "inputs": _inputs(op, _names(s)),
                        "initializer": m.group(1) == "an initializer"}]),
    (r"must have static dimensions", lambda op, m, s: [{"kind": "static_input", "inputs": [0]}]),
    (r"^For bidirectional .* activation functions must be the same",
     lambda op, m, s: [{"kind": "bidirectional_same_activations"}]),
    (r"^`(\w+)` attribute must be (-?\d+)$",
     lambda op, m, s: [{"kind": "attr_in", "attr": m.group(1), "values": [int(m.group(2))]}]),
    (r"^`(\w+)` must be (zero|-?\d+)$", lambda op, m, s: [_value_constraint(op, m.group(1), m.group(2))]),
    (r"^`K` input must be less than (\d+)",
     lambda op, m, s: [{"kind": "input_value_below", "input": _index(op, "K"), "limit": int(m.group(1))}]),
    (r"^`(\w+)` (other than `(\w+)` )?is not supported",
     lambda op, m, s: [{"kind": "attr_in", "attr": m.group(1), "values": [m.group(3) or "none"]}]),
    (r"^Supported resize transformation modes:",
     lambda op, m, s: [{"kind": "attr_in", "attr": "coordinate_transformation_mode", "values": _names(s)}]),
    (r"^Supported resize modes:", lambda op, m, s: [{"kind": "attr_in", "attr": "mode", "values": _names(s)}]),
    (r"^Supported nearest modes:", lambda op, m, s: [{"kind": "attr_in", "attr": "nearest_mode", "values": _names(s)}]),
    (r"^Supported aspect ratio policy:",
     lambda op, m, s: [{"kind": "attr_in", "attr": "keep_aspect_ratio_policy", "values": _names(s)}]),
    (r"`axes` must be an iota vector", lambda op, m, s: [{"kind": "attr_iota", "attr": "axes", "input": 0}]),
    (r"^Antialiasing is not supported", lambda op, m, s: [{"kind": "attr_in", "attr": "antialias", "values": [0]}]),
    (r"must be INT64", lambda op, m, s: [{"kind": "input_dtype", "inputs": _inputs(op, _names(s)), "types": ["int64"]}]),
    (r"^Input must be real-valued", lambda op, m, s: [{"kind": "last_dim", "input": 0, "values": [1]}]),
    (r"value is ignored by TensorRT",
     lambda op, m, s: [{"kind": "attr_ignored", "attr": _names(s)[0], "severity": "warning"}]),
    (r"branches must have the same rank", lambda op, m, s: [{"kind": "if_branches"}]),
    # Restrictions TensorRT checks while running the loop body: documented, not statically decidable here.
    (r"^Scan output length cannot be dynamic",
     lambda op, m, s: [{"kind": "note", "static": False, "see": "GL3004 data-dependent-shape"}]),
    (r"^The shape of Loop carried dependencies", lambda op, m, s: [{"kind": "note", "static": False}]),
    (r"^Not supported", lambda op, m, s: [{"kind": "note"}]),
    (r"IDynamicQuantize can be composed", lambda op, m, s: [{"kind": "note"}]),
]


def _sentences(cell: str) -> list[str]:
    parts: list[str] = []
    for chunk in re.split(r"<br\s*/?>", cell):
        parts.extend(p.strip() for p in re.split(r"(?<=[.])\s+(?=[A-Z`])", chunk))
    return [p.rstrip(".").strip() for p in parts if p.strip(" .")]


def constraints_for(op: str, cell: str) -> list[Constraint]:
    out: list[Constraint] = []
    for sentence in _sentences(cell):
        for pattern, build in PHRASES:
            m = re.search(pattern, sentence)
            if m:
                for c in build(op, m, sentence):
                    c["text"] = sentence
                    out.append(c)
                break
        else:
            raise SystemExit(f"gen_trt: no phrase matches {op}: {sentence!r}; extend PHRASES")
    return out


def parse(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    header = next(ln for ln in lines if "supports operators in the inclusive range" in ln)
    m = re.search(r"TensorRT ([\d.]+) supports operators in the inclusive range of opset (\d+) to opset (\d+)", header)
    assert m, header
    ops: dict[str, Any] = {}
    notes = []
    in_table = False
    for lineno, line in enumerate(lines, 1):
        if line.startswith("> Note:"):
            notes.append({"row": lineno, "text": line[2:].strip()})
        if line.startswith("| Operator"):
            in_table = True
            continue
        if not in_table or not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        op, flag = cells[0], cells[1]
        types_cell = cells[2] if len(cells) > 2 else ""
        restrictions = " | ".join(c for c in cells[3:] if c) if len(cells) > 3 else ""
        supported = flag == "Y"
        types = []
        if supported:
            for t in (x.strip() for x in types_cell.split(",")):
                if t:
                    types.append(TYPES[t])
        else:
            restrictions = " ".join(c for c in cells[2:] if c)
        ops[op] = {
            "supported": supported,
            "types": types,
            "row": lineno,
            "restrictions": restrictions,
            "constraints": constraints_for(op, restrictions) if restrictions else [],
        }
    return {"header_version": m.group(1), "opsets": [int(m.group(2)), int(m.group(3))], "ops": ops, "notes": notes}


# The published document each TensorRT version's matrix is, at a fixed tag or commit (the row
# numbers of the table are its line numbers, so a citation is ``URL#L<row>``).
DOCUMENTS = {
    "10.1": ("https://github.com/onnx/onnx-tensorrt/blob/96e781103cfc4adf4a6bb557e94bac8e693f6f4c/docs/operators.md",
             "tag release/10.1-GA, commit 96e781103cfc4adf4a6bb557e94bac8e693f6f4c"),
    "10.15": ("https://github.com/onnx/onnx-tensorrt/blob/release/10.15-GA/docs/operators.md",
              "TensorRT 10.15 GA (2026-02-02); tag named like the earlier release/<version>-GA tags"),
}


OVERRIDES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "trt_source_overrides.toml")


def load_overrides(path: str = OVERRIDES) -> dict[str, Any]:
    with open(path, "rb") as f:
        return tomllib.load(f)


def _matches(c: Constraint, match: dict[str, Any]) -> bool:
    return all(c.get(k) == v for k, v in match.items())


def apply_overrides(ops: dict[str, Any], version: str, data: dict[str, Any]) -> list[str]:
    """Edit the document's rows where the importer source decides otherwise; returns the override ids
    applied. An override whose edit finds nothing to change stops the generator (a stale entry)."""
    applied = []
    base = data["sources"][version]["base"]
    for o in data["override"]:
        if version not in o["versions"]:
            continue
        cite = f"{base} {o['cite'][version]}"
        for op in [o["op"]] if isinstance(o["op"], str) else o["op"]:
            row = ops[op]
            touched = 0
            for p in o.get("patch", []):
                for c in row["constraints"]:
                    if _matches(c, p["match"]):
                        c.update(p["set"])
                        c.update(source=cite, text=o["resolution"])
                        touched += 1
            for d in o.get("drop", []):
                before = len(row["constraints"])
                row["constraints"] = [c for c in row["constraints"] if not _matches(c, d)]
                touched += before - len(row["constraints"])
            for a in o.get("add", []):
                row["constraints"].append({**a, "source": cite, "text": o["resolution"]})
                touched += 1
            if "types" in o:
                row.update(types=list(o["types"]), types_source=cite)
                touched += 1
            if not touched:
                raise SystemExit(f"gen_trt: override {o['id']} changes nothing in {op} ({version}); update the TOML")
            row.setdefault("source_overrides", []).append(o["id"])
        applied.append(o["id"])
    return applied


def build(md: str, version: str) -> dict[str, Any]:
    parsed = parse(md)
    applied = apply_overrides(parsed["ops"], version, load_overrides())
    url, pinned = DOCUMENTS[version]
    return {
        "engine": "tensorrt",
        "version": version,
        "kind": "trt-matrix",
        "source": url,
        "row_anchor": "#L",
        "source_note": f"onnx-tensorrt docs/operators.md ({pinned}); header says TensorRT "
                       f"{parsed['header_version']}, opsets {parsed['opsets'][0]}-{parsed['opsets'][1]}",
        "generated_by": "rules/data/gen/gen_trt.py",
        "source_overrides": {"file": "rules/data/trt_source_overrides.toml", "applied": applied,
                             "commit": load_overrides()["sources"][version]["commit"]},
        "dispatch": "op_type",  # the parser looks importers up by op type only, whatever the node's domain
        "opsets": parsed["opsets"],
        "notes": parsed["notes"],
        "global": {
            "cast_down": {"float64": "float32"},
            "boundary_only_types": ["uint8"],
            "quantized_types": ["int8", "int4", "float8e4m3fn", "float4e2m1"],
        },
        "ops": parsed["ops"],
    }


def main(argv: list[str]) -> None:
    md, version = argv[1], argv[2]
    out = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", f"trt-{version}.json")
    data = build(md, version)
    atomic_write_text(out, json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}: {len(data['ops'])} rows")


if __name__ == "__main__":
    main(sys.argv)
