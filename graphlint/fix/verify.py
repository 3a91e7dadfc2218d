"""Prove a rewritten model: structural checks, then the same inputs through an engine, outputs compared.

ONNX: ``onnx.checker`` full check and strict shape inference, then onnxruntime (graph
optimizations off, so what runs is what was written) on feeds generated once per fix. If the
original does not run in onnxruntime, OpenVINO CPU is tried; if neither runs it, only the
structural checks are done, and the report says so. OpenVINO IR: read + compile on CPU, then
the same comparison through OpenVINO.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from graphlint.fix.base import ONNX_FORMAT, InputMap
from graphlint.fix.ir_model import IRModel
from graphlint.runners import RunError
from graphlint.runners import one_line as _one_line
from graphlint.runners.compare import Comparison, compare

_TWO_GB = 2**31 - 1


# --------------------------------------------------------------------------------------------
# Feeds


@dataclass
class InputSpec:
    name: str
    dtype: np.dtype
    dims: list[int | str | None]


def _onnx_inputs(model: onnx.ModelProto) -> list[InputSpec]:
    inits = {t.name for t in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dt = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
        out.append(InputSpec(vi.name, dt, dims))
    return out


def _ir_inputs(ovm: Any) -> list[InputSpec]:
    out = []
    for p in ovm.inputs:
        ps = p.get_partial_shape()
        dims = [d.get_length() if d.is_static else None for d in ps] if ps.rank.is_static else []
        out.append(InputSpec(p.get_any_name(), np.dtype(p.get_element_type().to_dtype()), dims))
    return out


def _index_bounds(model: onnx.ModelProto) -> dict[str, int]:
    """Integer inputs used (through Cast/Reshape/...) as Gather indices: the table's row count."""
    from graphlint.fix import graphutil as gu

    g = model.graph
    users = gu.consumers(g)
    inits = {t.name: tuple(t.dims) for t in g.initializer}
    bounds: dict[str, int] = {}
    passthrough = {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"}
    for inp in g.input:
        stack, seen = [inp.name], set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            for n in users.get(v, []):
                if n.op_type in passthrough and n.input and n.input[0] == v:
                    stack.extend(n.output)
                elif n.op_type == "Gather" and len(n.input) > 1 and n.input[1] == v and n.input[0] in inits:
                    axis = gu.attr(n, "axis", 0)
                    rows = inits[n.input[0]][axis]
                    bounds[inp.name] = min(bounds.get(inp.name, rows), rows)
                elif n.domain == gu.MS and n.op_type == "EmbedLayerNormalization":
                    # input_ids -> word table (2), segment_ids -> segment table (4), position_ids (3)
                    table = {0: 2, 1: 4, 8: 3}.get(list(n.input).index(v))
                    if table is not None and table < len(n.input) and n.input[table] in inits:
                        rows = inits[n.input[table]][0]
                        bounds[inp.name] = min(bounds.get(inp.name, rows), rows)
    return bounds


def make_feeds(specs: list[InputSpec], shapes: dict[str, tuple[int, ...]], bounds: dict[str, int],
               seed: int = 0) -> dict[str, np.ndarray]:
    """Random feeds: dtype-appropriate ranges; dynamic dims from --shapes, else 2 (axis 0) / 8 (others)."""
    rng = np.random.default_rng(seed)
    symbols: dict[str, int] = {}
    feeds: dict[str, np.ndarray] = {}
    for s in specs:
        if s.name in shapes:
            shape = tuple(shapes[s.name])
        else:
            shape_l = []
            for axis, d in enumerate(s.dims):
                if isinstance(d, int) and d > 0:
                    shape_l.append(d)
                elif isinstance(d, str) and d in symbols:
                    shape_l.append(symbols[d])
                else:
                    v = 2 if axis == 0 else 8
                    if isinstance(d, str):
                        symbols[d] = v
                    shape_l.append(v)
            shape = tuple(shape_l)
        dt = s.dtype
        if dt.kind == "f":
            arr = rng.standard_normal(shape).astype(dt)
        elif dt.kind == "b":
            arr = rng.integers(0, 2, shape).astype(bool)
        elif dt.kind in "iu":
            if s.name in bounds:
                hi = bounds[s.name]
            elif "mask" in s.name.lower():
                feeds[s.name] = _padding_mask(shape, dt)
                continue
            elif dt == np.uint8:
                hi = 256
            else:
                hi = 8
            lo = -128 if dt == np.int8 else 0
            arr = rng.integers(lo, max(hi, lo + 1), shape).astype(dt)
        else:
            raise ValueError(f"cannot generate feeds of dtype {dt} for {s.name!r} (use --inputs FILE.npz)")
        feeds[s.name] = arr
    return feeds


def _padding_mask(shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    """Ones, with every odd batch row right-padded by a quarter (as a batch of unequal sentences is)."""
    arr = np.ones(shape, dt)
    if len(shape) == 2 and shape[0] > 1 and shape[1] >= 4:
        arr[1::2, shape[1] - shape[1] // 4:] = 0
    return arr


def apply_input_map(feeds: dict[str, np.ndarray], imap: InputMap) -> dict[str, np.ndarray]:
    out = dict(feeds)
    for name, (_dtype, fn) in imap.items():
        if name in out:
            out[name] = fn(out[name])
    return out


# --------------------------------------------------------------------------------------------
# Runners


def _ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], workdir: str) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    try:
        if model.ByteSize() < _TWO_GB:
            sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        else:
            path = _save_scratch(model, workdir)
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        outs = sess.run(names, {k: v for k, v in feeds.items() if k in {i.name for i in sess.get_inputs()}})
    except Exception as e:
        raise RunError(_one_line(e)) from None
    return dict(zip(names, (np.asarray(o) for o in outs), strict=True))


def _save_scratch(model: onnx.ModelProto, workdir: str) -> str:
    folder = tempfile.mkdtemp(dir=workdir)
    path = os.path.join(folder, "model.onnx")
    # save_model(save_as_external_data=True) moves the tensors' bytes out of the proto it is given:
    # saving ``model`` itself left the model later written by `graphlint fix` pointing at this
    # scratch file's data (an optimum ViT lost its weights when OpenVINO ran the check)
    scratch = onnx.ModelProto()
    scratch.CopyFrom(model)
    onnx.save_model(scratch, path, save_as_external_data=True, location="model.onnx.data")
    return path


# Equivalence is a property of the graph, not of a device's reduced precision: on hosts with
# AVX512_BF16 or AMX, OpenVINO's CPU plugin runs float graphs in bf16 unless told otherwise.
OPENVINO_F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def _ov_run_model(ovm: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import openvino as ov

    try:
        compiled = ov.Core().compile_model(ovm, "CPU", OPENVINO_F32)
        req = compiled.create_infer_request()
        by_port = {}
        for p in compiled.inputs:
            name = next((n for n in p.get_names() if n in feeds), None)
            if name is not None:
                by_port[p] = feeds[name]
        res = req.infer(by_port)
        return {p.get_any_name(): np.asarray(res[p]).copy() for p in compiled.outputs}
    except Exception as e:
        raise RunError(_one_line(e)) from None


def _ov_run_onnx(model: onnx.ModelProto, feeds: dict[str, np.ndarray], workdir: str) -> dict[str, np.ndarray]:
    import openvino as ov

    try:
        ovm = ov.Core().read_model(_save_scratch(model, workdir))
    except Exception as e:
        raise RunError(_one_line(e)) from None
    return _ov_run_model(ovm, feeds)


def structural_problem(model: Any, fmt: str, workdir: str) -> str | None:
    """None if the model passes the format's structural checks, else the first problem."""
    if fmt != ONNX_FORMAT:
        try:
            import openvino as ov

            ov.Core().compile_model(model.to_openvino(workdir), "CPU")
        except Exception as e:
            return f"OpenVINO cannot read/compile it: {_one_line(e)}"
        return None
    try:
        if model.ByteSize() < _TWO_GB:
            onnx.checker.check_model(model, full_check=True)
        else:
            onnx.checker.check_model(_save_scratch(model, workdir), full_check=True)
    except Exception as e:
        return f"onnx.checker: {_one_line(e)}"
    try:
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as e:
        return f"shape inference: {_one_line(e)}"
    return None


@dataclass
class Verifier:
    """Runs models on one set of feeds with the first engine that runs the original."""

    fmt: str
    workdir: str
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    user_feeds: dict[str, np.ndarray] | None = None
    engine: str | None = None  # "onnxruntime" / "openvino CPU" / None (structural only)
    feeds: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    original_structural: str | None = None

    def prepare(self, model: Any) -> dict[str, np.ndarray] | None:
        """Pick the engine and feeds; return the original's outputs (None if no engine runs it)."""
        self.original_structural = structural_problem(model, self.fmt, self.workdir)
        if self.original_structural:
            self.notes.append(f"the original already fails a structural check ({self.original_structural}); "
                              "rewrites are held to not making that worse")
        if self.fmt == ONNX_FORMAT:
            specs, bounds = _onnx_inputs(model), _index_bounds(model)
            candidates = [("onnxruntime", lambda m, f: _ort_run(m, f, self.workdir)),
                          ("openvino CPU", lambda m, f: _ov_run_onnx(m, f, self.workdir))]
        else:
            ovm = model.to_openvino(self.workdir)
            specs, bounds = _ir_inputs(ovm), {}
            candidates = [("openvino CPU", lambda m, f: _ov_run_model(m.to_openvino(self.workdir), f))]
        if self.user_feeds is not None:
            missing = [s.name for s in specs if s.name not in self.user_feeds]
            if missing:
                raise ValueError(f"--inputs has no array for input(s) {', '.join(missing)}")
            self.feeds = {s.name: self.user_feeds[s.name] for s in specs}
        else:
            self.feeds = make_feeds(specs, self.shapes, bounds)
        failures = []
        for name, fn in candidates:
            try:
                out = fn(model, self.feeds)
            except RunError as e:
                failures.append(f"{name}: {e}")
                continue
            self.engine, self._run = name, fn
            if failures:
                self.notes.append("the original does not run in " + "; ".join(failures)
                                  + f"; outputs were compared in {name} instead")
            return out
        self.notes.append("the original does not run in " + "; ".join(failures)
                          + "; checked instead: onnx.checker full check and strict shape inference only"
                          if self.fmt == ONNX_FORMAT else "the original does not run in " + "; ".join(failures))
        return None

    def run(self, model: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self._run(model, feeds)

    def check(self, model: Any, feeds: dict[str, np.ndarray], ref: dict[str, np.ndarray] | None,
              numeric: bool = True) -> tuple[Comparison, dict[str, np.ndarray] | None]:
        """Structural checks, then (when an engine runs the original) run and compare to ``ref``."""
        problem = structural_problem(model, self.fmt, self.workdir)
        if problem and not self.original_structural:
            return Comparison(False, problem=problem), None
        if ref is None or self.engine is None:
            return Comparison(True), None
        try:
            out = self.run(model, feeds)
        except RunError as e:
            return Comparison(False, problem=f"{self.engine} cannot run it: {e}"), None
        except ValueError as e:  # an input map refused a feed
            return Comparison(False, problem=str(e)), None
        if not numeric:
            c = compare(ref, out)
            return Comparison(set(ref) == set(out), c.max_abs_diff, "" if set(ref) == set(out) else c.problem), out
        return compare(ref, out), out


def load_npz(path: str) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


__all__ = ["IRModel", "Verifier", "compare", "load_npz", "make_feeds"]
