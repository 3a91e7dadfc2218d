"""Build rules/data/support/ort-<version>-cpu.json from the installed onnxruntime wheel itself.

    python rules/data/gen/gen_ort.py
    PYTHONPATH=. .venvs/ort-1.20/bin/python rules/data/gen/gen_ort.py   # an earlier release, in its pinned venv
                                                                       # (testmodels/engine_venvs.sh)

Reads the CPU execution provider's registered kernels (``get_all_opkernel_def()``) and the
operator schemas ORT was built with (``get_all_operator_schema()``, which include the
com.microsoft contrib ops). For every (domain, op) the table keeps:

* ``schemas``: each schema's since-version with its inputs/outputs bound to type-constraint
  names, so a node's version and element types can be matched to a kernel the way ORT does
  at session creation ("Could not find an implementation for Op(13)");
* ``kernels``: the registered version ranges, each with the type combinations it accepts;
* ``row``: the op's line in a kernel list generated from the same registry (kept to cross-check the
  table against it; findings cite this shipped table, not that list).

Kernel-constructor checks that reject a node at session creation are not visible in the
registry; they are listed in ``MANUAL`` with the source they come from.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import defaultdict
from typing import Any

import onnxruntime
from onnxruntime.capi import onnxruntime_pybind11_state as C

from graphlint.fsutil import atomic_write_text

OPEN = 2147483647
DOMAIN = {"": "ai.onnx"}
PROVIDER = "CPUExecutionProvider"

# Checks made by kernel constructors (not visible in the kernel registry). Source: the error text
# ORT raises at session creation, which names the file and line of the check.
MANUAL: dict[str, dict[str, list[dict[str, Any]]]] = {
    "ai.onnx": {
        op: [{"kind": "attr_in", "attr": "layout", "values": [0],
              "text": "Batchwise recurrent operations (layout == 1) are not supported",
              "source": f"onnxruntime {onnxruntime.__version__} core/providers/cpu/rnn/{src} (kernel constructor check)"}]
        for op, src in (("LSTM", "lstm_base.h"), ("GRU", "deep_cpu_gru.h"), ("RNN", "rnn.h"))
    },
}

TYPE_RE = re.compile(r"tensor\((\w+)\)")
TYPE_NAMES = {"float": "float32", "double": "float64", "float16": "float16"}


def _type(t: str) -> str:
    m = TYPE_RE.fullmatch(t)
    if not m:
        return t  # seq(tensor(float)), optional(...): kept verbatim
    return TYPE_NAMES.get(m.group(1), m.group(1))


def _rows(md: str | None) -> dict[tuple[str, str], int]:
    """(domain, op) -> line number of the op's first row in the generated kernel list."""
    rows: dict[tuple[str, str], int] = {}
    if not md or not os.path.exists(md):
        return rows
    domain = "ai.onnx"
    with open(md, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            m = re.match(r"\|\*\*Operator Domain:\*\* \*([\w.]+)\*", line)
            if m:
                domain = m.group(1)
                continue
            m = re.match(r"\|([A-Za-z]\w*)\|", line)
            if m:
                rows.setdefault((domain, m.group(1)), lineno)
    return rows


def _has_function(domain: str, op: str, since: int) -> str | bool:
    """Whether the op has a function body at this version ("static" or "context"-dependent):
    ORT inlines it when no kernel matches."""
    import onnx.defs

    try:
        s = onnx.defs.get_schema(op, since, "" if domain == "ai.onnx" else domain)
    except Exception:  # not an onnx schema (contrib ops) or not at this version
        return False
    if s.since_version != since:
        return False
    return "context" if s.has_context_dependent_function else "static" if s.has_function else False


def _param(p: Any) -> list[Any]:
    return [p.typeStr, int(p.option)]  # option: 0 single, 1 optional, 2 variadic


def build(md: str | None) -> dict[str, Any]:
    schemas: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    for s in C.get_all_operator_schema():
        dom = DOMAIN.get(s.domain, s.domain)
        schemas[(dom, s.name)][str(s.since_version)] = {
            "in": [_param(p) for p in s.inputs],
            "out": [_param(p) for p in s.outputs],
            "deprecated": bool(s.deprecated),
            "function": _has_function(dom, s.name, s.since_version),
        }
    kernels: dict[tuple[str, str], dict[tuple[int, int], list[dict[str, list[str]]]]] = defaultdict(
        lambda: defaultdict(list))
    for k in C.get_all_opkernel_def():
        if k.provider != PROVIDER:
            continue
        dom = DOMAIN.get(k.domain, k.domain)
        lo, hi = k.version_range
        combo = {name: sorted({_type(t) for t in types}) for name, types in sorted(k.type_constraints.items())}
        kernels[(dom, k.op_name)][(lo, None if hi >= OPEN else hi)].append(combo)
    rows = _rows(md)
    domains: dict[str, dict[str, Any]] = defaultdict(dict)
    for key in schemas:
        kernels.setdefault(key, defaultdict(list))  # schema-only ops: kept for their function bodies
    for (dom, op), ranges in sorted(kernels.items()):
        entry: dict[str, Any] = {
            "row": rows.get((dom, op)),
            "schemas": dict(sorted(schemas.get((dom, op), {}).items(), key=lambda kv: int(kv[0]))),
            "kernels": [{"range": [lo, hi], "types": _merge(combos)}
                        for (lo, hi), combos in sorted(ranges.items(), key=lambda kv: kv[0][0])],
        }
        manual = MANUAL.get(dom, {}).get(op)
        if manual:
            entry["constraints"] = manual
        domains[dom][op] = entry
    return {
        "engine": "onnxruntime",
        "version": onnxruntime.__version__,
        "provider": PROVIDER,
        "kind": "ort-kernels",
        "source": f"rules/data/support/ort-{_major_minor()}-cpu.json (the onnxruntime {onnxruntime.__version__} "
                  "wheel's CPU kernel registry)",
        "document": f"https://github.com/microsoft/onnxruntime/blob/v{onnxruntime.__version__}/docs/OperatorKernels.md",
        "source_note": f"onnxruntime {onnxruntime.__version__} wheel: get_all_opkernel_def() "
                       "(CPUExecutionProvider) and get_all_operator_schema(); the document lists the same "
                       "registrations for every execution provider",
        "generated_by": "rules/data/gen/gen_ort.py",
        "dispatch": "domain",
        # Kernel lookup (onnxruntime/core/framework/kernel_registry.cc VerifyVersion): a registration
        # with an open end matches only the schema version it starts at; a closed range matches
        # every schema version inside it. Without a match ORT inlines the op's function body, if any.
        "open_range_matches_start_only": True,
        # Resolved by the graph itself, not by a kernel (Constant nodes become initializers at load).
        "graph_ops": {"ai.onnx": ["Constant"]},
        "domains": dict(domains),
    }


def _merge(combos: list[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
    """Fold per-type registrations into fewer combinations without widening what is accepted."""
    by_keys: dict[tuple[str, ...], list[dict[str, list[str]]]] = defaultdict(list)
    for c in combos:
        by_keys[tuple(c)].append(c)
    out: list[dict[str, list[str]]] = []
    for keys, group in by_keys.items():
        if len(keys) == 1:  # one constraint: the union is exact
            out.append({keys[0]: sorted({t for c in group for t in c[keys[0]]})})
        else:
            seen = []
            for c in group:
                if c not in seen:
                    seen.append(c)
            out.extend(seen)
    return out


def _major_minor() -> str:
    return ".".join(onnxruntime.__version__.split(".")[:2])


def main(argv: list[str]) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    md = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(root), "shared", "reference", f"onnxruntime-{onnxruntime.__version__}-cpu-kernels.generated.md")
    out = os.path.join(os.path.dirname(here), "support", f"ort-{_major_minor()}-cpu.json")
    data = build(md)
    atomic_write_text(out, json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {out}: {sum(len(v) for v in data['domains'].values())} ops")


if __name__ == "__main__":
    main(sys.argv)
