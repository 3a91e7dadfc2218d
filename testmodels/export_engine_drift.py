"""torch exports where an engine-drift fact shows up in practice, and close variants without the condition.

    python testmodels/export_engine_drift.py [OUT_DIR]

Each case is (module, input); both exporters where they support the op (the legacy exporter has
no antialiased interpolate). Saved as ``<case>_<legacy|dynamo>.onnx`` with the input and torch's
output in ``<case>.npz``.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from testmodels.common import cached, torch_export


def _cases() -> dict:
    import torch
    import torch.nn.functional as F

    class Interp(torch.nn.Module):
        def __init__(self, antialias: bool) -> None:
            super().__init__()
            self.antialias = antialias

        def forward(self, x):
            return F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=self.antialias)

    class Unshuffle(torch.nn.Module):
        def forward(self, x):
            return F.pixel_unshuffle(x, 2)

    g = torch.Generator().manual_seed(0)
    img = torch.randn(1, 3, 16, 16, generator=g)
    return {
        # (module, input, exporters)
        "interp_antialias": (Interp(True), img, ("dynamo",)),
        "interp_plain": (Interp(False), img, ("legacy", "dynamo")),
        # 5 + 2 pads - 2 = 5 -> ceil(5 / 2) + 1 = 4 windows; the 4th starts at 6 >= 5 + 1: dropped by torch
        "maxpool_ceil_pad": (torch.nn.MaxPool2d(2, stride=2, padding=1, ceil_mode=True), torch.randn(1, 2, 5, 5, generator=g),
                             ("legacy", "dynamo")),
        "maxpool_ceil_nopad": (torch.nn.MaxPool2d(3, stride=2, ceil_mode=True), torch.randn(1, 2, 8, 8, generator=g),
                               ("legacy", "dynamo")),
        "pixel_unshuffle": (Unshuffle(), torch.randn(1, 2, 4, 6, generator=g), ("legacy", "dynamo")),
    }


def build(folder: str) -> None:
    import torch

    for name, (module, x, exporters) in _cases().items():
        with torch.no_grad():
            y = module(x)
        np.savez(os.path.join(folder, f"{name}.npz"), x=x.numpy(), y=y.numpy())
        for exp in exporters:
            torch_export(module, (x,), os.path.join(folder, f"{name}_{exp}.onnx"), opset=18,
                         dynamo=exp == "dynamo", input_names=["x"], output_names=["y"])


def exports() -> str:
    return cached("engine-drift", build)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out", "engine-drift")
    os.makedirs(out, exist_ok=True)
    build(out)
    print(f"wrote {len(_cases())} cases to {out}")
