"""The symbolic shape walk over OpenVINO IR (graphlint/analysis/shapes/openvino.py) and GL3003 on IR.

* On IR that OpenVINO converted (the corpus's, and small torch modules converted here), the walk's
  symbolic dims, with the -1 dims bound to numbers, equal the dims OpenVINO's own shape inference
  gives after ``Model.reshape`` to those numbers, layer by layer.
* GL3003's error on the two baked-in dynamic exports of the corpus is what OpenVINO does: right
  at the declared size, a wrong (empty) result at another size of the pinned dim.
* A constant Reshape that pins the batch: an error when the Parameter fixes some dims, a warning
  when every dim is -1 (ov.convert_model's default without input shapes).
"""

from __future__ import annotations

import functools
import os
import re

import numpy as np
import pytest

from graphlint.analysis.shapes import run
from graphlint.fix.verify import OPENVINO_F32
from graphlint.lint import LintOptions, lint_paths
from graphlint.load.openvino_loader import load

ov = pytest.importorskip("openvino")
torch = pytest.importorskip("torch")

# model -> (input, declared shape, another shape that changes only the pinned dims, the pinned
# layer, the constant, the symbol, the dim the graph computes at the other shape: ViT patch 8 gives
# (64/8)^2 + 1 = 65 tokens, the Whisper encoder's stride-2 conv gives 128/2 = 64 frames)
PINNED = {
    "vit_dynhw_legacy_op17": ("pixel_values", (1, 3, 32, 32), (1, 3, 64, 64), "/model/embeddings/Add", 17,
                              "pixel_values[2]", 65),
    "whisperenc_dynframes_legacy_op17": ("input_features", (1, 16, 64), (1, 16, 128), "/model/Add_2", 32,
                                         "input_features[2]", 64),
}


@functools.cache
def corpus_ir(mid: str) -> str:
    from testmodels.common import cached
    from testmodels.corpus import exports, ir

    path = os.path.join(ir.irs(cached("corpus-exports", exports.build)), f"{mid}.xml")
    assert os.path.exists(path), path
    return path


def gl3003(path: str, shapes: list[str] | None = None) -> list:
    from graphlint.shapes_spec import parse_profiles

    opts = LintOptions(targets=["openvino"], rule_options={"shapes": parse_profiles(shapes or [])})
    return [f for r in lint_paths([path], opts).results for f in r.findings if f.rule_id == "GL3003"]


def bound(dim, env: dict[str, int]) -> int | None:
    """A walk dim with the Parameter symbols bound; None when it stays symbolic (a derived symbol)."""
    if dim is None:
        return None
    d = dim.subs(env)
    if d.is_const:
        return d.value
    return None


def agree_with_openvino(path: str, shapes: dict[str, tuple[int, ...]]) -> int:
    """Compare the walk's dims (symbols bound to ``shapes``) with OpenVINO's inference after
    reshape; returns how many dims were compared. A derived symbol ((h - 8)//8) is evaluated by
    the same floor division the Convolution spec states."""
    model = load(path)
    facts = run(model)
    env = {f"{name}[{axis}]": n for name, shp in shapes.items() for axis, n in enumerate(shp)}
    derived = {s for shp in facts.shapes.values() if shp for d in shp if d is not None for s in d.symbols
               if s not in env}
    for s in derived:  # "((x[2] - 1)//2 - 1)//2": the floor divisions the Convolution/Pool specs state
        text = re.sub(r"[\w.]+\[\d+\]", lambda m: str(env.get(m.group(0), "?")), s)
        if re.fullmatch(r"[\d\s()+\-*/]+", text):  # only numbers and arithmetic left
            env[s] = eval(text)
    ovm = ov.Core().read_model(path)
    ovm.reshape({name: ov.PartialShape(list(shp)) for name, shp in shapes.items()})
    theirs = {}
    for op in ovm.get_ordered_ops():
        for i, out in enumerate(op.outputs()):
            if out.get_partial_shape().is_static:
                theirs[(op.get_friendly_name(), i)] = tuple(out.get_partial_shape().to_shape())
    compared = 0
    for node in model.graph.nodes:
        for i, v in enumerate(node.outputs):
            mine, want = facts.shapes.get(v), theirs.get((node.name, i))
            if mine is None or want is None or len(mine) != len(want):
                continue
            for axis, (d, w) in enumerate(zip(mine, want, strict=True)):
                got = bound(d, env)
                if got is not None:
                    assert got == w, f"{node.op_type} {node.name!r} output {i} axis {axis}: walk {d} = {got}, OpenVINO {w}"
                    compared += 1
    return compared


@pytest.mark.slow
@pytest.mark.parametrize("mid", PINNED)
def test_pin_on_corpus_ir_is_an_error(mid):
    """An error when the given shapes include the other size; without shapes, which sizes will be fed
    is unknown (every engine runs the IR at its export size): a warning naming the size that runs."""
    inp, declared, other, layer, const, symbol, _ = PINNED[mid]
    profile = f"{inp}:{'x'.join(map(str, declared))},{'x'.join(map(str, declared))},{'x'.join(map(str, other))}"
    found = gl3003(corpus_ir(mid), [profile])
    assert [(f.node, f.severity.label) for f in found] == [(layer, "error")], found
    f = found[0]
    assert symbol in f.message and f"constant {const}" in f.message and f"input '{inp}'" in f.message
    assert f.properties["basis"].startswith("document:https://docs.openvino.ai/2026/"), f.properties
    (w,) = gl3003(corpus_ir(mid))
    assert w.severity.label == "warning" and w.properties["unknown"] == ["fed sizes"]
    assert f"runs only at {symbol}" in w.message and w.rewrite is not None


@pytest.mark.slow
@pytest.mark.parametrize("mid", PINNED)
def test_openvino_gives_a_wrong_result_off_the_pinned_size(mid):
    """Evidence for the error: OpenVINO 2026.4 runs the IR right at the declared size and returns
    an output that is not the model's at another size of the pinned dim (truth.json's run_alt)."""
    inp, declared, other, _, const, _, computed = PINNED[mid]
    compiled = ov.Core().compile_model(corpus_ir(mid), "CPU", OPENVINO_F32)
    rng = np.random.default_rng(0)
    ok = compiled({inp: rng.standard_normal(declared).astype(np.float32)})[0]
    assert ok.shape == (declared[0], const, 32) and np.isfinite(ok).all()
    try:
        bad = compiled({inp: rng.standard_normal(other).astype(np.float32)})[0]
    except RuntimeError:
        return  # a failed run is the other outcome the finding claims
    # the graph computes `computed` tokens at this size; OpenVINO returns no tensor of them
    assert bad.shape != (other[0], computed, 32) and bad.size == 0, bad.shape


@pytest.mark.slow
@pytest.mark.parametrize("mid", PINNED)
def test_walk_agrees_with_openvino_on_corpus_ir(mid):
    inp, declared, *_ = PINNED[mid]
    assert agree_with_openvino(corpus_ir(mid), {inp: declared}) >= 50


def test_walk_symbols_on_corpus_ir():
    """The dims each IR op's twin computes on the ViT IR: Convolution, ShapeOf, Gather, Concat,
    Equal/Select (the Expand idiom), Broadcast, Reshape, Transpose, Concat, Add."""
    model = load(corpus_ir("vit_dynhw_legacy_op17"))
    facts = run(model)
    by_name = {n.name: n for n in model.graph.nodes}

    def dims(name: str) -> list[str]:
        return [str(d) for d in facts.shapes[by_name[name].outputs[0]]]

    patches = "(pixel_values[2] - 8)//8*(pixel_values[3] - 8)//8 + (pixel_values[2] - 8)//8 + (pixel_values[3] - 8)//8"
    assert dims("/model/embeddings/patch_embeddings/projection/Conv/WithoutBiases") == [
        "pixel_values[0]", "32", "(pixel_values[2] - 8)//8 + 1", "(pixel_values[3] - 8)//8 + 1"]
    select = by_name["/model/embeddings/Where"].outputs[0]
    assert [str(d) for d in facts.svals[select]] == ["pixel_values[0]", "1", "1"]
    assert dims("/model/embeddings/Expand") == ["pixel_values[0]", "1", "32"]
    assert dims("/model/embeddings/patch_embeddings/Transpose") == ["pixel_values[0]", f"{patches} + 1", "32"]
    assert dims("/model/embeddings/Concat_1") == ["pixel_values[0]", f"{patches} + 2", "32"]
    assert dims("/model/embeddings/Add") == ["pixel_values[0]", "17", "32"]


@pytest.mark.slow
def test_clash_with_a_computed_size_is_a_warning():
    """PP-OCRv4 recognition (a wheel model; its ONNX leaves the height unnamed, '?'): on its IR a
    Concat meets the pooled height with the 1 a Reshape further up fixed. The constant is not an
    input of the Concat, so a warning; OpenVINO does fail off the heights that pool to 1."""
    from testmodels.corpus.build import folders

    path = os.path.join(folders()["ir-wheel"], "wheel_rapidocr_rec_v4.xml")
    found = gl3003(path)
    assert [(f.node, f.severity.label) for f in found] == [("p2o.Concat.7", "warning")], found
    assert found[0].properties.get("unknown") == ["value"] and "computed by other layers" in found[0].message
    compiled = ov.Core().compile_model(path, "CPU", OPENVINO_F32)
    rng = np.random.default_rng(0)
    assert compiled({"x": rng.random((1, 3, 48, 160), np.float32)})[0].shape == (1, 20, 6625)
    with pytest.raises(RuntimeError):
        compiled({"x": rng.random((1, 3, 96, 160), np.float32)})


class _Net(torch.nn.Module):
    """Conv (stride 2, pads), MaxPool, flatten/transpose, Linear (MatMul transpose_b), slice and
    Concat, ReduceMean keep_dims, Unsqueeze/Squeeze: the IR ops a small CNN-to-tokens model uses."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = self.pool(torch.relu(self.conv(x))).flatten(2).transpose(1, 2)
        z = self.lin(y)
        z = torch.cat([z, z[:, :1]], dim=1)
        return z.mean(dim=-1, keepdim=True).unsqueeze(0).squeeze(0)


class _Pinned(torch.nn.Module):
    """``x.view(2, 8)``: tracing bakes the example's batch of 2 into the Reshape's constant."""

    def forward(self, x):
        return torch.tanh(x.view(2, 8)) * 2


def _convert(module, example, shape, folder, name) -> str:
    torch.manual_seed(0)
    path = os.path.join(folder, f"{name}.xml")
    kw = {"input": [ov.PartialShape(shape)]} if shape is not None else {}
    ov.save_model(ov.convert_model(module.eval(), example_input=example, **kw), path, compress_to_fp16=False)
    return path


def test_walk_agrees_with_openvino_on_converted_torch(tmp_path):
    torch.manual_seed(0)
    path = _convert(_Net(), torch.randn(1, 3, 32, 32), [-1, 3, -1, -1], str(tmp_path), "net")
    assert not gl3003(path)  # every op follows the input: nothing pinned
    name = load(path).graph.inputs[0].name
    for shape in ((1, 3, 32, 32), (2, 3, 48, 40), (3, 3, 17, 29)):
        assert agree_with_openvino(path, {name: shape}) >= 60, shape  # every dim of every layer


def test_constant_reshape_pins_the_ir_batch(tmp_path):
    """Some dims fixed (-1 only where meant): an error, and OpenVINO fails at batch 3. Every dim -1
    (convert_model without input shapes): the same pin is a warning with the unknown premise."""
    torch.manual_seed(0)
    x = torch.randn(2, 8)
    partial = _convert(_Pinned(), x, [-1, 8], str(tmp_path), "partial")
    found = gl3003(partial)
    assert [f.severity.label for f in found] == ["error"], found
    assert found[0].properties.get("pinned_value") == 2 and "x[0]" in found[0].message
    compiled = ov.Core().compile_model(partial, "CPU", OPENVINO_F32)
    name = load(partial).graph.inputs[0].name
    assert compiled({name: x.numpy()})[0].shape == (2, 8)
    with pytest.raises(RuntimeError):
        compiled({name: np.zeros((3, 8), np.float32)})

    rank_only = _convert(_Pinned(), x, None, str(tmp_path), "rank_only")
    assert all(d is None for d in load(rank_only).graph.inputs[0].shape)
    found = gl3003(rank_only)
    assert found and {f.severity.label for f in found} == {"warning"}, found
    assert all(f.properties.get("unknown") == ["value"] and "Every dim of that Parameter is -1" in f.message
               for f in found)
