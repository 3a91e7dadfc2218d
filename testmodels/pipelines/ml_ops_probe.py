"""What ONNX Runtime and OpenVINO do with each ai.onnx.ml operator: one-node models, printed as JSON.

The classic-ML exporters (skl2onnx, onnxmltools) emit ai.onnx.ml ops (TreeEnsemble*, Linear*,
SVM*, ZipMap, Scaler, ...). Whether an engine loads a model that holds one is an engine fact the
linter's support tables need, so this builds one small valid node per (op, schema version) with
onnx.helper, at ai.onnx.ml opset = that version (so exactly that schema is resolved), and per engine
records load (ORT session / OpenVINO read, compile), one run on fixed inputs and whether the outputs
equal onnx.reference's (the spec's reference implementation, onnx 1.23.2 in the dev venv).

Runs in the dev venv (onnxruntime 1.32.0, openvino 2026.4.1):

    python -m testmodels.pipelines.ml_ops_probe > testmodels/pipelines/ml_ops_probe.json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h

from testmodels.corpus.engines import first_line
from testmodels.engines import ort_session

ML = "ai.onnx.ml"
ONNX_OPSET = 17  # any opset ORT 1.32 and OpenVINO 2026.4 accept; the ml ops are in their own domain
MS = "com.microsoft"
F = T.FLOAT
TEXT = np.array([["The Happy dog"], ["a small CAR"]], object)


@dataclass
class Case:
    """One node: its type signature, attributes and the inputs it is run on."""

    op: str
    version: int  # the schema's since_version, also the model's ai.onnx.ml opset
    inputs: list[onnx.ValueInfoProto]
    outputs: list[onnx.ValueInfoProto]
    attrs: dict[str, Any]
    feeds: dict[str, Any]
    variant: str = ""
    domain: str = ML

    @property
    def opsets(self) -> dict[str, int]:
        return {"": ONNX_OPSET} | ({} if self.domain == "" else {self.domain: self.version})

    @property
    def name(self) -> str:
        prefix = "" if self.domain == ML else f"{self.domain or 'ai.onnx'}."
        return f"{prefix}{self.op}-{self.version}" + (f"-{self.variant}" if self.variant else "")


def vi(name: str, elem: int, shape: list[Any] | None) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, elem, shape)


def map_vi(name: str, key: int, value: int) -> onnx.ValueInfoProto:
    return h.make_value_info(name, h.make_map_type_proto(key, h.make_tensor_type_proto(value, [])))


def seq_map_vi(name: str, key: int) -> onnx.ValueInfoProto:
    m = h.make_map_type_proto(key, h.make_tensor_type_proto(F, []))
    return h.make_value_info(name, h.make_sequence_type_proto(m))


X4 = np.array([[0.5, -1.0, 2.0, 0.1], [1.5, 0.3, -0.7, 2.2]], np.float32)


def _tree_attrs(prefix: str) -> dict[str, Any]:
    """One tree: node 0 splits feature 1 at 0.0 (BRANCH_LEQ); leaves 1 and 2."""
    return {"nodes_treeids": [0, 0, 0], "nodes_nodeids": [0, 1, 2], "nodes_featureids": [1, 0, 0],
            "nodes_values": [0.0, 0.0, 0.0], "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF"],
            "nodes_truenodeids": [1, 0, 0], "nodes_falsenodeids": [2, 0, 0],
            f"{prefix}_treeids": [0, 0], f"{prefix}_nodeids": [1, 2]}


def _tree_classifier(version: int, classes: int = 2) -> Case:
    """Leaf 1 votes class 0, leaf 2 the last class (two classes: the binary path of an engine)."""
    a = _tree_attrs("class")
    a |= {"class_ids": [0, classes - 1], "class_weights": [1.0, 1.0], "classlabels_int64s": list(range(classes))}
    return Case("TreeEnsembleClassifier", version, [vi("X", F, ["N", 4])],
                [vi("Y", T.INT64, ["N"]), vi("Z", F, ["N", classes])], a, {"X": X4},
                variant="" if classes == 2 else f"{classes}class")


def _tree_regressor(version: int) -> Case:
    a = _tree_attrs("target") | {"target_ids": [0, 0], "target_weights": [-1.0, 1.0], "n_targets": 1}
    return Case("TreeEnsembleRegressor", version, [vi("X", F, ["N", 4])], [vi("Y", F, ["N", 1])], a, {"X": X4})


def _tree_ensemble() -> Case:
    """ai.onnx.ml 5's TreeEnsemble: the same tree in the new tensor-attribute layout."""
    a = {"n_targets": 1, "aggregate_function": 1, "post_transform": 0, "tree_roots": [0],
         "nodes_featureids": [1], "nodes_splits": h.make_tensor("s", F, [1], [0.0]), "nodes_modes":
         h.make_tensor("m", T.UINT8, [1], [0]), "nodes_truenodeids": [0], "nodes_trueleafs": [1],
         "nodes_falsenodeids": [1], "nodes_falseleafs": [1], "leaf_targetids": [0, 0],
         "leaf_weights": h.make_tensor("w", F, [2], [-1.0, 1.0])}
    return Case("TreeEnsemble", 5, [vi("X", F, ["N", 4])], [vi("Y", F, ["N", 1])], a, {"X": X4})


def _svm_classifier(kernel: str) -> Case:
    sv = [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 2.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    a = {"classlabels_ints": [0, 1], "vectors_per_class": [2, 2], "support_vectors": sv,
         "coefficients": [1.0, 0.5, -0.5, -1.0], "rho": [0.1], "kernel_type": kernel,
         "kernel_params": [0.25, 0.0, 3.0], "prob_a": [-2.0], "prob_b": [0.1]}
    return Case("SVMClassifier", 1, [vi("X", F, ["N", 4])], [vi("Y", T.INT64, ["N"]), vi("Z", F, ["N", 2])],
                a, {"X": X4}, variant=kernel.lower())


CASES: list[Callable[[], Case]] = [
    lambda: Case("ArrayFeatureExtractor", 1, [vi("X", F, ["N", 4]), vi("I", T.INT64, [2])],
                 [vi("Z", F, ["N", 2])], {}, {"X": X4, "I": np.array([0, 3], np.int64)}),
    lambda: Case("Binarizer", 1, [vi("X", F, ["N", 4])], [vi("Y", F, ["N", 4])], {"threshold": 0.2}, {"X": X4}),
    lambda: Case("CastMap", 1, [map_vi("X", T.INT64, F)], [vi("Y", F, [1, 3])],
                 {"cast_to": "TO_FLOAT", "map_form": "DENSE"}, {"X": {0: 1.5, 1: -2.0, 2: 0.25}}),
    lambda: Case("CategoryMapper", 1, [vi("X", T.STRING, ["N"])], [vi("Y", T.INT64, ["N"])],
                 {"cats_strings": ["a", "b", "c"], "cats_int64s": [0, 1, 2], "default_int64": -1},
                 {"X": np.array(["a", "c", "zz"], object)}),
    lambda: Case("DictVectorizer", 1, [map_vi("X", T.STRING, F)], [vi("Y", F, [1, 3])],
                 {"string_vocabulary": ["a", "b", "c"]}, {"X": {"a": 1.0, "c": 3.0}}),
    lambda: Case("FeatureVectorizer", 1, [vi("A", F, ["N", 2]), vi("B", F, ["N", 2])], [vi("Y", F, ["N", 4])],
                 {"inputdimensions": [2, 2]}, {"A": X4[:, :2].copy(), "B": X4[:, 2:].copy()}),
    lambda: Case("Imputer", 1, [vi("X", F, ["N", 4])], [vi("Y", F, ["N", 4])],
                 {"imputed_value_floats": [9.0, 8.0, 7.0, 6.0], "replaced_value_float": float("nan")},
                 {"X": np.where(X4 > 1.0, np.nan, X4).astype(np.float32)}),
    lambda: Case("LabelEncoder", 1, [vi("X", T.STRING, ["N"])], [vi("Y", T.INT64, ["N"])],
                 {"classes_strings": ["a", "b", "c"], "default_int64": -1}, {"X": np.array(["b", "c", "q"], object)}),
    lambda: Case("LabelEncoder", 2, [vi("X", T.STRING, ["N"])], [vi("Y", T.INT64, ["N"])],
                 {"keys_strings": ["a", "b", "c"], "values_int64s": [5, 6, 7], "default_int64": -1},
                 {"X": np.array(["b", "c", "q"], object)}),
    lambda: Case("LabelEncoder", 4, [vi("X", T.INT64, ["N"])], [vi("Y", F, ["N"])],
                 {"keys_tensor": h.make_tensor("k", T.INT64, [3], [1, 2, 3]),
                  "values_tensor": h.make_tensor("v", F, [3], [0.5, 1.5, 2.5]),
                  "default_tensor": h.make_tensor("d", F, [1], [-1.0])}, {"X": np.array([3, 1, 9], np.int64)}),
    lambda: Case("LinearClassifier", 1, [vi("X", F, ["N", 4])], [vi("Y", T.INT64, ["N"]), vi("Z", F, ["N", 2])],
                 {"coefficients": [0.1, -0.2, 0.3, 0.4, -0.1, 0.2, -0.3, -0.4], "intercepts": [0.05, -0.05],
                  "classlabels_ints": [0, 1], "post_transform": "SOFTMAX"}, {"X": X4}),
    lambda: Case("LinearRegressor", 1, [vi("X", F, ["N", 4])], [vi("Y", F, ["N", 1])],
                 {"coefficients": [0.1, -0.2, 0.3, 0.4], "intercepts": [0.5], "targets": 1}, {"X": X4}),
    lambda: Case("Normalizer", 1, [vi("X", F, ["N", 4])], [vi("Y", F, ["N", 4])], {"norm": "L2"}, {"X": X4}),
    lambda: Case("OneHotEncoder", 1, [vi("X", T.STRING, ["N", 1])], [vi("Y", F, ["N", 1, 3])],
                 {"cats_strings": ["a", "b", "c"], "zeros": 1}, {"X": np.array([["a"], ["c"]], object)},
                 variant="strings"),
    lambda: Case("OneHotEncoder", 1, [vi("X", T.INT64, ["N", 1])], [vi("Y", F, ["N", 1, 3])],
                 {"cats_int64s": [1, 2, 3], "zeros": 1}, {"X": np.array([[1], [3]], np.int64)}, variant="int64"),
    lambda: Case("Scaler", 1, [vi("X", F, ["N", 4])], [vi("Y", F, ["N", 4])],
                 {"offset": [0.1, 0.2, 0.3, 0.4], "scale": [2.0, 1.0, 0.5, 4.0]}, {"X": X4}),
    lambda: _svm_classifier("RBF"),
    lambda: _svm_classifier("LINEAR"),
    lambda: Case("SVMRegressor", 1, [vi("X", F, ["N", 4])], [vi("Y", F, ["N", 1])],
                 {"n_supports": 2, "support_vectors": [0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0],
                  "coefficients": [0.7, -0.3], "rho": [0.2], "kernel_type": "RBF", "kernel_params": [0.25, 0.0, 3.0]},
                 {"X": X4}),
    lambda: _tree_classifier(1),
    lambda: _tree_classifier(3),
    lambda: _tree_classifier(3, classes=3),
    lambda: _tree_regressor(1),
    lambda: _tree_regressor(3),
    _tree_ensemble,
    lambda: Case("ZipMap", 1, [vi("X", F, ["N", 2])], [seq_map_vi("Y", T.INT64)], {"classlabels_int64s": [0, 1]},
                 {"X": X4[:, :2].copy()}, variant="int64"),
    lambda: Case("ZipMap", 1, [vi("X", F, ["N", 2])], [seq_map_vi("Y", T.STRING)],
                 {"classlabels_strings": ["no", "yes"]}, {"X": X4[:, :2].copy()}, variant="strings"),
    # Not ai.onnx.ml, but what skl2onnx's TfidfVectorizer converter writes around it: StringNormalizer
    # with no locale (ONNX Runtime then constructs en_US.UTF-8, which this machine lacks), with one,
    # and com.microsoft's regex Tokenizer.
    lambda: Case("StringNormalizer", 10, [vi("X", T.STRING, ["C"])], [vi("Y", T.STRING, ["C"])],
                 {"case_change_action": "LOWER"}, {"X": TEXT.ravel()}, variant="no-locale", domain=""),
    lambda: Case("StringNormalizer", 10, [vi("X", T.STRING, ["C"])], [vi("Y", T.STRING, ["C"])],
                 {"case_change_action": "LOWER", "locale": "C.UTF-8"}, {"X": TEXT.ravel()}, variant="locale-C.UTF-8",
                 domain=""),
    lambda: Case("Tokenizer", 1, [vi("X", T.STRING, ["N", 1])], [vi("Y", T.STRING, None)],
                 {"mark": 0, "mincharnum": 1, "pad_value": "#", "tokenexp": "[a-zA-Z0-9_]+"}, {"X": TEXT}, domain=MS),
]


def build(c: Case) -> onnx.ModelProto:
    node = h.make_node(c.op, [i.name for i in c.inputs], [o.name for o in c.outputs], domain=c.domain, **c.attrs)
    graph = h.make_graph([node], c.name.replace("-", "_").replace(".", "_"), c.inputs, c.outputs)
    m = h.make_model(graph, opset_imports=[h.make_opsetid(d, v) for d, v in c.opsets.items()], ir_version=9)
    if c.domain != MS:  # the checker knows no com.microsoft schema
        onnx.checker.check_model(m, full_check=True)
    return m


def _same(got: list[Any], ref: list[Any]) -> str | None:
    """None when every output equals the reference's (floats at rtol 1e-3 / atol 1e-4), else why not."""
    for i, (a, b) in enumerate(zip(got, ref, strict=True)):
        if isinstance(b, list):  # ZipMap: a sequence of maps
            if len(a) != len(b) or any(set(x) != set(y) or not np.allclose([x[k] for k in x], [y[k] for k in x],
                                                                            rtol=1e-3, atol=1e-4)
                                       for x, y in zip(a, b, strict=True)):
                return f"output {i}: {a!r} != reference {b!r}"[:300]
            continue
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return f"output {i}: shape {list(a.shape)} != reference {list(b.shape)}"
        if b.dtype.kind == "f" and not np.allclose(a, b, rtol=1e-3, atol=1e-4, equal_nan=True):
            return f"output {i}: {a.ravel()[:6].tolist()} != reference {b.ravel()[:6].tolist()}"
        if b.dtype.kind != "f" and not np.array_equal(a, b):
            return f"output {i}: {a.ravel()[:6].tolist()} != reference {b.ravel()[:6].tolist()}"
    return None


def _reference(m: onnx.ModelProto, feeds: dict[str, Any]) -> tuple[list[Any] | None, str | None]:
    from onnx.reference import ReferenceEvaluator

    try:
        return list(ReferenceEvaluator(m).run(None, feeds)), None
    except Exception as e:
        return None, first_line(e)


def probe_ort(m: onnx.ModelProto, feeds: dict[str, Any], ref: list[Any] | None) -> dict[str, Any]:
    rec: dict[str, Any] = {"load": None, "run": None, "matches_reference": None}
    try:
        sess = ort_session(m.SerializeToString())
    except Exception as e:
        rec["load"], rec["run"] = first_line(e), "not run"
        rec["verdict"] = "rejects"
        return rec
    try:
        out = sess.run(None, feeds)
    except Exception as e:
        rec["run"] = first_line(e)
        rec["verdict"] = "fails-run"
        return rec
    rec["matches_reference"] = _same(out, ref) is None if ref is not None else None
    if ref is not None and not rec["matches_reference"]:
        rec["mismatch"] = _same(out, ref)
    rec["verdict"] = "accepts" if rec["matches_reference"] is not False else "wrong-values"
    return rec


def probe_openvino(m: onnx.ModelProto, feeds: dict[str, Any], ref: list[Any] | None) -> dict[str, Any]:
    import openvino as ov

    rec: dict[str, Any] = {"read": None, "compile": None, "run": None, "matches_reference": None}
    core = ov.Core()
    try:
        model = core.read_model(m.SerializeToString(), b"")
    except Exception as e:
        rec["read"] = first_line(e)
        rec["compile"] = rec["run"] = "not run"
        rec["verdict"] = "rejects"
        return rec
    try:
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1})
    except Exception as e:
        rec["compile"], rec["run"] = first_line(e), "not run"
        rec["verdict"] = "rejects"
        return rec
    try:
        res = compiled.infer_new_request(feeds)
        out = [res[o] for o in compiled.outputs]
    except Exception as e:
        rec["run"] = first_line(e)
        rec["verdict"] = "fails-run"
        return rec
    rec["matches_reference"] = _same(out, ref) is None if ref is not None else None
    if ref is not None and not rec["matches_reference"]:
        rec["mismatch"] = _same(out, ref)
    rec["verdict"] = "accepts" if rec["matches_reference"] is not False else "wrong-values"
    return rec


def main() -> None:
    tools = {p: metadata.version(p) for p in ("onnx", "onnxruntime", "openvino", "numpy")}
    rows = []
    for make in CASES:
        c = make()
        m = build(c)
        ref, ref_error = _reference(m, c.feeds)
        rows.append({"case": c.name, "op": c.op, "domain": c.domain or "ai.onnx", "since_version": c.version,
                     "model_opsets": {d or "ai.onnx": v for d, v in c.opsets.items()},
                     "reference_error": ref_error, "ort": probe_ort(m, c.feeds, ref),
                     "openvino": probe_openvino(m, c.feeds, ref)})
    json.dump({"generated_by": "python -m testmodels.pipelines.ml_ops_probe (dev venv)", "tools": tools,
               "cases": rows}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
