"""Build the benchmark models quickly with onnx.helper (no torch, no engine).

Every model is a stack of transformer-like blocks over ``input_ids[batch, seq]``:
Gather embedding, LayerNormalization (or its 9-node decomposition on odd blocks), Q/K/V
MatMul+Add, a dynamic Shape->Gather->Unsqueeze->Concat target shape for Reshape,
Transpose, MatMul/Div/Add(mask)/Softmax/MatMul attention, output projection, an erf-GELU
MLP and residual Adds. Batch and sequence dims are symbolic. A few blocks route their
output through an ``If`` whose branches hold small subgraphs using outer-scope values.

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
            print(build_dag(path, **kw) if kw.pop("dag", False) else build(path, **kw), flush=True)
        if name == "ov_src":
            xml = os.path.join(args.out, "ov_large.xml")
            if args.force or not os.path.exists(xml):
                print(build_openvino(path, xml), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
