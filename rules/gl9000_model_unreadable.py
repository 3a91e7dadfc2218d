"""GL9000 model-unreadable: the file could not be read as a model (reported with exit code 2)."""

from __future__ import annotations

from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Rule, Severity


class ModelUnreadable(Rule):
    """The file is not a readable ONNX model or OpenVINO IR.

    ## What it checks
    Emitted by the command line, not by analysis: the file is missing, empty, truncated,
    not protobuf or not a ModelProto, malformed or unsafe XML (DTDs, entities), or a folder.
    graphlint exits with code 2 and prints one line naming the file and the problem; SARIF
    output carries a `toolExecutionNotifications` entry and this result on the file.

    ## Why it matters
    A CI gate must fail loudly on a model it could not check rather than pass it.

    ## Example
    `graphlint model.onnx` on a file cut short by a failed download.

    ## Fix
    Re-export or re-download the model; check `onnx.load` or `openvino.Core().read_model` open it.
    """

    id = "GL9000"
    name = "model-unreadable"
    severity = Severity.ERROR
    dialects = frozenset({ONNX, OPENVINO})
