"""Re-fuse decomposed normalizations into the standard op engines keep in fp32 (LayerNormalization-17)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from graphlint.fix import graphutil as gu
from graphlint.fix.base import FixContext, Pass, PassResult, register_pass


def _only_user(users: dict[str, list[onnx.NodeProto]], name: str, op: str) -> onnx.NodeProto | None:
    us = users.get(name, [])
    return us[0] if len(us) == 1 and us[0].op_type == op and gu.is_default(us[0].domain) else None


def _axes(g: onnx.GraphProto, node: onnx.NodeProto) -> list[int] | None:
    axes = gu.attr(node, "axes")
    if axes is None and len(node.input) > 1 and node.input[1]:
        v = gu.const_value(g, node.input[1])
        axes = None if v is None else [int(a) for a in v.reshape(-1)]
    return list(axes) if axes is not None else None


def _other_const(g: onnx.GraphProto, node: onnx.NodeProto, x: str) -> str | None:
    """The constant operand of a binary node whose other operand is ``x`` (either order)."""
    a, b = node.input[0], node.input[1]
    other = b if a == x else a if b == x else None
    return other if other is not None and gu.const_value(g, other) is not None else None


def match_layernorm(g: onnx.GraphProto, mean: onnx.NodeProto, users, rank_of) -> dict[str, Any] | None:
    """ReduceMean -> Sub -> (Pow 2 | Mul self) -> ReduceMean -> Add eps -> Sqrt -> Div [-> Mul g] [-> Add b]."""
    if mean.op_type != "ReduceMean" or not gu.is_default(mean.domain):
        return None
    x = mean.input[0]
    axes = _axes(g, mean)
    rank = rank_of(x)
    if axes is None or rank is None or gu.attr(mean, "keepdims", 1) != 1:
        return None
    axes = sorted(a + rank if a < 0 else a for a in axes)
    if axes != list(range(axes[0], rank)):
        return None  # LayerNormalization normalizes a suffix of the axes
    sub = next((u for u in users.get(mean.output[0], []) if u.op_type == "Sub" and u.input[0] == x
                and u.input[1] == mean.output[0]), None)
    if sub is None:
        return None
    d = sub.output[0]
    sq = next((u for u in users.get(d, []) if (u.op_type == "Pow" and u.input[0] == d
              and np.allclose(gu.const_value(g, u.input[1]) if gu.const_value(g, u.input[1]) is not None else 0, 2))
              or (u.op_type == "Mul" and u.input[0] == d and u.input[1] == d)), None)
    div = next((u for u in users.get(d, []) if u.op_type == "Div" and u.input[0] == d), None)
    if sq is None or div is None or len(users.get(d, [])) != 2:
        return None
    var = _only_user(users, sq.output[0], "ReduceMean")
    if var is None or _axes(g, var) is None:
        return None
    add = _only_user(users, var.output[0], "Add")
    eps = gu.const_value(g, add.input[1]) if add is not None else None
    sqrt = _only_user(users, add.output[0], "Sqrt") if add is not None else None
    if eps is None or eps.size != 1 or sqrt is None or div.input[1] != sqrt.output[0]:
        return None
    nodes, out = [mean, sub, sq, var, add, sqrt, div], div.output[0]
    gamma = beta = None
    mul = _only_user(users, out, "Mul")
    gamma = _other_const(g, mul, out) if mul is not None else None
    if gamma is not None:
        out = mul.output[0]
        nodes.append(mul)
        badd = _only_user(users, out, "Add")
        beta = _other_const(g, badd, out) if badd is not None else None
        if beta is not None:
            out = badd.output[0]
            nodes.append(badd)
    return {"x": x, "axis": axes[0], "epsilon": float(eps.reshape(-1)[0]), "gamma": gamma, "beta": beta,
            "out": out, "nodes": nodes}


@register_pass
class FuseLayerNorm(Pass):
    """Replace a decomposed LayerNorm with LayerNormalization-17 (needs opset >= 17)."""

    name = "fuse-layernorm"
    after = ("opset-upgrade", "unfuse-contrib", "fold-constants")

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        bumped, cur = "", gu.opset(model)
        if cur < 17:
            rng = ctx.target.opset_range("ai.onnx") if ctx.target is not None else None
            try:
                if rng is not None and rng[1] < 17:
                    raise ValueError("target opset too old")
                model = onnx.version_converter.convert_version(model, 17)
                bumped = f"opset {cur} -> 17 first (LayerNormalization-17)"
            except Exception:
                return PassResult(model, False, skipped=["LayerNormalization needs opset 17; the model "
                                                         "could not be converted (add opset-upgrade)"])
        g = model.graph
        vi = gu.value_info(gu.infer(model))

        def rank_of(name: str) -> int | None:
            shp = gu.shape_of(vi.get(name))
            return len(shp) if shp is not None else None

        named: set[str] = set()
        for r in requests:
            v = r.get("nodes") or r.get("node") or []
            named.update([v] if isinstance(v, str) else v)
        users = gu.consumers(g)
        outputs = {o.name for o in g.output}
        namer = gu.Namer(model)
        changes: list[str] = []
        for mean in [n for n in g.node if n.op_type == "ReduceMean"]:
            if named and gu.label(mean) not in named:
                continue
            m = match_layernorm(g, mean, users, rank_of)
            if m is None or any(o in outputs for n in m["nodes"][:-1] for o in n.output):
                continue
            gamma, beta = m["gamma"], m["beta"]
            if gamma is None or gu.const_value(g, gamma).size == 1:
                shp = gu.shape_of(vi.get(m["x"]))
                tail = shp[m["axis"]:] if shp is not None else None
                if tail is None or not all(isinstance(d, int) for d in tail):
                    continue
                base = 1.0 if gamma is None else float(gu.const_value(g, gamma).reshape(-1)[0])
                gamma = namer(f"{gu.label(mean)}/gamma")
                g.initializer.append(numpy_helper.from_array(np.full(tail, base, np.float32), gamma))
            ln = helper.make_node("LayerNormalization", [m["x"], gamma] + ([beta] if beta else []), [m["out"]],
                                  name=namer(f"{gu.label(mean)}/LayerNormalization"), axis=m["axis"],
                                  epsilon=m["epsilon"])
            idx = gu.index_of(g, m["nodes"][-1])
            g.node.insert(idx + 1, ln)
            for n in m["nodes"]:
                gu.remove_node(g, n)
            users = gu.consumers(g)
            changes.append(f"{gu.label(mean)!r}: {len(m['nodes'])} nodes -> LayerNormalization(axis={m['axis']}, "
                           f"epsilon={m['epsilon']:g})")
        if not changes:
            return PassResult(model, False)  # (drops the opset bump too: the input model is untouched)
        gu.clear_value_info(model)
        return PassResult(model, True, ([bumped] if bumped else []) + changes)


def _remove_if_dead(g: onnx.GraphProto, candidates: list[onnx.NodeProto]) -> int:
    """Remove the candidate nodes nothing reads any more (repeatedly); return how many."""
    outputs = {o.name for o in g.output}
    removed, changed = 0, True
    while changed:
        changed = False
        users = gu.consumers(g)
        for n in list(candidates):
            if not any(o in users or o in outputs for o in n.output if o):
                gu.remove_node(g, n)
                candidates.remove(n)
                removed += 1
                changed = True
    return removed


def _is_const(g: onnx.GraphProto, name: str, value: float, tol: float = 1e-4) -> bool:
    v = gu.const_value(g, name)
    return v is not None and v.size == 1 and abs(float(v.reshape(-1)[0]) - value) <= tol * max(1.0, abs(value))


def _cube(g: onnx.GraphProto, producers, name: str, x: str) -> list[onnx.NodeProto] | None:
    """The nodes computing x^3 as Pow(x, 3) or x * (x * x) in any order, or None."""
    n = producers.get(name)
    if n is None:
        return None
    if n.op_type == "Pow" and n.input[0] == x and _is_const(g, n.input[1], 3):
        return [n]
    if n.op_type == "Mul" and x in n.input:
        other = n.input[1] if n.input[0] == x else n.input[0]
        sq = producers.get(other)
        if sq is not None and sq.op_type == "Mul" and list(sq.input) == [x, x]:
            return [sq, n]
    return None


def match_tanh_gelu(g: onnx.GraphProto, tanh: onnx.NodeProto, users, producers) -> tuple[str, str, list] | None:
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) in the orders exporters write it."""
    import math

    scale = producers.get(tanh.input[0])
    if scale is None or scale.op_type != "Mul":
        return None
    inner = next((i for i in scale.input if not _is_const(g, i, math.sqrt(2 / math.pi))), None)
    add = producers.get(inner or "")
    if add is None or add.op_type != "Add":
        return None
    for x, other in ((add.input[0], add.input[1]), (add.input[1], add.input[0])):
        k = producers.get(other)
        if k is None or k.op_type != "Mul":
            continue
        if not any(_is_const(g, i, 0.044715) for i in k.input):
            continue
        cubic_name = next((i for i in k.input if not _is_const(g, i, 0.044715)), None)
        cube = _cube(g, producers, cubic_name or "", x)
        if cube is not None:
            break
    else:
        return None
    one = _only_user(users, tanh.output[0], "Add")
    if one is None or not any(_is_const(g, i, 1.0) for i in one.input):
        return None
    m1 = _only_user(users, one.output[0], "Mul")
    if m1 is None:
        return None
    other = m1.input[1] if m1.input[0] == one.output[0] else m1.input[0]
    half = producers.get(other)
    nodes = [*cube, k, add, scale, tanh, one, m1]
    if half is not None and half.op_type == "Mul" and x in half.input and any(_is_const(g, i, 0.5) for i in half.input):
        return x, m1.output[0], [*nodes, half]  # (x * 0.5) * (1 + t)
    if other == x:
        m2 = _only_user(users, m1.output[0], "Mul")  # (x * (1 + t)) * 0.5
        if m2 is not None and any(_is_const(g, i, 0.5) for i in m2.input):
            return x, m2.output[0], [*nodes, m2]
    if _is_const(g, other, 0.5):
        m2 = _only_user(users, m1.output[0], "Mul")  # ((1 + t) * 0.5) * x
        if m2 is not None and x in m2.input:
            return x, m2.output[0], [*nodes, m2]
    return None


@register_pass
class FuseGelu(Pass):
    """Replace a tanh-approximation GELU subgraph with Gelu-20(approximate='tanh') (model moves to opset 20)."""

    name = "fuse-gelu"
    after = ("opset-upgrade", "unfuse-contrib", "fold-constants")

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        named: set[str] = set()
        for r in requests:
            v = r.get("nodes") or r.get("node") or []
            named.update([v] if isinstance(v, str) else v)
        cur = gu.opset(model)
        bumped = ""
        if cur < 20:
            rng = ctx.target.opset_range("ai.onnx") if ctx.target is not None else None
            if rng is not None and rng[1] < 20:
                return PassResult(model, False, skipped=["Gelu needs opset 20, beyond the target's opsets"])
            try:
                model = onnx.version_converter.convert_version(model, 20)
            except Exception:
                return PassResult(model, False, skipped=["Gelu needs opset 20; the model could not be converted"])
            bumped = f"opset {cur} -> 20 first (Gelu-20)"
        g = model.graph
        changes: list[str] = []
        namer = gu.Namer(model)
        for tanh in [n for n in g.node if n.op_type == "Tanh"]:
            if named and gu.label(tanh) not in named:
                continue
            users, producers = gu.consumers(g), gu.producers(g)
            m = match_tanh_gelu(g, tanh, users, producers)
            if m is None:
                continue
            x, out, nodes = m
            last = max(gu.index_of(g, n) for n in nodes)
            producers[out].output[0] = namer(f"{out}/unfused")  # now dead; the Gelu writes ``out``
            g.node.insert(last + 1, helper.make_node("Gelu", [x], [out], name=namer(f"{gu.label(tanh)}/Gelu"),
                                                     approximate="tanh"))
            _remove_if_dead(g, list(nodes))
            changes.append(f"{gu.label(tanh)!r}: tanh GELU subgraph ({len(nodes)} nodes) -> Gelu(approximate='tanh')")
        if not changes:
            return PassResult(model, False)
        gu.clear_value_info(model)
        gu.topo_sort(g)
        return PassResult(model, True, ([bumped] if bumped else []) + changes)
