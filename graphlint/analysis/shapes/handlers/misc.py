"""Shape, Size, ConstantOfShape, Range, reductions, convolutions and pools."""

from __future__ import annotations

from graphlint.analysis.shapes.facts import SDim, SShape
from graphlint.analysis.shapes.handlers.registry import ShapePass, axes_of, handles, shape_range
from graphlint.analysis.symbolic import ONE, Poly
from graphlint.ir import Node


@handles("Shape")
def _shape(node: Node, p: ShapePass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    lo, hi = shape_range(node, len(s))
    return [(Poly.const(max(hi - lo, 0)),)]



@handles("Size")
def _size(node: Node, p: ShapePass) -> list[SShape]:
    return [()]


@handles("ConstantOfShape")
def _const_of_shape(node: Node, p: ShapePass) -> list[SShape]:
    t = p.f.sval(node.input(0))
    return [tuple(t) if t is not None else None]


@handles("Range")
def _range(node: Node, p: ShapePass) -> list[SShape]:
    st, lim, de = (p.f.sval(node.input(i)) for i in range(3))
    if st and lim and de and st[0] is not None and lim[0] is not None and de[0] == ONE:
        return [(lim[0] - st[0],)]
    return [(None,)]



@handles("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin")
def _reduce(node: Node, p: ShapePass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    keep = node.attr("keepdims", 1)
    if node.op_type in ("ArgMax", "ArgMin"):
        axes: list[int] | None = [node.attr("axis", 0)]
    else:
        until = 13 if node.op_type == "ReduceSum" else 18
        axes = axes_of(node, p, 1, until)
        if axes is None:
            if node.input(1) is not None and not (isinstance(node.opset, int) and node.opset < until):
                return [None]
            if node.attr("noop_with_empty_axes", 0):
                return [s]
            axes = list(range(len(s)))
    axes = [a + len(s) if a < 0 else a for a in axes]
    if keep:
        return [tuple(ONE if i in axes else d for i, d in enumerate(s))]
    return [tuple(d for i, d in enumerate(s) if i not in axes)]



@handles("Conv", "MaxPool", "AveragePool", "LpPool", "GroupConvolution")
def _conv(node: Node, p: ShapePass) -> list[SShape]:
    """ONNX Conv and pools; OpenVINO's GroupConvolution-1 (IR only) is a Conv whose filters are
    [groups, C_out/groups, C_in/groups, kernel...]."""
    s = p.shape(node.input(0))
    if s is None or len(s) < 3:
        return [None]
    if node.op_type in ("Conv", "GroupConvolution"):
        w = p.shape(node.input(1))
        if w is None:
            return [None]
        if node.op_type == "GroupConvolution":  # as Conv's [C_out, C_in/groups, kernel...]
            w = (None if w[0] is None or w[1] is None else w[0] * w[1], *w[2:])
        kernel, cout = list(w[2:]), w[0]
    else:
        kernel, cout = [Poly.const(k) for k in node.attr("kernel_shape", [])], s[1]
    nsp = len(s) - 2
    strides = node.attr("strides") or [1] * nsp
    dil = node.attr("dilations") or [1] * nsp
    pads = node.attr("pads") or [0] * (2 * nsp)
    auto = node.attr("auto_pad", "NOTSET")
    out: list[SDim] = [s[0], cout]
    for i in range(nsp):
        d, k = s[2 + i], kernel[i] if i < len(kernel) else None
        if d is None or k is None or not k.is_const:
            out.append(None)
            continue
        kv = ((k.value or 1) - 1) * dil[i] + 1
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            out.append(d if strides[i] == 1 else (d.floordiv(strides[i]) if d.is_const else None))
            continue
        pads_i = 0 if auto == "VALID" else pads[i] + pads[i + nsp]
        span = d + Poly.const(pads_i - kv)
        if span.is_const:
            ceil = node.attr("ceil_mode", 0)
            v = span.value or 0
            out.append(Poly.const((-(-v // strides[i]) if ceil else v // strides[i]) + 1))
        elif strides[i] == 1:
            out.append(span + ONE)
        else:
            exact = span.div_exact(Poly.const(strides[i]))
            out.append((exact if exact is not None else _derived(p, f"({span})//{strides[i]}", span)) + ONE)
    return [tuple(out)]


def _derived(p: ShapePass, name: str, base: Poly) -> Poly:
    """A symbol for an input-dim expression polynomials cannot hold (a floor division): it stands
    for the same input dims as ``base``, so constraints on it still name them (a strided patch
    embedding whose patch count a constant position table pins)."""
    if name not in p.f.origins:
        p.f.origins[name] = [o for s in sorted(base.symbols) for o in p.f.origins.get(s, ())]
    return Poly.sym(name)


