"""Small real exports for the core tests: a conv net via both torch exporters, and its OpenVINO IR.

    python -m testmodels.build_core OUT_DIR
"""

from __future__ import annotations

import os
import sys

from testmodels.common import to_openvino, torch_export


def _convnet():
    import torch
    from torch import nn

    class ConvNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
            self.head = nn.Linear(16, 10)

        def forward(self, x):
            x = torch.relu(self.bn(self.conv1(x)))
            x = torch.relu(self.conv2(x))
            x = x.mean(dim=(2, 3))
            return torch.softmax(self.head(x), dim=-1)

    torch.manual_seed(0)
    return ConvNet().eval(), (torch.randn(1, 3, 32, 32),)


def build(out: str) -> None:
    import torch

    net, args = _convnet()
    legacy = os.path.join(out, "convnet_opset17.onnx")
    torch_export(net, args, legacy, opset=17, input_names=["pixel_values"], output_names=["probs"],
                 dynamic_axes={"pixel_values": {0: "batch"}, "probs": {0: "batch"}})
    batch = torch.export.Dim("batch", min=1, max=64)
    torch_export(net, args, os.path.join(out, "convnet_dynamo.onnx"), opset=18, dynamo=True,
                 input_names=["pixel_values"], output_names=["probs"], dynamic_shapes=({0: batch},))
    to_openvino(legacy, os.path.join(out, "convnet.xml"))
    to_openvino(legacy, os.path.join(out, "convnet_nchw.xml"), layouts={"pixel_values": "NCHW"})


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    build(sys.argv[1])
