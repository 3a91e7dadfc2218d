"""graphlint: a compiler-pass style linter for ONNX models and OpenVINO IR."""

__version__ = "0.1.0"
INFORMATION_URI = "https://github.com/graphlint/graphlint"
DOCS_URI = f"{INFORMATION_URI}/blob/main/docs"
