"""MatMul, Gemm and the contrib attention ops."""

from __future__ import annotations

from graphlint.analysis.shapes.facts import SDim, SShape
from graphlint.analysis.shapes.handlers.elementwise import broadcast
from graphlint.analysis.shapes.handlers.registry import ShapePass, handles
from graphlint.analysis.symbolic import ONE, Poly
from graphlint.ir import ONNX_DOMAIN, Node


@handles("MatMul", "MatMulInteger", "FusedMatMul")
def _matmul(node: Node, p: ShapePass) -> list[SShape]:
    a, b = node.input(0), node.input(1)
    sa, sb = p.shape(a), p.shape(b)
    if sa is None or sb is None or not sa or not sb:
        return [None]
    if node.op_type == "FusedMatMul":
        if node.attr("transA", 0) and len(sa) >= 2:
            sa = (*sa[:-2], sa[-1], sa[-2])
        if node.attr("transB", 0) and len(sb) >= 2:
            sb = (*sb[:-2], sb[-1], sb[-2])
    a2 = sa if len(sa) >= 2 else (ONE, sa[0])
    b2 = sb if len(sb) >= 2 else (sb[0], ONE)
    p.agree(node, a2[-1], b2[-2], a, b, -1, False)
    batch = broadcast(p, node, [a, b], [a2[:-2], b2[:-2]]) or ()
    out = (*batch, a2[-2], b2[-1])
    if len(sa) == 1:
        out = (*out[:-2], out[-1])
    if len(sb) == 1:
        out = out[:-1]
    return [tuple(out)]


@handles("Gemm")
def _gemm(node: Node, p: ShapePass) -> list[SShape]:
    sa, sb = p.shape(node.input(0)), p.shape(node.input(1))
    if sa is None or sb is None or len(sa) != 2 or len(sb) != 2:
        return [None]
    m, k = (sa[1], sa[0]) if node.attr("transA", 0) else sa
    k2, n = (sb[1], sb[0]) if node.attr("transB", 0) else sb
    p.agree(node, k, k2, node.input(0), node.input(1), None, False)
    return [(m, n)]



@handles("RotaryEmbedding")
def _rotary(node: Node, p: ShapePass) -> list[SShape]:
    """ONNX RotaryEmbedding-23: without position_ids, cos_cache and sin_cache are (batch, sequence,
    rotary_dim/2) of x itself; the spec does not broadcast them (a cache built for batch 1 fails
    at batch 2 in onnxruntime)."""
    x = p.shape(node.input(0))
    if node.domain != ONNX_DOMAIN or x is None or len(x) not in (3, 4):
        return [x]
    if node.input(3) is None:
        batch, seq = x[0], x[2] if len(x) == 4 else x[1]
        for i in (1, 2):
            cache = p.shape(node.input(i))
            if cache is not None and len(cache) == 3:
                p.agree(node, batch, cache[0], node.input(0), node.input(i), 0, broadcast=False)
                p.agree(node, seq, cache[1], node.input(0), node.input(i), 1, broadcast=False)
    return [x]


@handles("ScaledDotProductAttention")
def _sdpa(node: Node, p: ShapePass) -> list[SShape]:
    """OpenVINO's ScaledDotProductAttention-13 (IR only): query [N..., L, E], value [N..., S, Ev]
    -> [N..., L, Ev]. Only where query and value have the same batch dims (else they broadcast,
    which this leaves to the ports)."""
    q, v = p.shape(node.input(0)), p.shape(node.input(2))
    if q is None or v is None or len(q) < 2 or len(q) != len(v) or q[:-2] != v[:-2]:
        return [None]
    return [(*q[:-1], v[-1])]


@handles("Attention")
def _attention(node: Node, p: ShapePass) -> list[SShape]:
    s, w = p.shape(node.input(0)), p.shape(node.input(1))
    if s is None or len(s) != 3:
        return [None]
    sizes = node.attr("qkv_hidden_sizes")
    if sizes:
        hidden: SDim = Poly.const(sizes[2])
    elif w is not None and len(w) == 2 and w[1] is not None:
        hidden = w[1].floordiv(3)
    else:
        hidden = None
    return [(s[0], s[1], hidden)]


@handles("MultiHeadAttention")
def _mha(node: Node, p: ShapePass) -> list[SShape]:
    q, v = p.shape(node.input(0)), p.shape(node.input(2))
    if q is None or len(q) != 3:
        return [None]
    hidden = v[2] if v is not None and len(v) == 3 else q[2]
    return [(q[0], q[1], hidden)]


@handles("EmbedLayerNormalization")
def _embed_ln(node: Node, p: ShapePass) -> list[SShape]:
    ids, emb = p.shape(node.input(0)), p.shape(node.input(2))
    if ids is None or emb is None or len(ids) != 2:
        return [None]
    return [(ids[0], ids[1], emb[-1]), (ids[0],)]


