"""Fill what graphlint's pass leaves unknown from onnxruntime's symbolic shape inference.

onnxruntime ships it as ``onnxruntime.tools.symbolic_shape_infer``; that package's __init__
imports torch when torch is installed (seconds on the lint path), so the module is loaded from
its file. Its public ``SymbolicShapeInference.infer_shapes`` saves a scratch model into the
working folder when inference is incomplete, so it runs in a temporary working folder.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from graphlint.analysis.shapes.facts import SDim, ShapeFacts, merge
from graphlint.analysis.symbolic import to_poly
from graphlint.ir import Model, Value
from graphlint.load.onnx_types import dims

MAX_NODES = 20000  # larger models are not given to it: it is slow and rarely adds anything there
_MODULE = "graphlint._ort_symbolic_shape_infer"


def _module() -> Any:
    if _MODULE in sys.modules:
        return sys.modules[_MODULE]
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("onnxruntime is not installed")
    path = os.path.join(next(iter(spec.submodule_search_locations)), "tools", "symbolic_shape_infer.py")
    mod_spec = importlib.util.spec_from_file_location(_MODULE, path)
    if mod_spec is None or mod_spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[_MODULE] = module
    mod_spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _working_folder(path: str) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def fill_unknown(model: Model, facts: ShapeFacts, unknown: list[Value]) -> str | None:
    """Fill ``unknown`` values' shapes in ``facts`` from onnxruntime; return its crash, if any."""
    try:
        module = _module()
        logging.getLogger("onnxruntime.tools.symbolic_shape_infer").setLevel(logging.CRITICAL)
        sink = io.StringIO()
        with tempfile.TemporaryDirectory(prefix="graphlint-ort-") as scratch, _working_folder(scratch), \
                contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            # int_max, auto_merge, guess_output_rank, verbose
            out = module.SymbolicShapeInference.infer_shapes(model.proto, 2**31 - 1, True, True, 0)
    except Exception as e:  # its crashes are findings (GL3009), never ours
        text = str(e).strip().splitlines()
        return f"{type(e).__name__}: {text[0] if text else ''}".strip().rstrip(":")
    if out is None:
        return "returned no model"
    g = out.graph
    found: dict[str, Any] = {vi.name: vi.type for vi in (*g.value_info, *g.output)}
    for v in unknown:
        t = found.get(v.name)
        if t is None:
            continue
        _, shape = dims(t)
        if shape is None:
            continue
        filled = tuple(_known_to_us(facts, to_poly(d) if d not in ("", None) else None) for d in shape)
        facts.shapes[v] = merge(facts.shapes.get(v), filled)
    return None


def _known_to_us(facts: ShapeFacts, d: SDim) -> SDim:
    """Keep onnxruntime's dims only when they are numbers or built from input symbols.

    With ``guess_output_rank`` it invents per-output names (``Op_0_o0__d0``) for ops it cannot
    infer: a guessed rank, not a known shape.
    """
    if d is None or d.is_const or all(s in facts.origins for s in d.symbols):
        return d
    return None
