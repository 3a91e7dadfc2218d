"""Engine releases side by side: what two support tables of one engine say differently, one-node models
of those differences, and a runner that asks an installed engine about them.

    python testmodels/engine_versions.py ort MODEL.onnx ...        # one JSON verdict per model
    python testmodels/engine_versions.py openvino MODEL.onnx ...

The runner imports only the standard library and the engine, so it runs in the pinned venvs of the
earlier releases (``.venvs/ort-1.20``, ``.venvs/openvino-2024.6``, made by testmodels/engine_venvs.sh)
as in the dev venv. The rest (differences, models) runs in the dev venv: tests/test_engine_versions.py.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import subprocess
import sys
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENVS = {"ort": os.path.join(ROOT, ".venvs", "ort-1.20"), "openvino": os.path.join(ROOT, ".venvs", "openvino-2024.6")}
SUPPORT = os.path.join(ROOT, "rules", "data", "support")
OLD = {"ort": "ort-1.20-cpu.json", "openvino": "openvino-2024.6.json"}
NEW = {"ort": "ort-1.32-cpu.json", "openvino": "openvino-2026.4.json"}
# The newest opset per domain the old ORT loads (rules/data/targets/ort-1.20.toml): differences above it are
# the profile's opset range (GL0002), not the kernel table's.
ORT_OLD_MAX = {"ai.onnx": 21, "ai.onnx.ml": 5, "com.microsoft": 1}

# What the engines say when they have no implementation (the table's "unsupported"), as opposed to any
# other failure of a placeholder node (a kernel or translator exists and refused the node's inputs).
# ORT's refusals of what a release lacks: no kernel, an opset past its range, an op its schema registry does
# not have, an element type it does not know, a type its (older) schema does not allow.
ORT_REJECTS = [("rejected", r"Could not find an implementation for"),
               ("rejected-opset", r"model_load_utils\.h|is till opset"),
               ("rejected-op", r"is not a registered function/op"),
               ("rejected-type", r"Invalid tensor data type"),
               ("rejected-schema", r"Type Error: Type '[^']+' of input parameter \([^)]*\) of operator \([^)]*\) in node "
                                   r"\([^)]*\) is invalid")]
OV_NO_TRANSLATOR = re.compile(r"(No conversion rule found for operations|OpenVINO does not support the following ONNX "
                              r"operations):")


# --- runner (engine + standard library only) ------------------------------------------------------

def run_ort(path: str) -> dict[str, Any]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    try:
        ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        return {"verdict": "accepted", "text": ""}
    except Exception as e:
        text = " ".join(str(e).split())
    for verdict, pattern in ORT_REJECTS:
        if re.search(pattern, text):
            return {"verdict": verdict, "text": text[:300]}
    # A kernel's constructor refused the placeholder node: the kernel exists.
    if "Exception during initialization" in text:
        return {"verdict": "kernel-error", "text": text[:300]}
    return {"verdict": "invalid", "text": text[:300]}  # graph checks before the kernel lookup: inconclusive


def run_openvino(path: str) -> dict[str, Any]:
    import openvino as ov

    core = ov.Core()
    try:
        model = core.read_model(path)
    except Exception as e:
        text = " ".join(str(e).split())
        m = OV_NO_TRANSLATOR.search(text)  # which ops it names: the probed one, or one a translator made
        return {"verdict": "read-error", "missing": text[m.end():].strip(": ") if m else None, "text": text[:300]}
    try:
        core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        return {"verdict": "accepted", "text": ""}
    except Exception as e:
        return {"verdict": "compile-error", "text": " ".join(str(e).split())[:300]}


def main(argv: list[str]) -> None:
    run = {"ort": run_ort, "openvino": run_openvino}[argv[1]]
    for path in argv[2:]:
        print("@@" + json.dumps({"path": path, **run(path)}), flush=True)


def ask(engine: str, paths: list[str], python: str = sys.executable) -> dict[str, dict[str, Any]]:
    """path -> verdict of ``engine`` in the venv of ``python``; a child that crashes is restarted after
    the model it crashed on (verdict "crash")."""
    out: dict[str, dict[str, Any]] = {}
    while len(out) < len(paths):
        todo = [p for p in paths if p not in out]
        proc = subprocess.run([python, os.path.abspath(__file__), engine, *todo], capture_output=True, text=True,
                              timeout=600)
        for line in proc.stdout.splitlines():
            if line.startswith("@@"):
                r = json.loads(line[2:])
                out[r.pop("path")] = r
        if proc.returncode != 0:
            crashed = next((p for p in todo if p not in out), None)
            if crashed is None:
                break
            out[crashed] = {"verdict": "crash", "text": proc.stderr[-300:]}
    return out


def version(engine: str, python: str = sys.executable) -> str:
    mod = {"ort": "onnxruntime", "openvino": "openvino"}[engine]
    code = f"import {mod} as m; print((getattr(m, '__version__', None) or m.get_version()).split('-')[0])"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


# --- differences between two tables --------------------------------------------------------------

def load(name: str) -> dict[str, Any]:
    with open(os.path.join(SUPPORT, name), encoding="utf-8") as f:
        return json.load(f)


def _ort_kernel(entry: dict[str, Any] | None, opset: int) -> tuple[int, dict[str, Any]] | None:
    """(schema since-version, kernel) ORT's lookup finds for the op at the model's opset, or None."""
    if not entry:
        return None
    since = max((int(s) for s in entry["schemas"] if int(s) <= opset), default=None)
    if since is None:
        return None
    for k in entry["kernels"]:
        lo, hi = k["range"]
        if (hi is None and since == lo) or (hi is not None and lo <= since <= hi):
            return since, k
    return None


def _assignments(kernel: dict[str, Any]) -> set[tuple[tuple[str, str], ...]]:
    out = set()
    for combo in kernel["types"]:
        keys = sorted(combo)
        for types in itertools.product(*(combo[k] for k in keys)):
            out.add(tuple(zip(keys, types, strict=True)))
    return out


def _takes(kernel: dict[str, Any], assignment: tuple[tuple[str, str], ...]) -> bool:
    """ORT's match: every constraint both bind agrees (a constraint the kernel does not list is free)."""
    d = dict(assignment)
    return any(all(d[c] in ts for c, ts in combo.items() if c in d) for combo in kernel["types"])


def _onnx_type(t: str) -> str:
    if t.startswith("seq("):
        return t
    return f"tensor({ {'float32': 'float', 'float64': 'double'}.get(t, t) })"


def _schema_allows(dom: str, op: str, since: int, assignment: tuple[tuple[str, str], ...]) -> bool:
    """Whether the op's schema (the dev venv's: the newest definition) allows these types at all: kernels
    registered over a version range also list types later versions added (Cast [6, 12]: bfloat16)."""
    schema = _schema(dom, op, since)
    if schema is None:
        return True
    allowed = {tc.type_param_str: set(tc.allowed_type_strs) for tc in schema.type_constraints}
    return all(c not in allowed or _onnx_type(t) in allowed[c] for c, t in assignment)


def ort_differences(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (domain, op, opset, element types) one table's kernels take and the other's do not, at the
    opsets both releases load. ``kind``: "op" (no kernel of the op at all in one), "opset" (no kernel at
    that opset), "types" (a kernel in both, not for these element types). ``types`` binds the kernel's
    type-constraint names; for "op"/"opset" the first combination of the release that has the kernel."""
    out: list[dict[str, Any]] = []
    for dom, cap in ORT_OLD_MAX.items():
        olds, news = old["domains"].get(dom, {}), new["domains"].get(dom, {})
        for op in sorted(set(olds) | set(news)):
            eo, en = olds.get(op), news.get(op)
            has_o, has_n = bool(eo and eo["kernels"]), bool(en and en["kernels"])
            if has_o != has_n:
                entry = en if has_n else eo
                k = entry["kernels"][0]
                opset = k["range"][0] if dom != "com.microsoft" else 1
                out.append({"domain": dom, "op": op, "opset": opset, "kind": "op",
                            "types": dict(sorted(_assignments(k))[0]), "old": has_o, "new": has_n})
                continue
            if not has_o:
                continue
            for v in sorted({int(s) for s in (*eo["schemas"], *en["schemas"]) if int(s) <= cap}):
                ko, kn = _ort_kernel(eo, v), _ort_kernel(en, v)
                if bool(ko) != bool(kn):
                    k = (kn or ko)[1]
                    out.append({"domain": dom, "op": op, "opset": v, "kind": "opset",
                                "types": dict(sorted(_assignments(k))[0]), "old": bool(ko), "new": bool(kn)})
                    continue
                if not ko:
                    continue
                for a in sorted(_assignments(ko[1]) | _assignments(kn[1])):
                    o_ok, n_ok = _takes(ko[1], a), _takes(kn[1], a)
                    if o_ok != n_ok and _schema_allows(dom, op, kn[0], a):
                        out.append({"domain": dom, "op": op, "opset": v, "kind": "types", "types": dict(a),
                                    "old": o_ok, "new": n_ok})
    return out


def openvino_differences(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Ops whose first converting opset differs (None: no translator at all), and element types one
    frontend loads and the other does not. ``opset``: a model opset at which exactly one converts."""
    out: list[dict[str, Any]] = []
    for dom in sorted(set(old["domains"]) | set(new["domains"])):
        olds, news = old["domains"].get(dom, {}), new["domains"].get(dom, {})
        for op in sorted(set(olds) | set(news)):
            eo, en = olds.get(op) or {}, news.get(op) or {}
            so, sn = eo.get("since"), en.get("since")
            if so == sn or not (eo.get("probed") or en.get("probed")):
                continue  # the same, or only a document's word on one side (no probe to repeat)
            if so is None or sn is None:
                probed = sorted(set(eo.get("probed") or []) | set(en.get("probed") or []))
                opset = probed[-1]
            else:
                opset = max(so, sn) - 1  # below the later one's first translator, at or above the other's
            out.append({"domain": dom, "op": op, "opset": opset, "kind": "op", "old": so is not None and so <= opset,
                        "new": sn is not None and sn <= opset})
        for op in sorted(set(olds) & set(news)):  # constraints the generator's probes add on one release only
            ko, kn = _probed_constraints(olds[op]), _probed_constraints(news[op])
            for kind in sorted(ko ^ kn):
                out.append({"domain": dom, "op": op, "opset": max(olds[op]["probed"] or [1]), "kind": kind,
                            "old": kind not in ko, "new": kind not in kn})
    lo, ln = set(old["element_types"]["loadable"]), set(new["element_types"]["loadable"])
    for t in sorted(lo ^ ln):
        out.append({"domain": "ai.onnx", "op": "Identity", "opset": 21, "kind": "dtype", "dtype": t,
                    "old": t in lo, "new": t in ln})
    return out


# Constraint kinds gen_openvino.py probes on each release (not hand-listed), each with the probe model
# (openvino_model) whose verdict is the constraint's.
PROBED_CONSTRAINTS = ("max_outputs", "input_not_empty")


def _probed_constraints(entry: dict[str, Any]) -> set[str]:
    return {c["kind"] for c in entry.get("constraints", ()) if c["kind"] in PROBED_CONSTRAINTS}


OP_LEVEL = ("op", "opset", "dtype", *PROBED_CONSTRAINTS)  # differences every run repeats (the rest: a sample)


def sample(diffs: list[dict[str, Any]], per_group: int = 1) -> list[dict[str, Any]]:
    """Every op-level difference, and of the rest the first ``per_group`` of each (op, direction):
    deterministic, both directions wherever a table has one."""
    out, seen = [], {}
    for d in diffs:
        if d["kind"] in OP_LEVEL:
            out.append(d)
            continue
        key = (d["domain"], d["op"], d["new"])
        if seen.get(key, 0) < per_group:
            seen[key] = seen.get(key, 0) + 1
            out.append(d)
    return out


# --- one-node models ----------------------------------------------------------------------------

@functools.cache
def _ort_schemas() -> dict[tuple[str, str], list[Any]]:
    from onnxruntime.capi import onnxruntime_pybind11_state as C

    out: dict[tuple[str, str], list[Any]] = {}
    for s in C.get_all_operator_schema():
        out.setdefault((s.domain or "ai.onnx", s.name), []).append(s)
    return out


@functools.cache
def _schema(domain: str, op: str, since: int) -> Any:
    import onnx.defs

    if domain != "com.microsoft":
        try:
            return onnx.defs.get_schema(op, since, "" if domain == "ai.onnx" else domain)
        except Exception:  # an ORT-only op registered in the onnx domain (LayerNormalization-1, ...)
            pass
    found = [s for s in _ort_schemas().get((domain, op), []) if s.since_version <= since]
    return max(found, key=lambda s: s.since_version) if found else None


def _attr_default(a: Any) -> Any:
    kind = str(a.type).rsplit(".", 1)[-1]
    return {"INT": 1, "FLOAT": 1.0, "STRING": "", "INTS": [1], "FLOATS": [1.0], "STRINGS": [""]}.get(kind)


def _value(name: str, t: str | None) -> Any:
    from onnx import TensorProto, helper

    from graphlint import dtypes

    enum = {v: k for k, v in dtypes.ONNX_DTYPES.items()}
    if t and t.startswith("seq(tensor("):
        return helper.make_tensor_sequence_value_info(name, enum[_norm(t[11:-2])], None)
    return helper.make_tensor_value_info(name, enum.get(_norm(t), TensorProto.UNDEFINED) if t else 0, None)


def _norm(t: str | None) -> str | None:
    if t is None:
        return None
    if t.startswith("tensor("):
        t = t[7:-1]
    return {"float": "float32", "double": "float64"}.get(t, t)


def ort_model(d: dict[str, Any], table: dict[str, Any]) -> Any:
    """A one-node model of an ORT difference: its schema's required and variadic inputs and outputs
    typed by the difference's type binding (graph inputs of unknown shape), required attributes set."""
    from onnx import helper

    dom, op, opset = d["domain"], d["op"], d["opset"]
    since = max(int(s) for s in table["domains"][dom][op]["schemas"] if int(s) <= opset)
    params = table["domains"][dom][op]["schemas"][str(since)]
    schema = _schema(dom, op, since)
    types = d["types"]

    def bind(type_str: str) -> str | None:
        if type_str in types:
            return types[type_str]
        if type_str.startswith(("tensor(", "seq(")):
            return type_str
        allowed = {tc.type_param_str: list(tc.allowed_type_strs) for tc in schema.type_constraints} if schema else {}
        return (allowed.get(type_str) or [None])[0]

    def present(plist: list[list[Any]]) -> list[int]:
        """Required and variadic parameters, and an optional one whose constraint the binding names and
        no present parameter binds already (LayerNormalization-1's mean output U, MatMulNBits' zero points)."""
        keep = [i for i, (_, option) in enumerate(plist) if option != 1]
        bound = {plist[i][0] for i in keep}
        for i, (t, option) in enumerate(plist):
            if option == 1 and t in types and t not in bound:
                keep.append(i)
                bound.add(t)
        return sorted(keep)

    ins, outs, names_in, names_out = [], [], [], []
    keep_in, keep_out = present(params["in"]), present(params["out"])
    for i in range(max(keep_in, default=-1) + 1):  # skipped optional inputs before a kept one: ""
        if i in keep_in:
            ins.append(_value(f"in{i}", bind(params["in"][i][0])))
        names_in.append(f"in{i}" if i in keep_in else "")
    for i in range(max(keep_out, default=-1) + 1):
        if i in keep_out:
            outs.append(_value(f"out{i}", bind(params["out"][i][0])))
        names_out.append(f"out{i}" if i in keep_out else "")
    attrs = {}
    for name, a in (schema.attributes.items() if schema else ()):
        if a.required:
            attrs[name] = _attr_default(a)
    if "to" in (schema.attributes if schema else {}) and outs:  # Cast: the output type
        attrs["to"] = outs[0].type.tensor_type.elem_type
    node = helper.make_node(op, names_in, names_out, domain="" if dom == "ai.onnx" else dom,
                            **{k: v for k, v in attrs.items() if v is not None})
    graph = helper.make_graph([node], "probe", ins, outs)
    opsets = [helper.make_opsetid("", opset if dom == "ai.onnx" else 17)]
    if dom != "ai.onnx":
        opsets.append(helper.make_opsetid(dom, opset))
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def openvino_model(d: dict[str, Any]) -> Any:
    """The generator's own probe (rules/data/gen/gen_openvino.py) of an OpenVINO difference."""
    import importlib.util

    from onnx import helper

    spec = importlib.util.spec_from_file_location("gen_openvino", os.path.join(ROOT, "rules", "data", "gen",
                                                                              "gen_openvino.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    if d["kind"] == "dtype":
        from graphlint import dtypes

        enum = {v: k for k, v in dtypes.ONNX_DTYPES.items()}[d["dtype"]]
        g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "t",
                              [helper.make_tensor_value_info("x", enum, [2])],
                              [helper.make_tensor_value_info("y", enum, [2])])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", d["opset"])], ir_version=10)
    schemas = [s for dom, s in gen._schemas() if (dom or "ai.onnx") == d["domain"] and s.name == d["op"]]
    if not schemas:  # an op the frontend's table lists without a schema
        return gen._bare_model(d["domain"], d["op"], d["opset"])
    at = [s for s in schemas if s.since_version <= d["opset"]]
    schema = max(at, key=lambda s: s.since_version) if at else min(schemas, key=lambda s: s.since_version)
    if d["kind"] == "max_outputs":
        return gen.all_outputs_model(schema, "" if d["domain"] == "ai.onnx" else d["domain"])
    if d["kind"] == "input_not_empty":
        return gen.reshape_to_scalar_model()
    return gen._probe_model(schema, "" if d["domain"] == "ai.onnx" else d["domain"], d["opset"])


if __name__ == "__main__":
    main(sys.argv)
