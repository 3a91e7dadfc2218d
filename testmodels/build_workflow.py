"""Real torch exports for the workflow tests (baselines, suppressions, configuration, HTML).

    python -m testmodels.build_workflow OUT_DIR

``twobranch_{a,b}_{legacy,dynamo}.onnx`` export the same computation with the two
independent branches traced in opposite order, so node order and exporter-assigned names
(``/Relu`` vs ``/Relu_1``) differ while the graph is the same: what a baseline must survive.
``convnet_opset22.onnx`` is a small conv net at opset 22, newer than TensorRT 10.1 reads.
"""

from __future__ import annotations

import os
import sys

from testmodels.common import torch_export


def two_branch(first: str):
    import torch
    from torch import nn

    class TwoBranch(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            h = self.proj(x)
            if first == "a":
                a = torch.relu(h + 1.0)
                b = torch.relu(h * 2.0)
            else:
                b = torch.relu(h * 2.0)
                a = torch.relu(h + 1.0)
            return torch.sigmoid(a) - torch.tanh(b)

    torch.manual_seed(0)
    return TwoBranch().eval(), (torch.randn(2, 8),)


def build(out: str) -> None:
    from testmodels.build_core import _convnet

    for order in ("a", "b"):
        net, args = two_branch(order)
        torch_export(net, args, os.path.join(out, f"twobranch_{order}_legacy.onnx"), opset=17,
                     input_names=["x"], output_names=["y"])
        torch_export(net, args, os.path.join(out, f"twobranch_{order}_dynamo.onnx"), opset=18, dynamo=True,
                     input_names=["x"], output_names=["y"])
    net, args = _convnet()
    torch_export(net, args, os.path.join(out, "convnet_opset22.onnx"), opset=22, dynamo=True,
                 input_names=["pixel_values"], output_names=["probs"])


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    build(sys.argv[1])
