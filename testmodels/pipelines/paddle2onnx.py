"""Tiny PaddlePaddle models saved with paddle.jit.save and converted by the paddle2onnx CLI.

Paddle 3.x saves a PIR program (``model.json``) beside its parameters (``model.pdiparams``);
paddle2onnx 2.x reads that and writes ONNX at its default opset. Models: a small CNN (Conv, BN,
pooling, Linear), an Embedding + LSTM text classifier and a 2-layer transformer encoder, all
with a free batch dim (and a free sequence dim for the text models) from their InputSpec.

    bash testmodels/pipelines/build.sh paddle2onnx   # venv .venvs/paddle2onnx, requirements/paddle2onnx.txt
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from testmodels.pipelines.manifest import fresh, versions, write_manifest

NAME = "paddle2onnx"
SEED = 0
VOCAB, HIDDEN = 1000, 32


def models() -> dict[str, tuple[Any, list[Any], str]]:
    """short id -> (layer in eval mode, its InputSpec list, kind)."""
    import paddle
    from paddle import nn
    from paddle.static import InputSpec

    paddle.seed(SEED)

    class SmallCNN(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2D(3, 16, 3, padding=1), nn.BatchNorm2D(16), nn.ReLU(), nn.MaxPool2D(2),
                nn.Conv2D(16, 32, 3, padding=1), nn.BatchNorm2D(32), nn.ReLU(), nn.AdaptiveAvgPool2D(1))
            self.head = nn.Linear(32, 10)

        def forward(self, x: Any) -> Any:
            return self.head(paddle.flatten(self.features(x), 1))

    class LSTMText(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(VOCAB, HIDDEN)
            self.lstm = nn.LSTM(HIDDEN, HIDDEN)
            self.head = nn.Linear(HIDDEN, 10)

        def forward(self, ids: Any) -> Any:
            out, _ = self.lstm(self.embed(ids))
            return self.head(out[:, -1])

    class Encoder(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(VOCAB, HIDDEN)
            layer = nn.TransformerEncoderLayer(HIDDEN, 4, 64, dropout=0.0)
            self.encoder = nn.TransformerEncoder(layer, 2)
            self.head = nn.Linear(HIDDEN, 10)

        def forward(self, ids: Any) -> Any:
            return self.head(self.encoder(self.embed(ids)).mean(axis=1))

    ids = [InputSpec([None, None], "int64", "input_ids")]
    out = {
        "cnn": (SmallCNN(), [InputSpec([None, 3, 32, 32], "float32", "image")],
                "paddle CNN (2 Conv2D+BatchNorm2D+ReLU, MaxPool2D, AdaptiveAvgPool2D, Linear; 3x32x32 NCHW, batch free)"),
        "lstm": (LSTMText(), ids, f"paddle Embedding({VOCAB}, {HIDDEN}) + 1-layer LSTM({HIDDEN}) + Linear(10) "
                                  "on the last step, int64 ids [batch, seq] free"),
        "encoder": (Encoder(), ids, f"paddle Embedding({VOCAB}, {HIDDEN}) + 2-layer TransformerEncoder (4 heads, "
                                    "ffn 64) + mean pool + Linear(10), int64 ids [batch, seq] free"),
    }
    for layer, _, _ in out.values():
        layer.eval()
    return out


def convert(layer: Any, spec: list[Any], dest: Path) -> str:
    """paddle.jit.save to a temporary folder, then the paddle2onnx CLI; returns the command as run."""
    import paddle

    with tempfile.TemporaryDirectory() as tmp:
        paddle.jit.save(layer, str(Path(tmp) / "model"), input_spec=spec)
        program = "model.json" if (Path(tmp) / "model.json").exists() else "model.pdmodel"
        cmd = ["paddle2onnx", "--model_dir", tmp, "--model_filename", program,
               "--params_filename", "model.pdiparams", "--save_file", str(dest)]
        exe = str(Path(sys.executable).with_name("paddle2onnx"))
        subprocess.run([exe, *cmd[1:]], check=True, capture_output=True, text=True)
    return " ".join(["paddle.jit.save(layer, 'dir/model', input_spec); paddle2onnx --model_dir dir",
                     *cmd[3:7], "--save_file model.onnx"])


def main(outdir: str) -> None:
    out = fresh(outdir)
    rows = []
    shapes = {"cnn": ({"image": [1, 3, 32, 32]}, {"image": [2, 3, 32, 32]}),
              "lstm": ({"input_ids": [1, 8]}, {"input_ids": [2, 16]}),
              "encoder": ({"input_ids": [1, 8]}, {"input_ids": [2, 16]})}
    for short, (layer, spec, kind) in models().items():
        (out / short).mkdir()
        pipeline = convert(layer, spec, out / short / "model.onnx")
        base, alt = shapes[short]
        rows.append({"id": f"pl_{NAME}_{short}", "file": f"{short}/model.onnx", "pipeline": pipeline,
                     "kind": kind, "heldout": short == "lstm", "shapes": base, "alt_shapes": alt})
    tools = versions("paddle2onnx", "paddlepaddle", "onnx", "onnxoptimizer", "numpy")
    write_manifest(out.parent / f"{NAME}.toml", f"testmodels/pipelines/{NAME}.py", tools, rows)
    print(f"{len(rows)} models in {out}")


if __name__ == "__main__":
    main(sys.argv[1])
