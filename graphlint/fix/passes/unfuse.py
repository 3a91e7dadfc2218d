"""Un-fuse com.microsoft contrib ops into standard ONNX subgraphs at the model's opset.

The ops and their meaning are those of onnxruntime's contrib operator docs (ContribOperators.md);
the shapes covered are the ones ``onnxruntime.transformers.optimizer`` emits for BERT/GPT-style
encoders. A node in a form not covered (past state, rotary, packed QKV, extra outputs in use)
is left alone and reported as skipped, never half-rewritten.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from graphlint.fix import graphutil as gu
from graphlint.fix.base import FixContext, Pass, PassResult, register_pass
from graphlint.fix.graphutil import MS, Builder

_NP = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16,
       onnx.TensorProto.DOUBLE: np.float64, onnx.TensorProto.BFLOAT16: np.float32}


class _Info:
    def __init__(self, model: onnx.ModelProto) -> None:
        inferred = gu.infer(model)
        self.vi = gu.value_info(inferred)
        self.graph = model.graph
        self.users = gu.consumers(model.graph)
        self.outputs = {o.name for o in model.graph.output}
        self.producers = gu.producers(model.graph)

    def rank(self, name: str) -> int | None:
        shp = gu.shape_of(self.vi.get(name))
        if shp is not None:
            return len(shp)
        p = self.producers.get(name)
        if p is not None and p.op_type == "EmbedLayerNormalization" and len(p.output) > 1 and p.output[1] == name:
            return 1  # mask_index: one valid length per batch row
        return None

    def ftype(self, name: str) -> type:
        vi = self.vi.get(name)
        if vi is not None and vi.type.HasField("tensor_type"):
            return _NP.get(vi.type.tensor_type.elem_type, np.float32)
        v = gu.const_value(self.graph, name)
        return v.dtype.type if v is not None and v.dtype.kind == "f" else np.float32

    def used(self, name: str) -> bool:
        return bool(name) and (name in self.users or name in self.outputs)


def _in(node: onnx.NodeProto, i: int) -> str | None:
    return node.input[i] if len(node.input) > i and node.input[i] else None


def _gelu_erf(b: Builder, x: str, out: str, ft: type) -> None:
    inner = b.op("Erf", [b.op("Div", [x, b.const(math.sqrt(2.0), ft, "sqrt2")])])
    half_x = b.op("Mul", [x, b.const(0.5, ft, "half")])
    b.op("Mul", [half_x, b.op("Add", [inner, b.const(1.0, ft, "one")])], out=[out])


def _gelu_tanh(b: Builder, x: str, out: str, ft: type) -> None:
    cube = b.op("Mul", [b.op("Mul", [x, x]), x])
    inner = b.op("Add", [x, b.op("Mul", [cube, b.const(0.044715, ft, "k")])])
    t = b.op("Tanh", [b.op("Mul", [inner, b.const(math.sqrt(2.0 / math.pi), ft, "sqrt_2_pi")])])
    half_x = b.op("Mul", [x, b.const(0.5, ft, "half")])
    b.op("Mul", [half_x, b.op("Add", [t, b.const(1.0, ft, "one")])], out=[out])


def _biased(node, b) -> str:
    """Input 0 plus the optional bias input 1 (BiasGelu, FastGelu with bias)."""
    return b.op("Add", [node.input[0], node.input[1]]) if _in(node, 1) else node.input[0]


def _gelu(node, b, info) -> str | None:  # com.microsoft Gelu and BiasGelu: exact (erf) GELU
    _gelu_erf(b, _biased(node, b), node.output[0], info.ftype(node.input[0]))
    return None


def _fast_gelu(node, b, info) -> str | None:
    _gelu_tanh(b, _biased(node, b), node.output[0], info.ftype(node.input[0]))
    return None


def _quick_gelu(node, b, info) -> str | None:
    alpha = gu.attr(node, "alpha", 1.702)
    ft = info.ftype(node.input[0])
    s = b.op("Sigmoid", [b.op("Mul", [node.input[0], b.const(alpha, ft, "alpha")])])
    b.op("Mul", [node.input[0], s], out=[node.output[0]])
    return None


def _skip_ln(node, b, info, rms: bool) -> str | None:
    # SkipLayerNormalization(input, skip, gamma, beta?, bias?) / Skip*Simplified*(input, skip, gamma, bias?)
    outs = list(node.output) + [""] * 4
    if info.used(outs[1]) or info.used(outs[2]):
        return "mean / inv_std_var outputs are used"
    x = b.op("Add", [node.input[0], node.input[1]])
    bias = _in(node, 3) if rms else _in(node, 4)
    if bias:
        x = b.op("Add", [x, bias])
    if info.used(outs[3]):
        x = b.op("Identity", [x], out=[outs[3]])
    beta = None if rms else _in(node, 3)
    b.layer_norm(x, node.input[2], beta, gu.attr(node, "epsilon", 1e-12), outs[0], rms=rms)
    return None


def _simplified_ln(node, b, info) -> str | None:
    if len(node.output) > 1 and info.used(node.output[1]):
        return "inv_std_var output is used"
    if gu.attr(node, "axis", -1) != -1:
        return "axis other than -1"
    b.layer_norm(node.input[0], node.input[1], None, gu.attr(node, "epsilon", 1e-5), node.output[0], rms=True)
    return None


def _embed_ln(node, b, info) -> str | None:
    # EmbedLayerNormalization(input_ids, segment_ids?, word_emb, pos_emb, segment_emb?, gamma, beta, mask?,
    #                         position_ids?) -> output, mask_index, embedding_sum?
    ids, seg_ids, word, pos, seg_emb, gamma, beta = (_in(node, i) for i in range(7))
    mask, pos_ids = _in(node, 7), _in(node, 8)
    outs = list(node.output) + [""] * 3
    x = b.op("Gather", [word, ids], axis=0)
    if pos_ids:
        p = b.op("Gather", [pos, pos_ids], axis=0)
    else:
        seq = b.op("Gather", [b.op("Shape", [ids]), b.const(1, np.int64, "one_i")], axis=0)
        rng = b.op("Range", [b.const(0, np.int64, "zero_i"), seq, b.const(1, np.int64, "step")])
        p = b.op("Gather", [pos, rng], axis=0)
    x = b.op("Add", [x, p])
    if seg_ids and seg_emb:
        x = b.op("Add", [x, b.op("Gather", [seg_emb, seg_ids], axis=0)])
    if info.used(outs[2]):
        x = b.op("Identity", [x], out=[outs[2]])
    b.layer_norm(x, gamma, beta, gu.attr(node, "epsilon", 1e-12), outs[0])
    if info.used(outs[1]):
        if mask:
            b.op("Cast", [b.reduce("ReduceSum", b.op("Cast", [mask], to=onnx.TensorProto.INT64), [1], keepdims=0)],
                 out=[outs[1]], to=onnx.TensorProto.INT32)
        else:
            batch = b.op("Gather", [b.op("Shape", [ids]), b.const([0], np.int64, "zero_v")], axis=0)
            b.op("ConstantOfShape", [batch], out=[outs[1]],
                 value=onnx.helper.make_tensor("v", onnx.TensorProto.INT32, [1], [0]))
    return None


def _mask_bias(b: Builder, mask: str, info: _Info, ft: type, filt: float, keys: str) -> str | None:
    """Additive attention bias of shape [B,1,1,L] or [B,1,S,L] from an ORT mask input, or None if unsupported."""
    rank = info.rank(mask)
    if rank == 1:  # mask_index: valid key length per batch (right padding)
        seq = b.op("Gather", [b.op("Shape", [keys]), b.const(1, np.int64, "one_i")], axis=0)
        pos = b.op("Range", [b.const(0, np.int64, "zero_i"), seq, b.const(1, np.int64, "step")])
        end = b.unsqueeze(b.op("Cast", [mask], to=onnx.TensorProto.INT64), [1])
        keep = b.op("Less", [b.unsqueeze(pos, [0]), end])
        rank_axes = [1, 2]
    elif rank in (2, 3):
        keep = b.op("Greater", [b.op("Cast", [mask], to=onnx.TensorProto.FLOAT), b.const(0.0, np.float32, "zero")])
        rank_axes = [1, 2] if rank == 2 else [1]
    else:
        return None
    drop = b.op("Sub", [b.const(1.0, ft, "one"), b.op("Cast", [keep], to=_onnx_type(ft))])
    return b.unsqueeze(b.op("Mul", [drop, b.const(filt, ft, "filter")]), rank_axes)


def _onnx_type(ft: type) -> int:
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(ft))


def _causal_bias(b: Builder, q_heads: str, ft: type, filt: float) -> str:
    seq = b.op("Gather", [b.op("Shape", [q_heads]), b.const(2, np.int64, "two_i")], axis=0)
    pos = b.op("Range", [b.const(0, np.int64, "zero_i"), seq, b.const(1, np.int64, "step")])
    future = b.op("Greater", [b.unsqueeze(pos, [0]), b.unsqueeze(pos, [1])])
    return b.op("Mul", [b.op("Cast", [future], to=_onnx_type(ft)), b.const(filt, ft, "filter")])


def _heads(b: Builder, x: str, n: int, size: int, perm: list[int]) -> str:
    r = b.op("Reshape", [x, b.const([0, 0, n, size // n], np.int64, "shape")])
    return b.op("Transpose", [r], perm=perm)


def _sdpa(b: Builder, q: str, k: str, v: str, n: int, hq: int, hv: int, scale: float | None,
          bias: list[str], out: str, ft: type) -> None:
    qh = _heads(b, q, n, hq, [0, 2, 1, 3])
    kh = _heads(b, k, n, hq, [0, 2, 3, 1])
    vh = _heads(b, v, n, hv, [0, 2, 1, 3])
    s = scale if scale else 1.0 / math.sqrt(hq // n)
    scores = b.op("Mul", [b.op("MatMul", [qh, kh]), b.const(s, ft, "scale")])
    for extra in bias:
        scores = b.op("Add", [scores, extra])
    probs = b.op("Softmax", [scores], axis=3)
    ctx = b.op("Transpose", [b.op("MatMul", [probs, vh])], perm=[0, 2, 1, 3])
    b.op("Reshape", [ctx, b.const([0, 0, hv], np.int64, "shape")], out=[out])


def _attention(node, b, info) -> str | None:
    # Attention(input, weights, bias?, mask_index?, past?, attention_bias?, past_sequence_length?)
    if any(_in(node, i) for i in (4, 5, 6)) or (len(node.output) > 1 and info.used(node.output[1])):
        return "past state / attention_bias inputs are not covered"
    if gu.attr(node, "do_rotary", 0):
        return "rotary embedding is not covered"
    w = gu.const_value(info.graph, node.input[1])
    if w is None or w.ndim != 2:
        return "weights are not a constant 2-D tensor"
    n = gu.attr(node, "num_heads")
    sizes = list(gu.attr(node, "qkv_hidden_sizes", []) or [w.shape[1] // 3] * 3)
    ft = info.ftype(node.input[0])
    filt = float(gu.attr(node, "mask_filter_value", -10000.0))
    qkv = b.op("MatMul", [node.input[0], node.input[1]])
    if _in(node, 2):
        qkv = b.op("Add", [qkv, node.input[2]])
    q, k, v = b.split(qkv, sizes, axis=2)
    extra = []
    if _in(node, 3):
        m = _mask_bias(b, node.input[3], info, ft, filt, node.input[0])
        if m is None:
            return "mask_index form (rank) not covered"
        extra.append(m)
    if gu.attr(node, "unidirectional", 0):
        extra.append(_causal_bias(b, _heads(b, q, n, sizes[0], [0, 2, 1, 3]), ft, filt))
    _sdpa(b, q, k, v, n, sizes[0], sizes[2], gu.attr(node, "scale"), extra, node.output[0], ft)
    return None


def _mha(node, b, info) -> str | None:
    # MultiHeadAttention(query, key, value, bias?, key_padding_mask?, attention_bias?, past_key?, past_value?)
    if not (_in(node, 1) and _in(node, 2)) or any(_in(node, i) for i in (5, 6, 7)):
        return "packed QKV / past state / attention_bias forms are not covered"
    if any(info.used(o) for o in node.output[1:]):
        return "present outputs are used"
    hq, hv = _mha_sizes(node, info)
    if hq is None or hv is None:
        return "query/key/value hidden sizes unknown (not 3-D with a static last dim, no constant bias)"
    n = gu.attr(node, "num_heads")
    ft = info.ftype(node.input[0])
    filt = float(gu.attr(node, "mask_filter_value", -10000.0))
    q, k, v = node.input[0], node.input[1], node.input[2]
    if _in(node, 3):
        bq, bk, bv = b.split(node.input[3], [hq, hq, hv], axis=0)
        q, k, v = b.op("Add", [q, bq]), b.op("Add", [k, bk]), b.op("Add", [v, bv])
    extra = []
    if _in(node, 4):
        m = _mask_bias(b, node.input[4], info, ft, filt, node.input[1])
        if m is None:
            return "key_padding_mask form not covered"
        extra.append(m)
    if gu.attr(node, "unidirectional", 0):
        extra.append(_causal_bias(b, _heads(b, q, n, hq, [0, 2, 1, 3]), ft, filt))
    _sdpa(b, q, k, v, n, hq, hv, gu.attr(node, "scale"), extra, node.output[0], ft)
    return None


def _mha_sizes(node, info) -> tuple[int | None, int | None]:
    """Hidden sizes of query and value: from inferred shapes, else the constant bias or projection weights."""
    sizes: list[int | None] = []
    for i in (0, 2):
        shp = gu.shape_of(info.vi.get(node.input[i]))
        d = shp[2] if shp is not None and len(shp) == 3 and isinstance(shp[2], int) else None
        p = info.producers.get(node.input[i])
        if d is None and p is not None and p.op_type == "MatMul":
            w = gu.const_value(info.graph, p.input[1])
            d = int(w.shape[-1]) if w is not None and w.ndim == 2 else None
        sizes.append(d)
    if None in sizes and _in(node, 3):
        bias = gu.const_value(info.graph, node.input[3])
        if bias is not None and bias.ndim == 1 and bias.shape[0] % 3 == 0:
            sizes = [bias.shape[0] // 3] * 2
    return sizes[0], sizes[1]


# (domain, op_type) -> rewriter; SimplifiedLayerNormalization is registered by ORT in the ONNX domain.
UNFUSERS: dict[tuple[str, str], Callable[[onnx.NodeProto, Builder, _Info], str | None]] = {
    (MS, "Gelu"): _gelu,
    (MS, "BiasGelu"): _gelu,
    (MS, "FastGelu"): _fast_gelu,
    (MS, "QuickGelu"): _quick_gelu,
    (MS, "SkipLayerNormalization"): lambda n, b, i: _skip_ln(n, b, i, rms=False),
    (MS, "SkipSimplifiedLayerNormalization"): lambda n, b, i: _skip_ln(n, b, i, rms=True),
    ("", "SimplifiedLayerNormalization"): _simplified_ln,
    (MS, "SimplifiedLayerNormalization"): _simplified_ln,
    (MS, "EmbedLayerNormalization"): _embed_ln,
    (MS, "Attention"): _attention,
    (MS, "MultiHeadAttention"): _mha,
}


def _key(node: onnx.NodeProto) -> tuple[str, str]:
    return (MS if node.domain == MS else "", node.op_type)


@register_pass
class UnfuseContrib(Pass):
    """Replace com.microsoft fused ops with the equivalent standard ONNX subgraph."""

    name = "unfuse-contrib"

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        changes, skipped = [], []
        model, bumped = _opset_for_layernorm(model, ctx)
        if bumped:
            changes.append(bumped)
        g = model.graph
        info = _Info(model)
        wanted: list[onnx.NodeProto] = []
        seen: set[int] = set()
        for req in requests or [{}]:
            ops = {req["op_type"]} if req.get("op_type") else None
            for n in gu.select(g, req, ops):
                if _key(n) in UNFUSERS and id(n) not in seen:
                    seen.add(id(n))
                    wanted.append(n)
        namer = gu.Namer(model)
        for node in wanted:
            b = Builder(model, gu.label(node), namer)
            why = UNFUSERS[_key(node)](node, b, info)
            if why:
                skipped.append(f"{gu.label(node)!r} ({node.op_type}): {why}")
                continue
            b.replace(g, node)
            changes.append(f"{gu.label(node)!r}: {node.op_type} -> standard ONNX subgraph")
        if changes:
            gu.topo_sort(g)
            if not any(n.domain == MS for n in g.node) and not any(
                    f.domain == MS for f in model.functions):
                keep = [o for o in model.opset_import if o.domain != MS]
                del model.opset_import[:]
                model.opset_import.extend(keep)
        if bumped and len(changes) == 1:  # nothing un-fused after all: keep the model as it was
            return PassResult(model, False, skipped=skipped)
        return PassResult(model, bool(changes), changes, skipped=skipped)


_LN_OPS = {"SkipLayerNormalization", "EmbedLayerNormalization", "SkipSimplifiedLayerNormalization",
           "SimplifiedLayerNormalization"}


def _opset_for_layernorm(model: onnx.ModelProto, ctx: FixContext) -> tuple[onnx.ModelProto, str]:
    """Below opset 17 a LayerNorm can only be written decomposed, whose fp16 statistics overflow on
    TensorRT/OpenVINO GPU; move the model to opset 17 first when the target takes it."""
    cur = gu.opset(model)
    if cur >= 17 or not any(n.op_type in _LN_OPS and n.op_type != "SimplifiedLayerNormalization"
                            for n in model.graph.node):
        return model, ""
    rng = ctx.target.opset_range("ai.onnx") if ctx.target is not None else None
    if rng is not None and rng[1] < 17:
        return model, ""
    try:
        new = onnx.version_converter.convert_version(model, 17)
    except Exception:  # no adapter for some op: un-fuse at the current opset (decomposed)
        return model, ""
    return new, f"opset {cur} -> 17 first, so LayerNorms un-fuse to LayerNormalization-17 (fp32 statistics)"
