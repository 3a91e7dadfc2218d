"""Build the README's example model: testmodels/examples/tiny_vlm.onnx (a few KB, committed).

A toy vision-language graph with the integration traps graphlint exists for: a uint8 image
input normalised inside the graph, an opset-11 Resize with align_corners, image patches and
text tokens concatenated along a sequence axis, an opset-11 Softmax on a rank-3 tensor, and
an ORT-fused com.microsoft FastGelu. It loads and runs in onnxruntime.

    python -m testmodels.make_examples
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))


def tiny_vlm() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    d = 16  # hidden size

    def init(name: str, arr: np.ndarray) -> onnx.TensorProto:
        return nh.from_array(arr, name)

    inits = [
        init("scale", np.array(255.0, np.float32)),
        init("conv_w", rng.standard_normal((d, 3, 4, 4)).astype(np.float32) * 0.1),
        init("roi", np.array([], np.float32)),
        init("no_scales", np.array([], np.float32)),
        init("sizes", np.array([1, d, 16, 16], np.int64)),
        init("patch_shape", np.array([0, d, -1], np.int64)),
        init("embed", rng.standard_normal((100, d)).astype(np.float32) * 0.1),
        init("proj_w", rng.standard_normal((d, d)).astype(np.float32) * 0.1),
    ]
    nodes = [
        h.make_node("Cast", ["pixel_values"], ["pix_f"], name="cast_pixels", to=T.FLOAT),
        h.make_node("Div", ["pix_f", "scale"], ["pix_norm"], name="normalize"),
        h.make_node("Conv", ["pix_norm", "conv_w"], ["patches4d"], name="patch_embed", strides=[4, 4]),
        h.make_node("Resize", ["patches4d", "roi", "no_scales", "sizes"], ["patches_up"], name="upsample_patches",
                    mode="linear", coordinate_transformation_mode="align_corners"),
        h.make_node("Reshape", ["patches_up", "patch_shape"], ["patches_cl"], name="flatten_patches"),
        h.make_node("Transpose", ["patches_cl"], ["image_tokens"], name="to_tokens", perm=[0, 2, 1]),
        h.make_node("Gather", ["embed", "input_ids"], ["text_tokens"], name="embed_text"),
        h.make_node("Concat", ["image_tokens", "text_tokens"], ["tokens"], name="concat_modalities", axis=1),
        h.make_node("MatMul", ["tokens", "proj_w"], ["proj"], name="proj"),
        h.make_node("FastGelu", ["proj"], ["act"], name="fused_gelu", domain="com.microsoft"),
        h.make_node("Softmax", ["act"], ["probs"], name="softmax_tokens", axis=1),
    ]
    graph = h.make_graph(
        nodes, "tiny_vlm",
        [h.make_tensor_value_info("pixel_values", T.UINT8, [1, 3, 32, 32]),
         h.make_tensor_value_info("input_ids", T.INT64, [1, "seq"])],
        [h.make_tensor_value_info("probs", T.FLOAT, [1, None, d])],
        initializer=inits,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 11), h.make_opsetid("com.microsoft", 1)],
                         producer_name="graphlint-examples")
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def main() -> None:
    out = os.path.join(HERE, "examples", "tiny_vlm.onnx")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    onnx.save(tiny_vlm(), out)
    print(out)


if __name__ == "__main__":
    main()
