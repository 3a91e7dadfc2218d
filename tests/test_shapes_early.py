"""The early shape pass (run while ONNX inference is still busy in the loader's child) and its
reconciliation: the analysis must give exactly the plain path's facts and findings, whether it
keeps the early facts, keeps them up to a node and resumes the full pass there, or runs the full
pass afresh."""

from __future__ import annotations

import pytest
from _multimodal import path

from graphlint.analysis import early_key
from graphlint.analysis.shapes import ShapeFacts, shape_text, shapes_early
from graphlint.engine import run_rules
from graphlint.ir import Model
from graphlint.lint import LintOptions, selected_rules
from graphlint.load import load_model
from graphlint.target import resolve


def _before_inference(model: Model) -> ShapeFacts | None:
    """The early pass as it runs in the loader: no value typed yet but the graph inputs."""
    main_inputs = {id(v) for v in model.graph.inputs}
    saved = [(v, v.shape, v.dtype) for g in model.graph.graphs() for v in g.values.values()
             if id(v) not in main_inputs]
    for v, _, _ in saved:
        v.shape = v.dtype = None
    try:
        return shapes_early(model)
    finally:
        for v, shape, dtype in saved:
            v.shape, v.dtype = shape, dtype


def _findings(model: Model, target: str) -> list[tuple]:
    res = run_rules(model, resolve(target), selected_rules(LintOptions()), {"shapes": {}})
    return [(f.rule_id, f.message, f.node, f.severity.label) for f in res.findings]


def _facts_text(model: Model, facts: ShapeFacts) -> dict:
    return {
        "shapes": {v.name: shape_text(facts.shape(v)) for v in model.graph.values.values()},
        "events": [(e.kind, e.node.name, str(e.a), str(e.b), e.axis) for e in facts.events],
        "svals": {v.name: [str(d) for d in s] for v in model.graph.values.values() if (s := facts.sval(v)) is not None},
        "unknown": [v.name for v in facts.unknown],
        "conflicts": [(v.name, shape_text(a), shape_text(b)) for v, a, b in facts.output_conflicts],
        "written back": {v.name: v.shape for v in model.graph.values.values()},
    }


def _plain_and_early(file: str, targets: tuple[str, ...] = ("trt", "ort")) -> tuple[Model, Model]:
    """The same model linted the plain way and the early way; asserts identical facts and findings."""
    plain, early = load_model(file), load_model(file)
    early.precomputed[early_key("shapes")] = _before_inference(early)
    for target in targets:
        assert _findings(early, target) == _findings(plain, target), target
    facts = [m.precomputed["analyses"]["shapes"] for m in (plain, early)]
    assert _facts_text(early, facts[1]) == _facts_text(plain, facts[0])
    assert early.stats == plain.stats
    assert facts[0].path == "full"
    return plain, early


def _path(model: Model) -> str:
    return model.precomputed["analyses"]["shapes"].path


@pytest.mark.parametrize("name", ["fusion.onnx", "fusion_dynamo.onnx", "clip_legacy.onnx", "clip_mask_mismatch.onnx",
                                  "fusion_batch_mismatch.onnx", "fusion_fixed_reshape.onnx"])
def test_early_facts_are_kept_on_exports_of_both_exporters(name):
    plain, early = _plain_and_early(path(name))
    assert _path(early) == "reconciled"
    if "mismatch" in name or "fixed" in name:  # models with shape findings: the comparison has teeth
        assert any(f[0].startswith("GL300") for f in _findings(plain, "trt"))


def test_resumes_where_inference_knows_more_and_gives_the_plain_result():
    # the dynamo CLIP export has a GatherND, which the pass has no shape handler for: the early
    # facts are kept up to it and the full pass redoes the rest
    _, early = _plain_and_early(path("clip_dynamo.onnx"))
    assert _path(early).startswith("resumed at node ") and "[text_batch, 1, 1, seq]" in _path(early)


def test_fallback_when_inference_names_dims_differently(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    # the file declares the output with its own symbol: the plain pass keeps inference's name
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["h"], name="relu"), helper.make_node("Add", ["h", "x"], ["y"], name="add")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, ["relu_dim_0", 4]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    f = str(tmp_path / "named.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), f)
    plain, early = _plain_and_early(f)
    assert _path(early).startswith("fallback: ") and "relu_dim_0" in _path(early)  # the first node: nothing kept
    # the Add still checks the two names against each other, in both paths
    assert [e.kind for e in plain.precomputed["analyses"]["shapes"].events] == ["mismatch"]


@pytest.mark.parametrize("else_op", ["Neg", "Unsqueeze"])
def test_if_branches_are_walked_early(tmp_path, else_op):
    import onnx
    from onnx import TensorProto, helper

    def branch(name: str, op: str) -> onnx.GraphProto:
        ins = ["x", "axes"] if op == "Unsqueeze" else ["x"]  # axes: an initializer of the main graph
        dims = [1, "n", 3] if op == "Unsqueeze" else ["n", 3]
        return helper.make_graph([helper.make_node(op, ins, [f"{name}_out"])], name, [],
                                 [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, dims)])

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    nodes = [helper.make_node("If", ["c"], ["y"], name="branch", then_branch=branch("then", "Relu"),
                              else_branch=branch("else", else_op)),
             helper.make_node("Add", ["y", "x"], ["z"], name="add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []), x],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                          [helper.make_tensor("axes", TensorProto.INT64, [1], [0])])
    f = str(tmp_path / "if.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), f)
    plain, early = _plain_and_early(f)
    y = shape_text(early.precomputed["analyses"]["shapes"].shape(early.graph.values["y"]))
    if else_op == "Neg":
        assert _path(early) == "reconciled" and y == "[n, 3]"
    else:  # the branches disagree on the rank: unknown in both paths, and GL3005 says so in both
        assert y == "[?]"
        assert [f[0] for f in _findings(plain, "trt") if f[0] == "GL3005"] == ["GL3005"]


def test_early_pass_reads_no_inferred_type():
    # by construction: on a fully typed model it computes what it computes before inference
    model = load_model(path("fusion_dynamo.onnx"))
    before = _before_inference(model)
    after = shapes_early(model)
    assert before is not None and after is not None
    assert _facts_text(model, after) == _facts_text(model, before)
    assert before.events or before.svals  # it did real work: shape values through Shape/Gather/Concat


def test_resumes_where_a_shape_value_turns_out_not_to_be_int(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    # before inference the pass cannot know Shape -> Cast(float) leaves the int world; it assumes
    # int, tracks [n, 4] through both Casts, and reconciling must undo that from the first Cast
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Cast", ["s"], ["sf"], name="to_float", to=TensorProto.FLOAT),
             helper.make_node("Cast", ["sf"], ["si"], name="to_int", to=TensorProto.INT64),
             helper.make_node("Reshape", ["x", "si"], ["y"], name="reshape")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    f = str(tmp_path / "cast.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), f)
    plain, early = _plain_and_early(f)
    assert _path(early).startswith("resumed at node 1 of 4: 'sf' is typed float32")
    facts = plain.precomputed["analyses"]["shapes"]
    assert facts.sval(plain.graph.values["s"]) is not None and facts.sval(plain.graph.values["si"]) is None


def test_an_early_pass_asked_to_stop_is_finished_by_the_analysis(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    # 1500 nodes; the Add at the end joins two different batch symbols (a GL3001 finding)
    nodes = [helper.make_node("Relu", [f"h{i}"], [f"h{i + 1}"], name=f"relu{i}") for i in range(1500)]
    nodes.append(helper.make_node("Add", ["h1500", "y"], ["z"], name="join"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("h0", TensorProto.FLOAT, ["a", 4]),
                                       helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 4])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    f = str(tmp_path / "long.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), f)
    plain, early = load_model(f), load_model(f)
    polls = iter([False, True])  # inference is done by the second poll (node 1024)
    early.precomputed[early_key("shapes")] = shapes_early(early, stop=lambda: next(polls))
    assert _findings(early, "trt") == _findings(plain, "trt")
    assert any(f[0] == "GL3001" for f in _findings(plain, "trt"))
    assert _path(early) == "resumed at node 1024 of 1501: the early pass stopped there"
    facts = [m.precomputed["analyses"]["shapes"] for m in (plain, early)]
    assert _facts_text(early, facts[1]) == _facts_text(plain, facts[0])
