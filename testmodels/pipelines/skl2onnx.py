"""scikit-learn, LightGBM and XGBoost models converted by skl2onnx and onnxmltools (ai.onnx.ml graphs).

Classic-ML exports are graphs of ai.onnx.ml operators (TreeEnsemble*, LinearClassifier, SVM*,
ZipMap, Scaler, OneHotEncoder, ...) plus the ONNX ops skl2onnx writes around them, with string
inputs for text and categorical columns and a ZipMap output (a sequence of maps) by default. Each
estimator is fit on tiny seeded synthetic data and converted with the tool's default opsets.

    bash testmodels/pipelines/build.sh skl2onnx     # venv .venvs/skl2onnx, requirements/skl2onnx.txt

String inputs carry their values in the manifest (``values``, a flat row-major list), so the
alternative run has the same shape as the first one for those models.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from testmodels.pipelines.manifest import fresh, versions, write_manifest

NAME = "skl2onnx"
SEED = 0
N_FEATURES = 4
WORDS = ["red", "green", "blue", "cat", "dog", "fish", "runs", "jumps", "sleeps", "fast", "slow", "big", "small", "happy", "sad", "the", "a", "on", "under", "over", "tree", "house", "car", "road"]
COLORS = ("red", "green", "blue")


def data(n: int = 48) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """X (float32 [n, 4]), a binary label, a 3-class label and a regression target, all seeded."""
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((n, N_FEATURES)).astype(np.float32)
    y2 = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int64)
    y3 = np.digitize(x[:, 2] - x[:, 3], [-0.5, 0.5]).astype(np.int64)
    yr = (x @ np.array([1.0, -2.0, 0.5, 0.0], np.float32) + 0.1 * rng.standard_normal(n)).astype(np.float32)
    return x, y2, y3, yr


def sentences(n: int = 40) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(SEED + 1)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 8)))) for _ in range(n)]
    labels = np.array([int("dog" in t or "happy" in t) for t in texts], np.int64)
    return texts, labels


class Builder:
    """Converts estimators, saves them under OUTDIR and collects their manifest rows."""

    def __init__(self, outdir: Path) -> None:
        self.outdir = outdir
        self.models: list[dict[str, Any]] = []

    def save(self, onx: Any, short: str, pipeline: str, kind: str, shapes: dict[str, list[int]],
             alt: dict[str, list[int]], values: dict[str, list[Any]] | None = None, heldout: bool = False) -> None:
        rel = f"{short}/model.onnx"
        # skl2onnx and onnxmltools name the graph with a fresh uuid4 when not given a name, and list the
        # opset imports in set order (hash-seeded): pin both, so a rebuild is byte-identical
        onx.graph.name = short
        imports = sorted((o.domain, o.version) for o in onx.opset_import)
        del onx.opset_import[:]
        onx.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in imports)
        (self.outdir / short).mkdir()
        (self.outdir / rel).write_bytes(onx.SerializeToString())
        self.models.append({"id": f"pl_{NAME}_{short}", "file": rel, "pipeline": pipeline, "kind": kind,
                            "heldout": heldout, "shapes": shapes, "alt_shapes": alt, "values": values or {}})


def float_input() -> list[tuple[str, Any]]:
    from skl2onnx.common.data_types import FloatTensorType

    return [("input", FloatTensorType([None, N_FEATURES]))]


# Batch 3 first (as a user scores a few rows), then batch 1: the edge a squeeze or a ZipMap of one row meets.
BASE, ALT = {"input": [3, N_FEATURES]}, {"input": [1, N_FEATURES]}


def sklearn_models(b: Builder) -> None:
    from skl2onnx import convert_sklearn
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.svm import SVC, SVR

    x, y2, y3, yr = data()
    call = "skl2onnx.convert_sklearn({est}, initial_types=[('input', FloatTensorType([None, 4]))]{opt})"
    nozip = ", options={{id(model): {{'zipmap': False}}}}"
    rows = [
        ("rf_clf", RandomForestClassifier(n_estimators=4, max_depth=3, random_state=SEED), y3, True,
         "RandomForestClassifier (4 trees, depth 3, 3 classes): TreeEnsembleClassifier, default ZipMap output "
         "(label + sequence of maps)", False),
        ("gb_clf", GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=SEED), y2, False,
         "GradientBoostingClassifier (4 stages, depth 2, binary), zipmap=False: label + probability tensor", False),
        ("rf_reg", RandomForestRegressor(n_estimators=4, max_depth=3, random_state=SEED), yr, None,
         "RandomForestRegressor (4 trees, depth 3): TreeEnsembleRegressor", False),
        ("gb_reg", GradientBoostingRegressor(n_estimators=4, max_depth=2, random_state=SEED), yr, None,
         "GradientBoostingRegressor (4 stages, depth 2): TreeEnsembleRegressor", False),
        ("logreg", LogisticRegression(max_iter=200), y3, True,
         "LogisticRegression (3 classes): LinearClassifier + Normalizer, default ZipMap output", False),
        ("linreg", LinearRegression(), yr, None, "LinearRegression: LinearRegressor", False),
        ("svc", SVC(probability=True, random_state=SEED), y2, True,
         "SVC (RBF, probability=True, binary): SVMClassifier with Platt scaling, default ZipMap output", True),
        ("svr", SVR(), yr, None, "SVR (RBF): SVMRegressor", True),
    ]
    for short, est, y, zipmap, kind, heldout in rows:
        est.fit(x, y)
        opts = {id(est): {"zipmap": False}} if zipmap is False else None
        onx = convert_sklearn(est, initial_types=float_input(), options=opts)
        pipeline = call.format(est=repr(est), opt=nozip.format() if zipmap is False else "")
        b.save(onx, short, pipeline, kind, BASE, ALT, heldout=heldout)


def text_model(b: Builder) -> None:
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    texts, labels = sentences()
    pipe = Pipeline([("tfidf", TfidfVectorizer()), ("clf", LogisticRegression(max_iter=200))]).fit(texts, labels)
    onx = convert_sklearn(pipe, initial_types=[("text", StringTensorType([None, 1]))])
    feed = ["the happy dog runs", "a small car on the road", "blue fish sleeps under the tree"]
    b.save(onx, "tfidf_logreg",
           "skl2onnx.convert_sklearn(Pipeline([TfidfVectorizer(), LogisticRegression()]), "
           "initial_types=[('text', StringTensorType([None, 1]))])",
           "TfidfVectorizer + LogisticRegression on a string input: StringNormalizer, com.microsoft Tokenizer, "
           "TfIdfVectorizer, LinearClassifier, default ZipMap output, StringNormalizer without a locale (ONNX Runtime "
           "then uses en_US.UTF-8); string input fed from values",
           {"text": [3, 1]}, {"text": [3, 1]}, values={"text": feed})
    # The same pipeline with StringNormalizer's locale set (skl2onnx's 'locale' option) and no ZipMap:
    # left unset, ONNX Runtime constructs en_US.UTF-8 and fails where that locale is not installed.
    opts = {id(pipe.steps[0][1]): {"locale": "C.UTF-8"}, id(pipe.steps[-1][1]): {"zipmap": False}}
    onx = convert_sklearn(pipe, initial_types=[("text", StringTensorType([None, 1]))], options=opts)
    b.save(onx, "tfidf_logreg_locale",
           "skl2onnx.convert_sklearn(Pipeline([TfidfVectorizer(), LogisticRegression()]), "
           "initial_types=[('text', StringTensorType([None, 1]))], "
           "options={tfidf: {'locale': 'C.UTF-8'}, clf: {'zipmap': False}})",
           "TfidfVectorizer + LogisticRegression on a string input, StringNormalizer locale C.UTF-8, zipmap=False: "
           "StringNormalizer, com.microsoft Tokenizer, TfIdfVectorizer, LinearClassifier; string input fed from values",
           {"text": [3, 1]}, {"text": [3, 1]}, values={"text": feed})


def mixed_model(b: Builder) -> None:
    import pandas as pd
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    x, y2, *_ = data()
    rng = np.random.default_rng(SEED + 2)
    frame = pd.DataFrame({"color": rng.choice(COLORS, size=len(x)), "x1": x[:, 0], "x2": x[:, 1]})
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["color"]),
                             ("num", StandardScaler(), ["x1", "x2"])])
    pipe = Pipeline([("pre", pre), ("clf", LogisticRegression(max_iter=200))]).fit(frame, y2)
    types = [("color", StringTensorType([None, 1])), ("x1", FloatTensorType([None, 1])),
             ("x2", FloatTensorType([None, 1]))]
    onx = convert_sklearn(pipe, initial_types=types, options={id(pipe.steps[-1][1]): {"zipmap": False}})
    shapes = {"color": [3, 1], "x1": [3, 1], "x2": [3, 1]}
    b.save(onx, "columns_logreg",
           "skl2onnx.convert_sklearn(Pipeline([ColumnTransformer([OneHotEncoder on 'color', StandardScaler on "
           "'x1','x2']), LogisticRegression()]), initial_types=[('color', StringTensorType([None, 1])), "
           "('x1', FloatTensorType([None, 1])), ('x2', FloatTensorType([None, 1]))], options={clf: {'zipmap': False}})",
           "ColumnTransformer (OneHotEncoder on a string column, StandardScaler on two float columns) + "
           "LogisticRegression, zipmap=False: OneHotEncoder, Scaler, Concat, LinearClassifier; string input fed "
           "from values", shapes, dict(shapes), values={"color": ["green", "red", "blue"]}, heldout=True)


def boosting_models(b: Builder) -> None:
    import lightgbm
    import onnxmltools
    import xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    x, y2, y3, yr = data()
    types = [("input", FloatTensorType([None, N_FEATURES]))]
    lgbm = lightgbm.LGBMClassifier(n_estimators=4, num_leaves=4, min_child_samples=2, random_state=SEED,
                                   verbose=-1).fit(x, y2)
    b.save(onnxmltools.convert_lightgbm(lgbm, initial_types=types), "lgbm_clf",
           "onnxmltools.convert_lightgbm(LGBMClassifier(n_estimators=4, num_leaves=4), "
           "initial_types=[('input', FloatTensorType([None, 4]))])",
           "LightGBM LGBMClassifier (4 trees, 4 leaves, binary): TreeEnsembleClassifier, default ZipMap output",
           BASE, ALT)
    lgbm_r = lightgbm.LGBMRegressor(n_estimators=4, num_leaves=4, min_child_samples=2, random_state=SEED,
                                    verbose=-1).fit(x, yr)
    b.save(onnxmltools.convert_lightgbm(lgbm_r, initial_types=types), "lgbm_reg",
           "onnxmltools.convert_lightgbm(LGBMRegressor(n_estimators=4, num_leaves=4), "
           "initial_types=[('input', FloatTensorType([None, 4]))])",
           "LightGBM LGBMRegressor (4 trees, 4 leaves): TreeEnsembleRegressor", BASE, ALT)
    xgb = xgboost.XGBClassifier(n_estimators=4, max_depth=2, random_state=SEED).fit(x, y3)
    b.save(onnxmltools.convert_xgboost(xgb, initial_types=types), "xgb_clf",
           "onnxmltools.convert_xgboost(XGBClassifier(n_estimators=4, max_depth=2), "
           "initial_types=[('input', FloatTensorType([None, 4]))])",
           "XGBoost XGBClassifier (4 rounds, depth 2, 3 classes): TreeEnsembleClassifier alone (convert_xgboost adds no ZipMap; only the ai.onnx.ml opset is imported)",
           BASE, ALT)
    xgb_r = xgboost.XGBRegressor(n_estimators=4, max_depth=2, random_state=SEED).fit(x, yr)
    b.save(onnxmltools.convert_xgboost(xgb_r, initial_types=types), "xgb_reg",
           "onnxmltools.convert_xgboost(XGBRegressor(n_estimators=4, max_depth=2), "
           "initial_types=[('input', FloatTensorType([None, 4]))])",
           "XGBoost XGBRegressor (4 rounds, depth 2): TreeEnsembleRegressor", BASE, ALT)


def main(outdir: str) -> None:
    out = fresh(outdir)
    b = Builder(out)
    sklearn_models(b)
    text_model(b)
    mixed_model(b)
    boosting_models(b)
    tools = versions("skl2onnx", "onnxmltools", "scikit-learn", "lightgbm", "xgboost", "onnx", "numpy", "pandas")
    write_manifest(out.parent / f"{NAME}.toml", f"testmodels/pipelines/{NAME}.py", tools, b.models)
    print(f"{len(b.models)} models in {out}")


if __name__ == "__main__":
    main(sys.argv[1])
