"""Shared helpers for the model-building scripts: torch export both ways, OpenVINO IR, caching.

Every builder writes into a folder it is given. ``cached(name, builder)`` keeps built models
under testmodels/out/<name>/ keyed by the builder script's source hash, so repeated test runs
reuse exports while a changed script rebuilds.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import shutil
import tempfile
from collections.abc import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("GRAPHLINT_TESTMODELS_OUT", os.path.join(HERE, "out"))


# The tools whose versions shape what the builders write (a builder that finds one missing may
# leave its models out, so installing it later must rebuild too); the corpus truth records them.
TOOLS = ("onnxruntime", "openvino", "onnx", "torch", "transformers", "onnxscript", "onnxconverter-common")


def tool_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in TOOLS:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def cached(name: str, builder: Callable[[str], None], extra: str = "") -> str:
    """Run ``builder(folder)`` once per version of its module's source, of the tools and of ``extra``
    (anything else the models record); return the folder."""
    src = (inspect.getsource(inspect.getmodule(builder) or builder) + inspect.getsource(cached) + repr(tool_versions())
           + extra)
    key = hashlib.sha256(src.encode()).hexdigest()[:12]
    folder = os.path.join(OUT, f"{name}-{key}")
    if os.path.isfile(os.path.join(folder, ".complete")):
        return folder
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{name}-", dir=OUT)
    try:
        builder(tmp)
        open(os.path.join(tmp, ".complete"), "w").close()
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp)
    return folder


def main(build: Callable[[str], None], models: Callable[[], str]) -> None:
    """``python -m testmodels.X [OUT_DIR]``: build into OUT_DIR, or into the cache; print the folder."""
    import sys

    out = sys.argv[1] if len(sys.argv) > 1 else None
    if out:
        os.makedirs(out, exist_ok=True)
        build(out)
        print(out)
    else:
        print(models())


def torch_export(module, args: tuple, path: str, *, opset: int, dynamo: bool = False,
                 input_names: list[str] | None = None, output_names: list[str] | None = None,
                 dynamic_axes: dict | None = None, dynamic_shapes=None) -> str:
    """torch.onnx.export with either exporter; the dynamo one writes a single file (no external data)."""
    import torch

    module.eval()
    torch.manual_seed(0)
    with torch.no_grad():
        if dynamo:
            prog = torch.onnx.export(module, args, dynamo=True, opset_version=opset, input_names=input_names,
                                     output_names=output_names, dynamic_shapes=dynamic_shapes,
                                     external_data=False, optimize=True, verbose=False)
            prog.save(path, external_data=False)
        else:
            torch.onnx.export(module, args, path, dynamo=False, opset_version=opset, input_names=input_names,
                              output_names=output_names, dynamic_axes=dynamic_axes)
    return path


def to_openvino(onnx_path: str, xml_path: str, *, layouts: dict[str, str] | None = None) -> str:
    """Convert an ONNX file to OpenVINO IR, optionally setting input layouts with PrePostProcessor."""
    import openvino as ov

    model = ov.convert_model(onnx_path)
    if layouts:
        from openvino.preprocess import PrePostProcessor

        ppp = PrePostProcessor(model)
        for name, layout in layouts.items():
            ppp.input(name).model().set_layout(ov.Layout(layout))
        model = ppp.build()
    ov.save_model(model, xml_path, compress_to_fp16=False)
    return xml_path
