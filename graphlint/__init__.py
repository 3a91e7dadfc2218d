"""graphlint: a compiler-pass style linter for ONNX models and OpenVINO IR."""

__version__ = "0.1.0"
INFORMATION_URI = "https://github.com/graphlint/graphlint"
DOCS_URI = f"{INFORMATION_URI}/blob/main/docs"

__all__ = ["FixResult", "Report", "__version__", "check", "fix_model"]


def __getattr__(name: str) -> object:  # the library API on first use: `import graphlint` (the CLI's) stays light
    if name in ("check", "fix_model", "Report", "FixResult"):
        from graphlint import api

        return getattr(api, "fix" if name == "fix_model" else name)  # graphlint.fix is the rewrite package
    raise AttributeError(f"module 'graphlint' has no attribute {name!r}")
