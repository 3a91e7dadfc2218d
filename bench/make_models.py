"""Build the benchmark models quickly with onnx.helper (no torch, no engine).

Every model is a stack of transformer-like blocks over ``input_ids[batch, seq]``:
Gather embedding, LayerNormalization (or its 9-node decomposition on odd blocks), Q/K/V
MatMul+Add, a dynamic Shape->Gather->Unsqueeze->Concat target shape for Reshape,
Transpose, MatMul/Div/Add(mask)/Softmax/MatMul attention, output projection, an erf-GELU
MLP and residual Adds. Batch and sequence dims are symbolic. A few blocks route their
output through an ``If`` whose branches hold small subgraphs using outer-scope values.

``llm64.onnx`` is a decoder-only LLM (Llama-shaped, 64 layers) as torch's unoptimized dynamo
exporter writes it: embedding Gather, RMSNorm decomposed, rotary embeddings recomputed per layer
(Range/Cos/Sin/Gather by position_ids, rotate_half by Slice/Neg/Concat), grouped-query attention
with KV-cache inputs ``past_key_values.N.key/value [batch, kv_heads, past, head_dim]`` concatenated
with the new keys into ``present.N.*`` outputs, the causal mask computed from attention_mask, a SiLU
MLP; a Constant node per use of a scalar and the SymInt chains (Shape -> Gather -> Squeeze ->
Reshape) of every view; weights of 1 KB or more as external data in one sparse file.

``dag100k.onnx`` is shaped differently: a DAG of gated residual blocks over ``x[batch, seq,
hidden]`` (MatMul+Add into Tanh and Sigmoid, their Mul, a residual Add, and every fourth block
an Add of the output four blocks back), with no shape computation and no subgraphs.

Weights are either embedded (small hidden sizes) or external data. External data is
written as one sparse file (``truncate`` to the full size, nothing else written), so a
2 GB model costs no disk, yet every tensor has a valid, in-bounds, aligned
location/offset/length entry that onnx and graphlint accept.

    python bench/make_models.py --out bench/out            # every scenario
    python bench/make_models.py --out /tmp/x --scale 0.01  # tiny (smoke test)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

OPSET = 17
FLOAT = TensorProto.FLOAT
ALIGN = 4096  # external-data offsets are page aligned, as onnx's own writer can do


class Builder:
    """Accumulates nodes and initializers; weights go embedded or to one external file."""

    def __init__(self, hidden: int, heads: int, external: str | None, seed: int = 0) -> None:
        self.hidden = hidden
        self.heads = heads
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.external = external  # file name (relative to the model) or None for embedded
        self.offset = 0
        self.rng = np.random.default_rng(seed)
        self.n = 0

    def name(self, op: str) -> str:
        self.n += 1
        return f"{op}_{self.n}"

    def node(self, op: str, inputs: list[str], n_out: int = 1, **attrs) -> list[str] | str:
        nm = self.name(op)
        outs = [f"{nm}_out{i}" if n_out > 1 else f"{nm}_out" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=nm, **attrs))
        return outs if n_out > 1 else outs[0]

    def const(self, name: str, arr: np.ndarray) -> str:
        """A small constant, always embedded (shape constants must stay data-propagatable)."""
        self.inits.append(onnx.numpy_helper.from_array(arr, name))
        return name

    def weight(self, name: str, shape: tuple[int, ...]) -> str:
        if self.external is None:
            arr = (self.rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)
            self.inits.append(onnx.numpy_helper.from_array(arr, name))
            return name
        nbytes = math.prod(shape) * 4
        tp = TensorProto(name=name, data_type=FLOAT, dims=list(shape))
        tp.data_location = TensorProto.EXTERNAL
        for k, v in (("location", self.external), ("offset", str(self.offset)), ("length", str(nbytes))):
            e = tp.external_data.add()
            e.key, e.value = k, v
        self.offset += -(-nbytes // ALIGN) * ALIGN
        self.inits.append(tp)
        return name


def _layer_norm(b: Builder, x: str, i: int, decomposed: bool) -> str:
    g = b.weight(f"ln{i}_gamma", (b.hidden,))
    beta = b.weight(f"ln{i}_beta", (b.hidden,))
    if not decomposed:
        return b.node("LayerNormalization", [x, g, beta], axis=-1, epsilon=1e-5)
    mean = b.node("ReduceMean", [x], axes=[-1], keepdims=1)
    d = b.node("Sub", [x, mean])
    sq = b.node("Pow", [d, "c_two"])
    var = b.node("ReduceMean", [sq], axes=[-1], keepdims=1)
    ve = b.node("Add", [var, "c_eps"])
    sd = b.node("Sqrt", [ve])
    nrm = b.node("Div", [d, sd])
    return b.node("Add", [b.node("Mul", [nrm, g]), beta])


def _block(b: Builder, x: str, i: int, with_if: bool) -> str:
    h = b.hidden
    ln1 = _layer_norm(b, x, 2 * i, decomposed=i % 2 == 1)
    # Dynamic target shape [batch, seq, heads, head_dim], as exporters emit it.
    shp = b.node("Shape", [ln1])
    bsz = b.node("Unsqueeze", [b.node("Gather", [shp, "c_i0"], axis=0), "c_axes0"])
    seq = b.node("Unsqueeze", [b.node("Gather", [shp, "c_i1"], axis=0), "c_axes0"])
    split_shape = b.node("Concat", [bsz, seq, "c_heads"], axis=0)
    proj = []
    for p in ("q", "k", "v"):
        w = b.weight(f"b{i}_W{p}", (h, h))
        bias = b.weight(f"b{i}_b{p}", (h,))
        t = b.node("Add", [b.node("MatMul", [ln1, w]), bias])
        t = b.node("Reshape", [t, split_shape])
        perm = [0, 2, 3, 1] if p == "k" else [0, 2, 1, 3]
        proj.append(b.node("Transpose", [t], perm=perm))
    q, k, v = proj
    scores = b.node("Div", [b.node("MatMul", [q, k]), "c_scale"])
    probs = b.node("Softmax", [b.node("Add", [scores, "attn_mask"])], axis=-1)
    ctx = b.node("Transpose", [b.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = b.node("Reshape", [ctx, "c_merge"])
    wo, bo = b.weight(f"b{i}_Wo", (h, h)), b.weight(f"b{i}_bo", (h,))
    x = b.node("Add", [x, b.node("Add", [b.node("MatMul", [ctx, wo]), bo])])
    ln2 = _layer_norm(b, x, 2 * i + 1, decomposed=i % 2 == 1)
    w1, b1 = b.weight(f"b{i}_W1", (h, 4 * h)), b.weight(f"b{i}_b1", (4 * h,))
    w2, b2 = b.weight(f"b{i}_W2", (4 * h, h)), b.weight(f"b{i}_b2", (h,))
    f = b.node("Add", [b.node("MatMul", [ln2, w1]), b1])
    gelu = b.node("Mul", [b.node("Mul", [f, b.node("Add", [b.node("Erf", [b.node("Div", [f, "c_sqrt2"])]),
                                                            "c_one"])]), "c_half"])
    x = b.node("Add", [x, b.node("Add", [b.node("MatMul", [gelu, w2]), b2])])
    if with_if:
        x = _if(b, x, i)
    return x


def _if(b: Builder, x: str, i: int) -> str:
    """If(seq_len > 1) then Relu(x) * 1 else x + 0: two small subgraphs using the outer x."""
    seq = b.node("Gather", [b.node("Shape", [x]), "c_i1"], axis=0)
    cond = b.node("Greater", [seq, "c_i1"])
    out_t = helper.make_tensor_value_info(f"if{i}_then_out", FLOAT, None)
    out_e = helper.make_tensor_value_info(f"if{i}_else_out", FLOAT, None)
    then_g = helper.make_graph(
        [helper.make_node("Relu", [x], [f"if{i}_relu"], name=f"if{i}_Relu"),
         helper.make_node("Mul", [f"if{i}_relu", "c_one"], [f"if{i}_then_out"], name=f"if{i}_Mul")],
        f"if{i}_then", [], [out_t])
    else_g = helper.make_graph(
        [helper.make_node("Add", [x, "c_zero"], [f"if{i}_else_out"], name=f"if{i}_Add")],
        f"if{i}_else", [], [out_e])
    return b.node("If", [cond], then_branch=then_g, else_branch=else_g)


def nodes_per_block() -> float:
    """Average node count of one block (even and odd blocks differ by the LN decomposition)."""
    return (_count(False) + _count(True)) / 2


def _count(odd: bool) -> int:
    b = Builder(4, 2, None)
    _block(b, "x", 1 if odd else 0, with_if=False)
    return len(b.nodes)


def build(path: str, *, nodes: int, hidden: int, heads: int = 2, external: bool = False,
          n_if: int = 4, vocab: int = 1000) -> dict:
    """Write a model of about ``nodes`` nodes to ``path``; return facts about it."""
    t0 = time.perf_counter()
    base = os.path.basename(path)
    data_name = base.rsplit(".", 1)[0] + ".data" if external else None
    b = Builder(hidden, heads, data_name)
    hd = hidden // heads
    consts = {
        "c_two": np.array(2.0, np.float32), "c_eps": np.array(1e-5, np.float32),
        "c_scale": np.array(math.sqrt(hd), np.float32), "c_sqrt2": np.array(math.sqrt(2), np.float32),
        "c_one": np.array(1.0, np.float32), "c_half": np.array(0.5, np.float32),
        "c_zero": np.array(0.0, np.float32),
        "c_i0": np.array(0, np.int64), "c_i1": np.array(1, np.int64), "c_axes0": np.array([0], np.int64),
        "c_heads": np.array([heads, hd], np.int64), "c_merge": np.array([0, 0, hidden], np.int64),
    }
    for k, v in consts.items():
        b.const(k, v)
    emb = b.weight("embedding", (vocab, hidden))
    x = b.node("Gather", [emb, "input_ids"], axis=0)
    blocks = max(1, round((nodes - 1) / nodes_per_block()))
    if_every = max(1, blocks // n_if) if n_if else 0
    for i in range(blocks):
        x = _block(b, x, i, with_if=bool(if_every) and i % if_every == if_every - 1)
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    graph = helper.make_graph(
        b.nodes, "bench",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attn_mask", FLOAT, ["batch", 1, 1, "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", FLOAT, ["batch", "seq", hidden])],
        b.inits,
    )
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if external:
        data_path = os.path.join(os.path.dirname(os.path.abspath(path)), data_name)
        with open(data_path, "wb") as f:
            f.truncate(b.offset)  # sparse: zeros that take no disk blocks
    _write(graph, path)
    return {"path": path, "nodes": len(b.nodes), "blocks": blocks, "hidden": hidden,
            "weight_bytes": b.offset if external else sum(len(t.raw_data) for t in b.inits),
            "seconds": round(time.perf_counter() - t0, 2)}


def _write(graph: onnx.GraphProto, path: str) -> None:
    """The model of ``graph`` at ``path`` (written to a temporary file, then renamed)."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="graphlint-bench")
    model.ir_version = 8
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(model.SerializeToString())
    os.replace(tmp, path)


def build_dag(path: str, *, nodes: int, hidden: int, skip_every: int = 4) -> dict:
    """Write the residual-DAG model of about ``nodes`` nodes to ``path``; return facts about it."""
    t0 = time.perf_counter()
    b = Builder(hidden, 1, None)
    per_block = 8 + 1 / skip_every
    blocks = max(1, round((nodes - 1) / per_block))
    outs = ["x"]
    for i in range(blocks):
        x = outs[-1]
        gates = []
        for act, p in (("Tanh", "a"), ("Sigmoid", "b")):
            w, bias = b.weight(f"d{i}_W{p}", (hidden, hidden)), b.weight(f"d{i}_b{p}", (hidden,))
            gates.append(b.node(act, [b.node("Add", [b.node("MatMul", [x, w]), bias])]))
        y = b.node("Add", [x, b.node("Mul", gates)])
        if i % skip_every == skip_every - 1 and len(outs) > skip_every:
            y = b.node("Add", [y, outs[-skip_every]])
        outs.append(y)
    b.nodes.append(helper.make_node("Identity", [outs[-1]], ["y"], name="output"))
    graph = helper.make_graph(
        b.nodes, "bench_dag",
        [helper.make_tensor_value_info("x", FLOAT, ["batch", "seq", hidden])],
        [helper.make_tensor_value_info("y", FLOAT, ["batch", "seq", hidden])],
        b.inits,
    )
    _write(graph, path)
    return {"path": path, "nodes": len(b.nodes), "blocks": blocks, "hidden": hidden,
            "weight_bytes": sum(len(t.raw_data) for t in b.inits),
            "seconds": round(time.perf_counter() - t0, 2)}


class _Exporter(Builder):
    """A Builder that writes constants the way torch's TorchScript exporter does: one
    ``Constant`` node per use (not shared initializers), and tensors under 1 KB embedded while
    the rest go to the external file (onnx's own ``size_threshold=1024``)."""

    def c(self, value, dtype=np.int64, like: str | None = None) -> str:
        """A constant; with ``like``, cast like that value, as the dynamo exporter writes every
        Python scalar (``CastLike(Constant, x)``)."""
        arr = np.array(value, dtype=dtype)
        out = self.node("Constant", [], value=onnx.numpy_helper.from_array(arr, self.name("c")))
        return self.node("CastLike", [out, like]) if like is not None else out

    def linear(self, x: str, name: str, shape: tuple[int, int]) -> str:
        """torch's ``linear`` as the unoptimized dynamo export writes it: the weight [out, in]
        transposed in the graph, the input flattened to 2-D for the MatMul and reshaped back."""
        w = self.node("Transpose", [self.weight(name, (shape[1], shape[0]))], perm=[1, 0])
        flat = self.node("Reshape", [x, self.node("Concat", [self.c([-1]), self.c([shape[0]])], axis=0)])
        y = self.node("MatMul", [flat, w])
        back = self.node("Concat", [self.dim(x, 0), self.dim(x, 1), self.c([shape[1]])], axis=0)
        return self.node("Reshape", [y, back])

    def weight(self, name: str, shape: tuple[int, ...], fill: float | None = None) -> str:
        if math.prod(shape) * 4 < 1024 or fill is not None:
            arr = (np.full(shape, fill, np.float32) if fill is not None
                   else (self.rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32))
            self.inits.append(onnx.numpy_helper.from_array(arr, name))
            return name
        return super().weight(name, shape)

    def dim(self, x: str, axis: int) -> str:
        """``x.size(axis)`` as a 1-D int64 tensor, as a SymInt is exported: Shape -> Gather ->
        Squeeze to a scalar (the symbol), then Reshape back to [1] where a shape is assembled."""
        g = self.node("Gather", [self.node("Shape", [x]), self.c([axis])], axis=0)
        sym = self.node("Squeeze", [g, self.c([0])])
        return self.node("Reshape", [sym, self.c([-1])])


def _rms_norm(b: _Exporter, x: str, name: str) -> str:
    """LlamaRMSNorm as exported: x * rsqrt(mean(x^2) + eps) * weight, in float32."""
    w = b.weight(name, (b.hidden,), fill=1.0)
    xf = b.node("Cast", [x], to=FLOAT)
    var = b.node("ReduceMean", [b.node("Pow", [xf, b.c(2.0, np.float32, like=xf)])], axes=[-1], keepdims=1)
    rs = b.node("Reciprocal", [b.node("Sqrt", [b.node("Add", [var, b.c(1e-6, np.float32, like=var)])])])
    return b.node("Mul", [w, b.node("Cast", [b.node("Mul", [xf, rs])], to=FLOAT)])


def _rotate_half(b: _Exporter, x: str) -> str:
    """cat((-x[..., d/2:], x[..., :d/2]), -1) with d/2 computed from the shape, as exported."""
    d = b.node("Squeeze", [b.node("Gather", [b.node("Shape", [x]), b.c([3])], axis=0), b.c([0])])
    half = b.node("Reshape", [b.node("Div", [d, b.c(2, like=d)]), b.c([-1])])
    x1 = b.node("Slice", [x, b.c([0]), half, b.c([3]), b.c([1])])
    x2 = b.node("Slice", [x, half, b.c([2**63 - 1]), b.c([3]), b.c([1])])
    return b.node("Concat", [b.node("Neg", [x2]), x1], axis=-1)


def _llm_layer(b: _Exporter, x: str, i: int, mask: str, cfg: dict) -> tuple[str, str, str]:
    h, nh, kvh, hd = b.hidden, cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    res = x
    x = _rms_norm(b, x, f"model.layers.{i}.input_layernorm.weight")
    bsz, q_len = b.dim(x, 0), b.dim(x, 1)
    heads = []
    for p, n in (("q", nh), ("k", kvh), ("v", kvh)):
        t = b.linear(x, f"model.layers.{i}.self_attn.{p}_proj.weight", (h, n * hd))
        shape = b.node("Concat", [b.dim(x, 0), b.dim(x, 1), b.c([n]), b.c([hd])], axis=0)
        heads.append(b.node("Transpose", [b.node("Reshape", [t, shape])], perm=[0, 2, 1, 3]))
    q, k, v = heads
    # Rotary embedding, recomputed in every layer as transformers 4.3x exports it: cos/sin caches
    # for the total length (past + new), indexed by position_ids.
    kv_len = b.node("Add", [b.dim(k, 2), b.node("Gather", [b.node("Shape", [f"past_key_values.{i}.key"]),
                                                           b.c([2])], axis=0)])
    t = b.node("Cast", [b.node("Range", [b.c(0), b.node("Squeeze", [kv_len, b.c([0])]), b.c(1)])], to=FLOAT)
    freqs = b.node("Mul", [b.node("Unsqueeze", [t, b.c([1])]),
                           b.node("Unsqueeze", [f"model.layers.{i}.self_attn.rotary_emb.inv_freq", b.c([0])])])
    emb = b.node("Concat", [freqs, freqs], axis=-1)
    cos = b.node("Unsqueeze", [b.node("Gather", [b.node("Cos", [emb]), "position_ids"], axis=0), b.c([1])])
    sin = b.node("Unsqueeze", [b.node("Gather", [b.node("Sin", [emb]), "position_ids"], axis=0), b.c([1])])
    b.inits.append(onnx.numpy_helper.from_array(
        (1.0 / 10000 ** (np.arange(0, hd, 2, dtype=np.float32) / hd)).astype(np.float32),
        f"model.layers.{i}.self_attn.rotary_emb.inv_freq"))
    q = b.node("Add", [b.node("Mul", [q, cos]), b.node("Mul", [_rotate_half(b, q), sin])])
    k = b.node("Add", [b.node("Mul", [k, cos]), b.node("Mul", [_rotate_half(b, k), sin])])
    # KV cache: past and new concatenated along the sequence axis; that is the present output.
    k = b.node("Concat", [f"past_key_values.{i}.key", k], axis=2)
    v = b.node("Concat", [f"past_key_values.{i}.value", v], axis=2)
    b.nodes[-2].output[0], b.nodes[-1].output[0] = f"present.{i}.key", f"present.{i}.value"
    k, v = f"present.{i}.key", f"present.{i}.value"
    # repeat_kv (grouped-query attention): [b, kvh, s, d] -> [b, kvh * n_rep, s, d]
    rep = []
    for t in (k, v):
        e = b.node("Unsqueeze", [t, b.c([2])])
        shp = b.node("Concat", [b.dim(t, 0), b.dim(t, 1), b.c([nh // kvh]), b.dim(t, 2), b.dim(t, 3)], axis=0)
        e = b.node("Expand", [e, shp])
        out_shape = b.node("Concat", [b.dim(t, 0), b.node("Mul", [b.dim(t, 1), b.c([nh // kvh])]), b.dim(t, 2),
                                      b.dim(t, 3)], axis=0)
        rep.append(b.node("Reshape", [e, out_shape]))
    k, v = rep
    # scaled_dot_product_attention as torchlib decomposes it: scale 1/sqrt(q.size(-1)) from the
    # shape, its square root applied to q and to k transposed.
    scale = b.node("Reciprocal", [b.node("Sqrt", [b.node("Cast", [b.node("Squeeze", [
        b.node("Gather", [b.node("Shape", [q]), b.c([-1])], axis=0), b.c([0])])], to=FLOAT)])])
    sq = b.node("Sqrt", [scale])
    qs = b.node("Mul", [q, b.node("CastLike", [sq, q])])
    ks = b.node("Mul", [b.node("Transpose", [k], perm=[0, 1, 3, 2]), b.node("CastLike", [sq, k])])
    scores = b.node("MatMul", [qs, ks])
    # causal_mask[:, :, :, : key_states.shape[-2]]: a Slice on every axis, as dynamo writes it
    m = mask
    for ax in range(3):
        m = b.node("Slice", [m, b.c([0]), b.c([2**63 - 1]), b.c([ax]), b.c([1])])
    m = b.node("Slice", [m, b.c([0]), b.dim(k, 2), b.c([3]), b.c([1])])
    probs = b.node("Cast", [b.node("Softmax", [b.node("Add", [scores, m])], axis=-1)], to=FLOAT)
    ctx = b.node("Transpose", [b.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = b.node("Reshape", [ctx, b.node("Concat", [bsz, q_len, b.c([h])], axis=0)])
    o = b.linear(ctx, f"model.layers.{i}.self_attn.o_proj.weight", (nh * hd, h))
    x = b.node("Add", [res, o])
    res = x
    x = _rms_norm(b, x, f"model.layers.{i}.post_attention_layernorm.weight")
    inter = cfg["intermediate"]
    gate = b.linear(x, f"model.layers.{i}.mlp.gate_proj.weight", (h, inter))
    up = b.linear(x, f"model.layers.{i}.mlp.up_proj.weight", (h, inter))
    act = b.node("Mul", [b.node("Mul", [gate, b.node("Sigmoid", [gate])]), up])  # SiLU(gate) * up
    down = b.linear(act, f"model.layers.{i}.mlp.down_proj.weight", (inter, h))
    return b.node("Add", [res, down]), k, v


def _causal_mask(b: _Exporter) -> str:
    """[batch, 1, seq, past + seq] additive mask from attention_mask[batch, past + seq], as
    transformers' _prepare_4d_causal_attention_mask exports: a causal triangle shifted by the past
    length, plus the padding of attention_mask, as large negatives."""
    seq = b.node("Squeeze", [b.dim("input_ids", 1), b.c([0])])
    total = b.node("Squeeze", [b.dim("attention_mask", 1), b.c([0])])
    past = b.node("Sub", [total, seq])
    rows = b.node("Unsqueeze", [b.node("Add", [b.node("Range", [b.c(0), seq, b.c(1)]), past]), b.c([1])])
    cols = b.node("Unsqueeze", [b.node("Range", [b.c(0), total, b.c(1)]), b.c([0])])
    neg = b.c(np.finfo(np.float32).min, np.float32)
    causal = b.node("Where", [b.node("LessOrEqual", [cols, rows]), b.c(0.0, np.float32), neg])
    causal = b.node("Unsqueeze", [causal, b.c([0, 1])])  # [1, 1, seq, total]
    pad = b.node("Cast", [b.node("Unsqueeze", [b.node("Cast", ["attention_mask"], to=FLOAT), b.c([1, 2])])],
                 to=TensorProto.BOOL)
    padm = b.node("Where", [pad, b.c(0.0, np.float32), neg])  # [batch, 1, 1, total]
    return b.node("Max", [b.node("Add", [causal, padm]), neg])  # clamp: -inf + -inf stays finite


def build_llm(path: str, *, layers: int = 64, hidden: int = 256, heads: int = 8, kv_heads: int = 4,
              intermediate: int = 688, vocab: int = 1000) -> dict:
    """Write a decoder-only transformer (Llama-shaped) as an exporter writes it, with KV-cache
    inputs and present outputs; every weight of 1 KB or more in one sparse external file."""
    t0 = time.perf_counter()
    base = os.path.basename(path)
    data_name = base.rsplit(".", 1)[0] + ".data"
    b = _Exporter(hidden, heads, data_name)
    cfg = {"heads": heads, "kv_heads": kv_heads, "head_dim": hidden // heads, "intermediate": intermediate}
    x = b.node("Gather", [b.weight("model.embed_tokens.weight", (vocab, hidden)), "input_ids"], axis=0)
    mask = _causal_mask(b)
    kv_dims = ["batch_size", kv_heads, "past_sequence_length", cfg["head_dim"]]
    pres_dims = ["batch_size", kv_heads, "past_sequence_length + sequence_length", cfg["head_dim"]]
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                            ["batch_size", "past_sequence_length + sequence_length"]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"])]
    outputs = []
    for i in range(layers):
        for kv in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kv}", FLOAT, kv_dims))
        x, _, _ = _llm_layer(b, x, i, mask, cfg)
        for kv in ("key", "value"):
            outputs.append(helper.make_tensor_value_info(f"present.{i}.{kv}", FLOAT, pres_dims))
    x = _rms_norm(b, x, "model.norm.weight")
    b.nodes.append(helper.make_node("MatMul", [x, b.weight("lm_head.weight.T", (hidden, vocab))], ["logits"],
                                    name="lm_head"))
    outputs.insert(0, helper.make_tensor_value_info("logits", FLOAT, ["batch_size", "sequence_length", vocab]))
    graph = helper.make_graph(b.nodes, "llm", inputs, outputs, b.inits)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(os.path.join(os.path.dirname(os.path.abspath(path)), data_name), "wb") as f:
        f.truncate(b.offset)  # sparse: zeros that take no disk blocks
    _write(graph, path)
    return {"path": path, "nodes": len(b.nodes), "layers": layers, "hidden": hidden, "weight_bytes": b.offset,
            "seconds": round(time.perf_counter() - t0, 2)}


def hidden_for_bytes(nodes: int, weight_bytes: int, heads: int = 2, vocab: int = 1000) -> int:
    """Hidden size whose weights total about ``weight_bytes`` for a model of ``nodes`` nodes."""
    blocks = max(1, round((nodes - 1) / nodes_per_block()))
    # per block: 4 h*h + 2 h*4h matrices + small vectors; plus the embedding
    h = int(math.sqrt(weight_bytes / 4 / (12 * blocks)))
    return max(heads, h - h % heads)


def build_openvino(onnx_path: str, xml_path: str) -> dict:
    """Convert an ONNX bench model to OpenVINO IR with OpenVINO's own converter."""
    import openvino as ov

    t0 = time.perf_counter()
    m = ov.convert_model(onnx_path)
    ov.save_model(m, xml_path, compress_to_fp16=False)
    return {"path": xml_path, "layers": len(m.get_ops()), "seconds": round(time.perf_counter() - t0, 2)}


def scenarios(scale: float) -> dict[str, dict]:
    """Name -> build() keyword arguments. ``scale`` shrinks node counts and weight bytes."""
    big = max(200, int(100_000 * scale))
    mid = max(150, int(5_000 * scale))
    out = {
        "big100k": {"nodes": big, "hidden": 16},
        "dag100k": {"nodes": big, "hidden": 16, "dag": True},
        "w0": {"nodes": mid, "hidden": 4, "external": True},
        "w200m": {"nodes": mid, "hidden": hidden_for_bytes(mid, int(200e6 * scale)), "external": True},
        "w2g": {"nodes": mid, "hidden": hidden_for_bytes(mid, int(2e9 * scale)), "external": True},
        "ov_src": {"nodes": max(200, int(30_000 * scale)), "hidden": 16},
        # 64 decoder layers (as Qwen2.5-32B) of ~520 nodes each: ~33k nodes, 188 MB external weights
        "llm64": {"llm": True, "layers": max(1, round(64 * scale))},
    }
    for k in range(6):
        out[f"ci{k}"] = {"nodes": max(150, int(3_000 * scale)), "hidden": 32}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "out"))
    ap.add_argument("--scale", type=float, default=1.0, help="shrink every scenario (0.01 for a smoke test)")
    ap.add_argument("--only", nargs="*", help="scenario names to build (default: all)")
    ap.add_argument("--force", action="store_true", help="rebuild models that already exist")
    args = ap.parse_args(argv)
    for name, kw in scenarios(args.scale).items():
        if args.only and name not in args.only and not (name == "ov_src" and "ov" in args.only):
            continue
        path = os.path.join(args.out, f"{name}.onnx")
        if args.force or not os.path.exists(path):
            kw = dict(kw)
            if kw.pop("llm", False):
                print(build_llm(path, **kw), flush=True)
            else:
                print(build_dag(path, **kw) if kw.pop("dag", False) else build(path, **kw), flush=True)
        if name == "ov_src":
            xml = os.path.join(args.out, "ov_large.xml")
            if args.force or not os.path.exists(xml):
                print(build_openvino(path, xml), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
