"""Build rules/data/support/openvino-<version>-ir.json: the layer types each opset of OpenVINO IR has.

    python rules/data/gen/gen_openvino_ir.py      # about a minute

OpenVINO's IR reader creates a ``<layer type="T" version="opsetN">`` from opset N and refuses
the model otherwise ("Opset opsetN doesn't contain the operation with type: T"; "Cannot
create T layer ... from unsupported opset: V" for an opset it does not have). The candidates
are every operation the wheel's own headers register
(``openvino/include/openvino/opsets/opsetN_tbl.hpp``, one ``_OPENVINO_OP_REG(Type, namespace)``
line each); the reader itself is then asked, for every opset and candidate, with a one-layer IR:
an operation is in the opset unless it answers "doesn't contain the operation". That finds what
the headers leave out: the reader still takes MVN, ROIPooling and ReorgYolo as opset1 (the
headers mark them "Missing in opset1"). The reader crashes (SIGSEGV) on a few malformed probes
(a one-input Broadcast, Assign, ReadValue): it had found the operation, so those count as present.

Per operation the table also records how many inputs it requires, read from the signature of
the wheel's Python factory for it (``openvino.opsetN.<snake_case name>``, ``openvino.runtime.opsetN`` in
releases before 2025: node arguments without
a default): an IR whose layer leaves a required input port without an ``<edge>`` is refused. It
is ``null`` where no factory matches or the inputs are a list (Concat), i.e. unknown.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Any

import openvino as ov

from graphlint.fsutil import atomic_write_text

OV_VERSION = ov.get_version().split("-")[0]
_REG = re.compile(r"^_OPENVINO_OP_REG\((\w+),", re.M)
# The IR spells four operations its own way: openvino src/core/src/pass/serialize.cpp
# (get_translate_type_name_translator) writes these names and the IR reader maps them back.
IR_ALIASES = {"Const": "Constant", "PReLU": "PRelu", "ReLU": "Relu", "SoftMax": "Softmax"}
NOT_IN_OPSET = "doesn't contain the operation with type"


def header_tables() -> dict[str, list[str]]:
    folder = os.path.join(os.path.dirname(ov.__file__), "include", "openvino", "opsets")
    tables: dict[str, list[str]] = {}
    n = 1
    while os.path.isfile(path := os.path.join(folder, f"opset{n}_tbl.hpp")):
        with open(path, encoding="utf-8") as f:
            tables[f"opset{n}"] = _REG.findall(f.read())
        n += 1
    if not tables:
        sys.exit(f"no opset tables under {folder}: this openvino wheel ships no headers")
    return tables


def one_layer_ir(op: str, opset: str) -> str:
    """Parameter -> one ``op`` layer of ``opset`` -> Result: enough for the reader to look ``op`` up."""
    port = '<port id="{}" precision="FP32"><dim>1</dim><dim>4</dim></port>'
    return (
        '<?xml version="1.0"?>\n<net name="probe" version="11">\n<layers>\n'
        '<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,4" element_type="f32"/>'
        f'<output>{port.format(0)}</output></layer>\n'
        f'<layer id="1" name="op" type="{op}" version="{opset}"><input>{port.format(0)}</input>'
        f'<output>{port.format(1)}</output></layer>\n'
        f'<layer id="2" name="out" type="Result" version="opset1"><input>{port.format(0)}</input></layer>\n'
        '</layers>\n<edges>\n<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>\n'
        '<edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>\n</edges>\n</net>\n'
    )


_PROBE = f"""
import sys
import openvino as ov
core = ov.Core()
for line in sys.stdin:
    try:
        core.read_model(line.strip())
        said = ""
    except Exception as e:
        said = str(e)
    print("1" if {NOT_IN_OPSET!r} in said else "0", flush=True)
"""


def reader_says_absent(paths: list[str]) -> list[bool | None]:
    """Per IR file: whether read_model answers "doesn't contain the operation"; None where the
    reader crashed. One child process, started again after each crash."""
    out: list[bool | None] = []
    while len(out) < len(paths):
        proc = subprocess.run([sys.executable, "-c", _PROBE], input="\n".join(paths[len(out):]) + "\n",
                              capture_output=True, text=True, timeout=1200)
        out.extend(ln == "1" for ln in proc.stdout.split())
        if proc.returncode != 0 and len(out) < len(paths):
            out.append(None)
    return out


def reader_opset(opset: str, candidates: list[str], folder: str) -> list[str]:
    paths = []
    for op in candidates:
        paths.append(os.path.join(folder, f"{opset}-{op}.xml"))
        with open(paths[-1], "w", encoding="utf-8") as f:
            f.write(one_layer_ir(op, opset))
    return [op for op, absent in zip(candidates, reader_says_absent(paths), strict=True) if absent is not True]


def required_inputs(opset: str, op: str) -> int | None:
    """Node arguments without a default in the wheel's Python factory for ``op``, or None."""
    module = None
    for name in (f"openvino.{opset}", f"openvino.runtime.{opset}"):  # openvino.runtime.opsetN before 2025
        try:
            module = importlib.import_module(name)
            break
        except ImportError:
            continue
    if module is None:
        return None
    factories = {k.replace("_", "").lower(): getattr(module, k) for k in dir(module) if not k.startswith("_")}
    fn = factories.get(op.lower())
    if not callable(fn):
        return None
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    required = 0
    for p in params:
        ann = str(p.annotation)
        if "Node" not in ann:
            continue  # an attribute
        if ann.startswith(("list", "List", "typing.List", "Sequence")):
            return None  # variadic: the count is the model's
        if p.default is inspect.Parameter.empty:
            required += 1
    return required


def build() -> dict[str, Any]:
    headers = header_tables()
    candidates = sorted({op for ops in headers.values() for op in ops})
    opsets: dict[str, dict[str, int | None]] = {}
    reader_only: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for opset, listed in headers.items():
            found = reader_opset(opset, candidates, folder)
            if missing := sorted(set(listed) - set(found)):
                sys.exit(f"{opset}: the header lists {missing} but read_model refuses them")
            if extra := sorted(set(found) - set(listed)):
                reader_only[opset] = extra
            opsets[opset] = {op: required_inputs(opset, op) for op in found}
    return {
        "engine": "openvino",
        "version": OV_VERSION,
        "kind": "ov-ir-opsets",
        "source": f"openvino {OV_VERSION} wheel: read_model on a one-layer IR per operation and opset, over "
                  "the operations of include/openvino/opsets/opsetN_tbl.hpp; required inputs from the "
                  "openvino.opsetN Python factories",
        "generated_by": "rules/data/gen/gen_openvino_ir.py",
        "aliases": IR_ALIASES,
        "aliases_source": "openvino src/core/src/pass/serialize.cpp get_translate_type_name_translator "
                          "(the IR reader maps the names back)",
        "reader_only": reader_only,
        "opsets": opsets,
    }


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    major_minor = ".".join(OV_VERSION.split(".")[:2])
    out = os.path.join(os.path.dirname(here), "support", f"openvino-{major_minor}-ir.json")
    data = build()
    atomic_write_text(out, json.dumps(data, indent=0, sort_keys=True) + "\n")
    n = sum(len(v) for v in data["opsets"].values())
    print(f"wrote {out}: {len(data['opsets'])} opsets, {n} entries; reader only: {data['reader_only']}")


if __name__ == "__main__":
    main()
