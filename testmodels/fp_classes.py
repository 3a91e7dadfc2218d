"""Healthy models from real exporters and tools that graphlint used to report errors on (issue 17).

Each file is produced the way users produce it, from transformers models built from tiny configs
with fixed seeds; ONNX Runtime 1.32 and OpenVINO 2026.4 load and run every one of them:

* ``vit_fp16.onnx``: a ViT export (opset 17) through
  ``onnxruntime.transformers.float16.convert_float_to_float16(keep_io_types=True)``, which appends
  the input Cast after the nodes that read it (not topologically sorted);
* ``vit_ortopt13.onnx``: a ViT export at opset 13 through ``onnxruntime.transformers.optimizer``,
  which writes a default-domain ``LayerNormalization`` (an opset-17 op) into the opset-13 graph;
* ``hardswish18.onnx``: ``nn.Hardswish`` through the dynamo exporter at opset 18 (``HardSwish-14``,
  which ONNX Runtime runs by inlining its function body);
* ``bert11.onnx``, ``vit12.onnx``: attention-score Softmax at opsets 11 and 12 (axis = the last);
* ``vit_dimneg.onnx``: the ViT export with ``dim_value: -1`` in its output shape, as converters
  write an unknown dim (a declared shape that disagrees with the inferred one);
* ``bert17.onnx``: a plain BERT export with dynamic batch and sequence (noise on every target).

And one that is broken, to show the errors that remain are real:

* ``broken_vit_dynhw.onnx``: the ViT export with height and width declared dynamic; its position
  table has 17 rows (16 patches + CLS at 32x32), so any other size fails at run time.

Run ``python -m testmodels.fp_classes OUTDIR`` or use :func:`models` (cached).
"""

from __future__ import annotations

import os
import sys

from testmodels.build_fused import HIDDEN, _bert, _vit, _Wrap
from testmodels.common import cached, torch_export


def _text_model():
    import torch

    torch.manual_seed(0)
    return _Wrap(_bert().eval(), ("input_ids", "attention_mask")).eval()


def _image_model():
    import torch

    torch.manual_seed(0)
    return _Wrap(_vit().eval(), ("pixel_values",)).eval()


def build(folder: str) -> None:
    import onnx
    import torch
    from onnxruntime.transformers.float16 import convert_float_to_float16
    from onnxruntime.transformers.optimizer import optimize_model

    ids, mask = torch.randint(0, 99, (2, 7)), torch.ones(2, 7, dtype=torch.int64)
    text_axes = {"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}, "out": {0: "batch", 1: "seq"}}
    for opset, name in ((11, "bert11.onnx"), (17, "bert17.onnx")):
        torch_export(_text_model(), (ids, mask), os.path.join(folder, name), opset=opset, input_names=["ids", "mask"],
                     output_names=["out"], dynamic_axes=text_axes)
    pix = torch.randn(1, 3, 32, 32)
    image_axes = {"x": {0: "batch"}, "y": {0: "batch"}}
    raw = {}
    for opset in (12, 13, 17):
        raw[opset] = torch_export(_image_model(), (pix,), os.path.join(folder, f"vit{opset}.onnx"), opset=opset,
                                  input_names=["x"], output_names=["y"], dynamic_axes=image_axes)
    onnx.save(convert_float_to_float16(onnx.load(raw[17]), keep_io_types=True), os.path.join(folder, "vit_fp16.onnx"))
    opt = optimize_model(raw[13], model_type="vit", num_heads=4, hidden_size=HIDDEN)
    opt.save_model_to_file(os.path.join(folder, "vit_ortopt13.onnx"))
    m = onnx.load(raw[17])
    m.graph.output[0].type.tensor_type.shape.dim[1].dim_value = -1  # what converters write for "unknown"
    onnx.save(m, os.path.join(folder, "vit_dimneg.onnx"))
    torch_export(_image_model(), (pix,), os.path.join(folder, "broken_vit_dynhw.onnx"), opset=17,
                 input_names=["x"], output_names=["y"],
                 dynamic_axes={"x": {0: "batch", 2: "height", 3: "width"}, "y": {0: "batch"}})
    os.remove(raw[13])
    os.remove(raw[17])

    class HardSwishNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv, self.act, self.head = torch.nn.Conv2d(3, 8, 3), torch.nn.Hardswish(), torch.nn.Linear(8, 4)

        def forward(self, x):
            return self.head(self.act(self.conv(x)).mean((2, 3)))

    torch.manual_seed(0)
    torch_export(HardSwishNet(), (torch.randn(1, 3, 16, 16),), os.path.join(folder, "hardswish18.onnx"), opset=18,
                 dynamo=True, input_names=["x"], output_names=["y"])


def models() -> str:
    return cached("fp-classes", build)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "testmodels/out/fp-classes"
    os.makedirs(out, exist_ok=True)
    build(out)
    print(f"wrote {out}")
