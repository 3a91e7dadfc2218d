"""Measure reduced-precision drift per engine, and which node kinds cause it.

For every model of ``testmodels/export_precision.py`` (real exports, random weights, fixed
seeds) this runs, against ONNX Runtime fp32 on the same inputs:

* ``ort16``: ONNX Runtime CPU on ``convert_float_to_float16(keep_io_types=True)``;
* ``ref16``: ``onnx.reference`` on the same fp16 model (every op computes in fp16, as a GPU
  fp16 kernel would; ONNX Runtime's CPU provider instead runs most fp16 arithmetic in fp32 between
  inserted Casts, see rules/data/precision.toml);
* ``ov_bf16`` / ``ov_f16``: OpenVINO CPU with ``INFERENCE_PRECISION_HINT`` bf16 / f16 (the
  compiled model's reported precision is recorded: the plugin may substitute).

then repeats each reduced-precision run with one group of node kinds kept in fp32 (ONNX:
``node_block_list``; OpenVINO: ``precise`` rt_info on the IR layers of those types) and reports
the drift left, so the table says which kinds matter.

Then ``--family`` measures the precision family itself on each model: the GL6xxx findings at
fp16 (target ort, checked with onnx.reference on the converted model, keep list joined) and at
OpenVINO CPU's bf16 default (checked with OpenVINO and the ``precise`` marks), the drift with the
whole keep-fp32 list, and for each finding whether leaving it out pushes the drift past 0.01.

    .venv/bin/python bench/precision_drift.py [MODEL ...] [--json out.json] [--family]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import warnings
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from testmodels import precision_runs as P
from testmodels.export_precision import MODELS, inputs, models

# node-kind groups: ONNX op types, OpenVINO IR layer types
GROUPS: dict[str, tuple[set[str], set[str]]] = {
    "softmax": ({"Softmax", "LogSoftmax"}, {"Softmax", "SoftMax", "LogSoftmax"}),
    "normalization": ({"LayerNormalization", "SimplifiedLayerNormalization", "GroupNormalization",
                       "InstanceNormalization"}, {"MVN", "NormalizeL2", "RMS", "GroupNormalization"}),
    "exp_log_pow_sqrt": ({"Exp", "Log", "Pow", "Sqrt", "Reciprocal"}, {"Exp", "Log", "Power", "Sqrt"}),
    "reductions": ({"ReduceMean", "ReduceSum", "ReduceL2", "ReduceMax", "CumSum"},
                   {"ReduceMean", "ReduceSum", "ReduceL2", "ReduceMax", "CumSum"}),
    "elementwise": ({"Add", "Sub", "Mul", "Div", "Where", "Neg", "Erf", "Sigmoid", "Tanh", "Relu"},
                    {"Add", "Subtract", "Multiply", "Divide", "Select", "Negative", "Erf", "Sigmoid", "Tanh",
                     "Relu", "ReLU", "Gelu", "Swish", "Elu"}),
    "matmul_conv": ({"MatMul", "Gemm", "Conv"}, {"MatMul", "Convolution", "GroupConvolution"}),
}


def _ir_layers(xml: str) -> list[tuple[str, str]]:
    return re.findall(r'<layer id="\d+" name="([^"]*)" type="([^"]*)"', xml)


def measure(name: str, folder: str, groups: bool = True) -> dict[str, Any]:
    import onnx

    path = os.path.join(folder, f"{name}.onnx")
    feeds = inputs(folder, name)
    ref = P.run_ort(path, feeds)
    row: dict[str, Any] = {"model": name, "ref_max_abs": max(float(abs(r).max()) for r in ref)}
    nodes = [(n.name, n.op_type) for n in onnx.load(path).graph.node]
    row["ort16"] = P.drift(ref, P.run_ort(P.ort_fp16(path), feeds))
    row["ref16"] = P.drift(ref, P.run_reference(P.ort_fp16(path), feeds))
    with tempfile.TemporaryDirectory() as work:
        xml, bin_path = P.ir_text(path, work)
        row["ov_f32"] = P.drift(ref, P.run_openvino(xml, bin_path, feeds, "f32")[0])
        for hint in ("bf16", "f16"):
            got, effective = P.run_openvino(xml, bin_path, feeds, hint)
            row[f"ov_{hint}"] = {**P.drift(ref, got), "compiled_as": effective}
        if not groups:
            return row
        layers = _ir_layers(xml)
        row["kept_fp32"] = {}
        every = set().union(*(o for o, _ in GROUPS.values()))
        every_ir = set().union(*(i for _, i in GROUPS.values()))
        for group, (onnx_ops, ir_ops) in [*GROUPS.items(), ("all_but_matmul_conv", (
                every - GROUPS["matmul_conv"][0], every_ir - GROUPS["matmul_conv"][1]))]:
            block = [n for n, op in nodes if op in onnx_ops]
            marks = [n for n, t in layers if t in ir_ops]
            res: dict[str, Any] = {"onnx_nodes": len(block), "ir_layers": len(marks)}
            if block:
                res["ort16"] = P.drift(ref, P.run_ort(P.ort_fp16(path, block), feeds))["max_abs"]
                res["ref16"] = P.drift(ref, P.run_reference(P.ort_fp16(path, block), feeds))["max_abs"]
            if marks:
                marked, _ = P.mark_layers(xml, marks)
                res["ov_bf16"] = P.drift(ref, P.run_openvino(marked, bin_path, feeds, "bf16")[0])["max_abs"]
            row["kept_fp32"][group] = res
    return row


TOL = 0.01


def family(name: str, folder: str) -> dict[str, Any]:
    """GL6xxx on one model: findings, drift without / with the keep list, which findings matter."""
    from graphlint.config import resolve_options
    from graphlint.lint import lint_paths

    path = os.path.join(folder, f"{name}.onnx")
    feeds = inputs(folder, name)
    ref = P.run_ort(path, feeds)
    row: dict[str, Any] = {"model": name}
    with tempfile.TemporaryDirectory() as work:
        xml, bin_path = P.ir_text(path, work)

        def fp16(keep: list[str]) -> float:
            return P.drift(ref, P.run_reference(P.join_blocked(P.ort_fp16(path, keep)), feeds))["max_abs"]

        def bf16(keep: list[str]) -> float:
            marked, _ = P.mark_layers(xml, keep)
            return P.drift(ref, P.run_openvino(marked, bin_path, feeds, "bf16")[0])["max_abs"]

        for label, target, precision, run in (("fp16", "ort", "fp16", fp16), ("bf16", "openvino", None, bf16)):
            opts = resolve_options(targets=[target], select=["GL6"], ignore=[], shapes=[], config_path=None,
                                   repo_root=None, precision=precision)
            found = list(lint_paths([path], opts).findings())
            lists = [f.properties["keep_fp32"] for f in found]
            res: dict[str, Any] = {"findings": len(found), "without": run([])}
            if found:
                res["with"] = run([n for k in lists for n in k])
                res["matter"] = sum(run([n for j, k in enumerate(lists) if j != i for n in k]) > TOL
                                    for i in range(len(lists)))
            row[label] = res
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(MODELS))
    ap.add_argument("--json")
    ap.add_argument("--no-groups", action="store_true", help="only the whole-model drift")
    ap.add_argument("--family", action="store_true", help="the GL6xxx findings and what their keep lists do")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    folder = models()
    rows = []
    for name in args.models:
        row = family(name, folder) if args.family else measure(name, folder, groups=not args.no_groups)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
