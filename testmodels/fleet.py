"""The test fleet of ``graphlint scan``'s tests and bench: the committed export-pipeline models
(testmodels/pipelines: optimum, onnxruntime-genai, tf2onnx, skl2onnx, paddle2onnx, timm, and
their OpenVINO IR), the shipped example, and one export whose verdict differs between the two
TensorRT tables: a tiny Llama through the torch.export (dynamo) exporter at opset 23, which
TensorRT 10.1 cannot read (opsets 9-20; no RMSNormalization or RotaryEmbedding importer) and
10.15 can (built here with the corpus's exporter code, cached).

    python -m testmodels.fleet        # build the export, print the fleet's folders
"""

from __future__ import annotations

import os

from testmodels.common import HERE, cached

OP23 = "llama_dynamo_op23.onnx"


def build_op23(folder: str) -> None:
    import warnings

    from testmodels.corpus import exports

    arch = next(a for a in exports.ARCHS if a.name == "llama")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exports.export_one(arch, os.path.join(folder, OP23), 23, dynamo=True)


def op23_folder() -> str:
    return cached("fleet-op23", build_op23)


def sources() -> list[str]:
    """The fleet's folders, as ``graphlint scan`` takes them."""
    return [os.path.join(HERE, "pipelines"), os.path.join(HERE, "examples"), op23_folder()]


if __name__ == "__main__":
    print("\n".join(sources()))
