"""Engine truth for one model: ONNX Runtime (CPU EP) and OpenVINO (CPU) load, compile and run.

Inputs are random (graphlint.fix.verify.make_feeds: token ids below the embedding table's row
count, attention masks of ones with padded rows, images in N(0,1)) at two shapes: the declared
one with every symbolic dim set to a small value, and another legal one (every symbolic dim
doubled; both values in ``DIMS`` by dim name). A model whose inputs are all static runs once ("alt" is then
"same shape"). A wheel model's manifest may give exact shapes and fixed values (a sample rate)
where its package documents them.

Verdicts per engine: ``accepts``; ``rejects`` (ORT session creation, OpenVINO read or compile
fails); ``fails-run`` (fails at the declared shape); ``fails-run-alt`` (runs at the declared
shape, fails at the other legal one). An empty output from non-empty inputs counts as a run failure.
Everything but ``accepts`` is a positive.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from testmodels.engines import ort_session

# Symbolic dims by name: (declared-shape value, other legal value). Unnamed or unknown dims:
# axis 0 -> (1, 2), other axes -> (8, 16).
DIMS = {"batch": (1, 2), "sequence": (8, 16), "samples": (400, 800), "height": (32, 64), "width": (32, 64),
        "frames": (64, 128)}
SAME = "same shape"  # run_alt when the model has no symbolic input dim


def first_line(e: BaseException) -> str:
    """The error in one line; OpenVINO's frontend report shortened to its summary and first cause."""
    text = " ".join(str(e).split())
    if "Summary:" in text:
        detail = text.split("detailed log:", 1)[-1].split("Summary:", 1)[0].strip()
        text = text.split("Summary:", 1)[1].strip() + " | " + detail
    for noise in ("Exception from src/inference/src/cpp/core.cpp:84: ",
                  "Check 'false' failed at src/frontends/common_translators/src/unconverted_ops_report.cpp:151: "):
        text = text.replace(noise, "")
    text = re.sub(r"/[^\s:'\"]*/([^/\s:'\"]+\.(?:onnx|xml))", r"\1", text)  # machine-specific folders
    return f"{type(e).__name__}: {text}"[:400]


def shapes(specs: list, hints: dict[str, list[int]] | None, alt: bool) -> dict[str, tuple[int, ...]]:
    """Concrete input shapes; a dim named alike gets the same value across inputs."""
    out: dict[str, tuple[int, ...]] = {}
    for s in specs:
        if hints and s.name in hints:
            out[s.name] = tuple(hints[s.name])
            continue
        dims = []
        for axis, d in enumerate(s.dims):
            if isinstance(d, int) and d > 0:
                dims.append(d)
                continue
            base = DIMS.get(d) if isinstance(d, str) else None
            base = base or ((1, 2) if axis == 0 else (8, 16))
            dims.append(base[1] if alt else base[0])
        out[s.name] = tuple(dims)
    return out


def symbolic(specs: list) -> bool:
    return any(not (isinstance(d, int) and d > 0) for s in specs for d in s.dims)


def _specs(path: str) -> tuple[list, dict[str, int]]:
    """Input specs and token-id bounds of an ONNX file, or of an IR (.xml: no bounds)."""
    if path.endswith(".xml"):
        import openvino as ov

        from graphlint.fix.verify import InputSpec, _ir_inputs

        try:
            return _ir_inputs(ov.Core().read_model(path)), {}
        except RuntimeError:  # an IR OpenVINO refuses (the truth records it): its Parameters as graphlint reads them
            from graphlint.load import load_model

            params = [v for v in load_model(path).graph.inputs if v.const is None]
            return [InputSpec(v.name, np.dtype(v.dtype), list(v.shape or ())) for v in params], {}
    import onnx

    from graphlint.fix.verify import _index_bounds, _onnx_inputs

    model = onnx.load(path, load_external_data=False)
    return _onnx_inputs(model), _index_bounds(model)


def feeds_for(path: str, entry: dict) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """Inputs at the declared shape and at another legal one (None: the model has no other).

    ``path`` is the ONNX file (an IR's source), or an IR written directly (optimum-intel), whose
    manifest entry then gives every input's shape. String inputs (skl2onnx text pipelines) take
    their ``values`` from the entry, repeated to the shape."""
    from graphlint.fix.verify import make_feeds

    specs, bounds = _specs(path)
    out = []
    for alt in (False, True):
        hints = entry.get("alt_shapes" if alt else "shapes")
        if alt and hints is None and entry.get("shapes"):
            hints = {k: [2 * v if i == 0 else v for i, v in enumerate(s)] for k, s in entry["shapes"].items()}
        if alt and not symbolic(specs) and not entry.get("alt_shapes"):
            out.append(None)
            continue
        sizes = shapes(specs, hints, alt)
        f = make_feeds([s for s in specs if s.dtype.kind != "O"], sizes, bounds, seed=1 if alt else 0)
        kinds = {s.name: s.dtype for s in specs}
        for name, value in entry.get("values", {}).items():
            if name not in kinds:  # an input the file does not have (the converter dropped or renamed it)
                continue
            flat = np.asarray(value, dtype=kinds[name] if kinds[name].kind == "O" else f[name].dtype).ravel()
            count = int(np.prod(sizes[name], dtype=np.int64))
            f[name] = np.resize(flat, count).reshape(sizes[name])
        out.append(f)
    return out[0], out[1]


def _verdict(rec: dict[str, Any], load_keys: tuple[str, ...]) -> str:
    if any(rec.get(k) for k in load_keys):
        return "rejects"
    if rec.get("run"):
        return "fails-run"
    if rec.get("run_alt") and rec["run_alt"] != SAME:
        return "fails-run-alt"
    return "accepts"


def _runs(rec: dict, base: dict, alt: dict | None, run, empty_ok: dict[str, set[int]] | None = None,
          sizes: dict[str, list[int]] | None = None) -> None:
    """Fill run / run_alt of ``rec`` with None (ok) or the error's first line.

    With ``empty_ok`` (OpenVINO), an empty output from non-empty inputs is a wrong result, not a run
    (OpenVINO CPU returns batch 0 instead of failing a broadcast it cannot do), except the outputs
    ONNX Runtime also gave empty on the same feeds (optimum's merged seq2seq decoders return empty
    dummy encoder caches from the cached branch by design). ``sizes`` collects each run's output sizes."""
    for key, f in (("run", base), ("run_alt", alt)):
        if f is None:
            rec[key] = SAME
            continue
        try:
            outs = [np.asarray(o) for o in run(f)]
            if sizes is not None:
                sizes[key] = [o.size for o in outs]
            ok = empty_ok.get(key, set()) if empty_ok is not None else None
            empty = [list(o.shape) for i, o in enumerate(outs) if o.size == 0 and ok is not None and i not in ok]
            rec[key] = f"wrong output: empty tensor of shape {empty[0]}" if empty else None
        except Exception as e:
            rec[key] = first_line(e)
            if key == "run":
                rec["run_alt"] = "not run"
                break


def empty_outputs(sizes: dict[str, list[int]]) -> dict[str, set[int]]:
    """Per run, the outputs ONNX Runtime gave empty (what an OpenVINO run may give empty too)."""
    return {k: {i for i, n in enumerate(v) if n == 0} for k, v in sizes.items()}


def ort_truth(path: str, base: dict, alt: dict | None, sizes: dict[str, list[int]] | None = None) -> dict:
    rec: dict[str, Any] = {"load": None, "run": None, "run_alt": None}
    try:
        sess = ort_session(path)
    except Exception as e:
        rec["load"] = first_line(e)
        rec["run"] = rec["run_alt"] = "not run"
    else:
        _runs(rec, base, alt, lambda f: sess.run(None, f), sizes=sizes)
    rec["verdict"] = _verdict(rec, ("load",))
    return rec


def openvino_truth(path: str, base: dict, alt: dict | None, ort_sizes: dict[str, list[int]] | None = None) -> dict:
    """OpenVINO on an ONNX file or an IR (.xml); feeds are the source ONNX model's; ``ort_sizes``, the
    output sizes ONNX Runtime gave on the same feeds (:func:`_runs`)."""
    import openvino as ov

    from graphlint.fix.verify import OPENVINO_F32

    rec: dict[str, Any] = {"read": None, "compile": None, "run": None, "run_alt": None}
    core = ov.Core()
    compiled = None
    try:
        model = core.read_model(path)
    except Exception as e:
        rec["read"] = first_line(e)
    else:
        try:
            compiled = core.compile_model(model, "CPU", {**OPENVINO_F32, "INFERENCE_NUM_THREADS": 1})
        except Exception as e:
            rec["compile"] = first_line(e)
    if compiled is None:
        rec["run"] = rec["run_alt"] = "not run"
    else:
        _runs(rec, base, alt, lambda f: list(compiled.infer_new_request(f).values()),
              empty_ok=empty_outputs(ort_sizes or {}))
    rec["verdict"] = _verdict(rec, ("read", "compile"))
    return rec
