"""Models for the ``graphlint fix`` tests: real exports with the problems the rewrites fix.

    bert_fused       tiny random BERT (transformers) exported by torch, then fused by
                     onnxruntime.transformers.optimizer: EmbedLayerNormalization, Attention,
                     SkipLayerNormalization, BiasGelu (com.microsoft)
    contrib_zoo      the other com.microsoft ops the optimizer emits for GPT/T5/CLIP-style blocks
                     (FastGelu, QuickGelu, Gelu, SimplifiedLayerNormalization, SkipSimplified-
                     LayerNormalization, causal Attention, MultiHeadAttention), one small graph
    interp11         bilinear/nearest interpolate + softmax on a middle axis, legacy exporter, opset 11
    uint8_input      a conv net that takes a uint8 image (Cast + /255 inside), opset 17
    double_io        float64 inputs/outputs and an int64 input (legacy exporter, opset 17)
    ir_nolayout      a conv net as OpenVINO IR with a dynamic batch and no layouts
"""

from __future__ import annotations

import os

import numpy as np

from testmodels.common import cached, to_openvino, torch_export


def build_bert_fused(folder: str) -> None:
    import torch
    from onnxruntime.transformers import optimizer
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=64, attn_implementation="eager")
    torch.manual_seed(0)
    bert = BertModel(cfg).eval()

    class Wrap(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = bert

        def forward(self, ids, mask, tt):
            out = self.m(input_ids=ids, attention_mask=mask, token_type_ids=tt, return_dict=False)
            return out[0], out[1]

    ids = torch.randint(0, 100, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.int64)
    tt = torch.zeros(2, 8, dtype=torch.int64)
    plain = os.path.join(folder, "bert.onnx")
    dyn = {"batch": 0, "seq": 1}
    torch_export(Wrap(), (ids, mask, tt), plain, opset=14,
                 input_names=["input_ids", "attention_mask", "token_type_ids"],
                 output_names=["last_hidden_state", "pooler_output"],
                 dynamic_axes={n: {v: k for k, v in dyn.items()} for n in ("input_ids", "attention_mask",
                                                                              "token_type_ids")})
    opt = optimizer.optimize_model(plain, model_type="bert", num_heads=4, hidden_size=32, opt_level=0)
    opt.save_model_to_file(os.path.join(folder, "bert_fused.onnx"))


def build_contrib_zoo(folder: str) -> None:
    """One graph chaining the fused ops ORT's optimizer emits for GPT-2/T5/CLIP blocks (random weights)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    h, n = 16, 2

    def w(name, *shape, scale=0.2):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [w("fg_bias", h), w("skip_gamma", h, scale=1.0), w("skip_bias", h), w("rms_scale", h, scale=1.0),
             w("qkv_w", h, 3 * h), w("qkv_b", 3 * h), w("mha_bias", 3 * h), w("wq", h, h), w("wk", h, h),
             w("wv", h, h)]
    ms = "com.microsoft"
    nodes = [
        helper.make_node("FastGelu", ["x", "fg_bias"], ["fg"], name="FastGelu_0", domain=ms),
        helper.make_node("QuickGelu", ["fg"], ["qg"], name="QuickGelu_0", domain=ms, alpha=1.702),
        helper.make_node("Gelu", ["qg"], ["g"], name="Gelu_0", domain=ms),
        helper.make_node("SkipSimplifiedLayerNormalization", ["g", "x", "skip_gamma", "skip_bias"],
                         ["ssln", "", "", "ssln_sum"], name="SkipSimplifiedLayerNorm_0", domain=ms, epsilon=1e-6),
        helper.make_node("SimplifiedLayerNormalization", ["ssln", "rms_scale"], ["rms"],
                         name="SimplifiedLayerNorm_0", axis=-1, epsilon=1e-6),
        helper.make_node("Attention", ["rms", "qkv_w", "qkv_b"], ["att"], name="Attention_causal", domain=ms,
                         num_heads=n, unidirectional=1),
        helper.make_node("MatMul", ["att", "wq"], ["q"], name="q_proj"),
        helper.make_node("MatMul", ["ssln_sum", "wk"], ["k"], name="k_proj"),
        helper.make_node("MatMul", ["ssln_sum", "wv"], ["v"], name="v_proj"),
        helper.make_node("MultiHeadAttention", ["q", "k", "v", "mha_bias", "key_padding_mask"], ["y"],
                         name="MultiHeadAttention_0", domain=ms, num_heads=n),
    ]
    g = helper.make_graph(
        nodes, "contrib_zoo",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", h]),
         helper.make_tensor_value_info("key_padding_mask", TensorProto.INT32, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", h])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)],
                          producer_name="graphlint-testmodels")
    m.ir_version = 8
    onnx.save(m, os.path.join(folder, "contrib_zoo.onnx"))


def build_interp11(folder: str) -> None:
    import torch
    import torch.nn.functional as F

    class Interp(torch.nn.Module):
        def forward(self, x):
            a = F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
            b = F.interpolate(x, scale_factor=2.0, mode="nearest")
            return torch.softmax(a + b, dim=1)

    torch_export(Interp(), (torch.randn(1, 3, 8, 8),), os.path.join(folder, "interp11.onnx"), opset=11,
                 input_names=["x"], output_names=["y"])


def build_uint8_input(folder: str) -> None:
    import torch

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

        def forward(self, img):
            return torch.relu(self.conv(img.float() / 255.0))

    torch.manual_seed(0)
    img = torch.randint(0, 256, (1, 3, 16, 16), dtype=torch.uint8)
    torch_export(Net(), (img,), os.path.join(folder, "uint8_input.onnx"), opset=17,
                 input_names=["image"], output_names=["features"])


def build_double_io(folder: str) -> None:
    import torch

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(10, 4).double()
            self.lin = torch.nn.Linear(4, 4).double()

        def forward(self, x, ids):
            return torch.tanh(self.lin(x) + self.emb(ids))

    torch.manual_seed(0)
    torch_export(Net(), (torch.randn(2, 4, dtype=torch.float64), torch.tensor([1, 2])),
                 os.path.join(folder, "double_io.onnx"), opset=17, input_names=["x", "ids"], output_names=["y"])


def build_ir_nolayout(folder: str) -> None:
    import torch

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

        def forward(self, pixel_values):
            return torch.sigmoid(self.conv(pixel_values))

    torch.manual_seed(0)
    onnx_path = os.path.join(folder, "net.onnx")
    torch_export(Net(), (torch.randn(1, 3, 16, 16),), onnx_path, opset=17, input_names=["pixel_values"],
                 output_names=["logits"], dynamic_axes={"pixel_values": {0: "batch"}, "logits": {0: "batch"}})
    to_openvino(onnx_path, os.path.join(folder, "net.xml"))


def model(name: str) -> str:
    """Path of the named test model (built once, cached under testmodels/out/)."""
    builders = {"bert_fused": (build_bert_fused, "bert_fused.onnx"), "contrib_zoo": (build_contrib_zoo, "contrib_zoo.onnx"),
                "interp11": (build_interp11, "interp11.onnx"), "uint8_input": (build_uint8_input, "uint8_input.onnx"),
                "double_io": (build_double_io, "double_io.onnx"), "ir_nolayout": (build_ir_nolayout, "net.xml")}
    fn, file = builders[name]
    return os.path.join(cached(f"fix-{name}", fn), file)
