"""Keras models converted by tf2onnx: from_keras and the saved-model CLI.

tf2onnx rewrites TensorFlow graphs op by op (NHWC convolutions wrapped in Transposes, fused
LSTM/GRU loops matched back to ONNX LSTM/GRU, HardSwish as HardSigmoid*Mul) and names every
unknown dim ``unk__N``, so the batch and sequence dims are free. Models: two Keras applications
with ``weights=None`` and 10 classes at 96x96 (random weights, nothing downloaded), and two
recurrent text classifiers; one application also goes through ``tf.saved_model.save`` and
``python -m tf2onnx.convert --saved-model``.

    bash testmodels/pipelines/build.sh tf2onnx      # venv .venvs/tf2onnx, requirements/tf2onnx.txt
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

from testmodels.pipelines.manifest import fresh, versions, write_manifest

NAME = "tf2onnx"
SEED = 0
IMAGE = (96, 96, 3)
VOCAB, EMBED, HIDDEN = 1000, 32, 32


def applications() -> dict[str, Any]:
    import tensorflow as tf

    apps = tf.keras.applications
    tf.keras.utils.set_random_seed(SEED)
    return {
        "mobilenetv2": apps.MobileNetV2(input_shape=IMAGE, alpha=0.35, weights=None, classes=10),
        "mobilenetv3small": mobilenetv3small_head(),
    }


def mobilenetv3small_head() -> Any:
    """MobileNetV3Small without its top plus Dense(10), as a user fine-tunes it.

    Its own top keeps a 1024-channel 1x1 conv whatever alpha is (keras 2.15 mobilenet_v3.py,
    ``last_point_ch``): 4.0 MB in float32, past the corpus' 3 MB per file.
    """
    import tensorflow as tf

    base = tf.keras.applications.MobileNetV3Small(input_shape=IMAGE, alpha=0.75, weights=None, include_top=False,
                                                  pooling="avg")
    return tf.keras.Model(base.input, tf.keras.layers.Dense(10, activation="softmax")(base.output))


def text_models() -> dict[str, Any]:
    import tensorflow as tf

    layers = tf.keras.layers
    tf.keras.utils.set_random_seed(SEED)
    ids = tf.keras.Input(shape=(None,), dtype="int32", name="input_ids")
    h = layers.Embedding(VOCAB, EMBED)(ids)
    lstm = tf.keras.Model(ids, layers.Dense(10)(layers.LSTM(HIDDEN)(h)), name="lstm_text")
    ids2 = tf.keras.Input(shape=(None,), dtype="int32", name="input_ids")
    h2 = layers.Embedding(VOCAB, EMBED)(ids2)
    h2 = layers.Bidirectional(layers.GRU(HIDDEN, return_sequences=True))(h2)
    bigru = tf.keras.Model(ids2, layers.Dense(10)(layers.GlobalMaxPooling1D()(h2)), name="bigru_text")
    return {"lstm": lstm, "bigru": bigru}


def from_keras(model: Any, path: Path) -> None:
    import tf2onnx

    tf2onnx.convert.from_keras(model, output_path=str(path))


def saved_model_cli(model: Any, path: Path) -> list[str]:
    """tf.saved_model.save, then the converter's CLI on the folder (default opset and signature)."""
    import tensorflow as tf

    with tempfile.TemporaryDirectory() as tmp:
        tf.saved_model.save(model, tmp)
        cmd = [sys.executable, "-m", "tf2onnx.convert", "--saved-model", tmp, "--output", str(path)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    return ["python", "-m", "tf2onnx.convert", "--saved-model", "<saved_model dir>", "--output", path.name]


def input_name(path: Path) -> str:
    import onnx

    m = onnx.load(str(path))
    inits = {t.name for t in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    assert len(names) == 1, names
    return names[0]


def main(outdir: str) -> None:
    out = fresh(outdir)
    models: list[dict[str, Any]] = []

    def add(short: str, rel: str, pipeline: str, kind: str, base: list[int], alt: list[int],
            heldout: bool = False) -> None:
        name = input_name(out / rel)
        models.append({"id": f"pl_{NAME}_{short}", "file": rel, "pipeline": pipeline, "kind": kind,
                       "heldout": heldout, "shapes": {name: base}, "alt_shapes": {name: alt}})

    img, img2 = [1, *IMAGE], [2, *IMAGE]
    apps = applications()
    kinds = {"mobilenetv2": "Keras MobileNetV2 (alpha 0.35, 96x96 NHWC, 10 classes, weights=None)",
             "mobilenetv3small": "Keras MobileNetV3Small (alpha 0.75, 96x96 NHWC, weights=None, include_top=False, "
                                 "pooling avg) + Dense(10) softmax; Rescaling and hard-swish inside, tf2onnx's "
                                 "transpose optimizer fails on it (logged, skipped), so ~100 Transposes stay"}
    for short, model in apps.items():
        (out / short).mkdir()
        from_keras(model, out / short / "model.onnx")
        add(short, f"{short}/model.onnx", "tf2onnx.convert.from_keras(model, output_path=...)",
            kinds[short] + ": from_keras, batch dim unk__", img, img2)
    (out / "mobilenetv3small_savedmodel").mkdir()
    cmd = saved_model_cli(apps["mobilenetv3small"], out / "mobilenetv3small_savedmodel" / "model.onnx")
    add("mobilenetv3small_savedmodel", "mobilenetv3small_savedmodel/model.onnx",
        "tf.saved_model.save(model, dir); " + " ".join(cmd),
        kinds["mobilenetv3small"] + ": saved model through the tf2onnx.convert CLI, batch dim unk__", img, img2)
    texts = {"lstm": f"Keras Embedding({VOCAB}, {EMBED}) + LSTM({HIDDEN}) + Dense(10) text classifier, int32 ids "
                     "[batch, seq] (both unk__): from_keras",
             "bigru": f"Keras Embedding({VOCAB}, {EMBED}) + Bidirectional(GRU({HIDDEN}, return_sequences)) + "
                      "GlobalMaxPooling1D + Dense(10), int32 ids [batch, seq] (both unk__): from_keras"}
    for short, model in text_models().items():
        (out / short).mkdir()
        from_keras(model, out / short / "model.onnx")
        add(short, f"{short}/model.onnx", "tf2onnx.convert.from_keras(model, output_path=...)", texts[short],
            [1, 8], [2, 16], heldout=True)
    tools = versions("tf2onnx", "tensorflow-cpu", "keras", "onnx", "protobuf", "numpy")
    write_manifest(out.parent / f"{NAME}.toml", f"testmodels/pipelines/{NAME}.py", tools, models)
    print(f"{len(models)} models in {out}")


if __name__ == "__main__":
    main(sys.argv[1])
