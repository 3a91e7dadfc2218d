"""Small torch modules whose exports record where each node came from (issue 20's tests).

A model three modules deep (``Encoder`` > ``Block`` > ``Mixer``) whose lines marked
``# origin: NAME`` make nodes the linter flags (a MatMul with a weight of odd size, a
tanh-approximate GELU, a NonZero); the tests find those lines by their marker.
Exported with the dynamo exporter (opsets 17 and 18), the TorchScript exporter (opset 17,
plain and with ``verbose=True``, which writes each node's stack into ``doc_string``), both
converted to OpenVINO IR, converted to IR straight from the module, and once more from a copy of this file in a folder that is deleted
after the export: the recorded paths then name a file that exists only by suffix
(``testmodels/origin_models.py``), as in an export made on another machine.

    python -m testmodels.origin_models OUT_DIR
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile

from testmodels.common import cached, to_openvino, torch_export

HIDDEN = 8
WIDTH = 12  # neither is a multiple of 16: the NPU's pad-to-multiple finding lands on the MatMul


def _classes():
    import torch
    from torch import nn

    class Mixer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(HIDDEN, WIDTH))

        def forward(self, x):
            mixed = torch.matmul(x, self.weight)  # origin: matmul
            picked = torch.nonzero(mixed > 0)  # origin: nonzero
            return torch.cat([mixed, x], dim=-1), picked  # origin: concat

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mixer = Mixer()
            self.proj = nn.Linear(HIDDEN + WIDTH, HIDDEN)

        def forward(self, x):
            mixed, picked = self.mixer(x)
            return self.proj(torch.nn.functional.gelu(mixed, approximate="tanh")), picked  # origin: gelu

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList([Block(), Block()])

        def forward(self, x):
            for layer in self.layers:
                x, picked = layer(x)
            return x, picked

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = Encoder()

        def forward(self, x):
            y, picked = self.encoder(x)
            return y * 2.0, picked

    return Model


def model():
    import torch

    torch.manual_seed(0)
    return _classes()().eval(), (torch.randn(2, 5, HIDDEN),)


def _export_all(module, args, folder: str, prefix: str = "") -> None:
    for opset in (17, 18):
        torch_export(module, args, os.path.join(folder, f"{prefix}dynamo{opset}.onnx"), opset=opset, dynamo=True,
                     input_names=["x"], output_names=["y", "picked"])
    torch_export(module, args, os.path.join(folder, f"{prefix}legacy17.onnx"), opset=17,
                 input_names=["x"], output_names=["y", "picked"])


def _verbose_legacy(module, args, path: str) -> None:
    """The TorchScript exporter with verbose=True, which keeps each node's stack in doc_string."""
    import torch

    with torch.no_grad():
        torch.onnx.export(module, args, path, dynamo=False, opset_version=17, input_names=["x"],
                          output_names=["y", "picked"], verbose=True)


def _elsewhere(folder: str) -> None:
    """Export from a copy of this file under a folder that is gone afterwards."""
    away = tempfile.mkdtemp(prefix="graphlint-origin-")
    try:
        copy = os.path.join(away, "proj", "testmodels", "origin_models.py")
        os.makedirs(os.path.dirname(copy))
        shutil.copyfile(__file__, copy)
        spec = importlib.util.spec_from_file_location("_origin_models_elsewhere", copy)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        try:
            spec.loader.exec_module(mod)
            module, args = mod.model()
            torch_export(module, args, os.path.join(folder, "elsewhere_dynamo18.onnx"), opset=18, dynamo=True,
                         input_names=["x"], output_names=["y", "picked"])
        finally:
            del sys.modules[spec.name]
    finally:
        shutil.rmtree(away)


def build(folder: str) -> None:
    module, args = model()
    _export_all(module, args, folder)
    _verbose_legacy(module, args, os.path.join(folder, "legacy17_verbose.onnx"))
    for name in ("dynamo18", "legacy17"):
        to_openvino(os.path.join(folder, f"{name}.onnx"), os.path.join(folder, f"{name}.xml"))
    import openvino as ov  # and straight from the torch module (OpenVINO's PyTorch frontend)

    ov.save_model(ov.convert_model(module, example_input=args), os.path.join(folder, "torch_direct.xml"),
                  compress_to_fp16=False)
    _elsewhere(folder)


def models() -> str:
    """The cached folder holding every model above."""
    # the exports record this file's absolute path: a cache built in another checkout would point elsewhere
    return cached("origins", build, extra=os.path.abspath(__file__))


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    build(sys.argv[1])
