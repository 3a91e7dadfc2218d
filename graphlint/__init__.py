"""graphlint: a compiler-pass style linter for ONNX models and OpenVINO IR."""

__version__ = "0.1.0"
INFORMATION_URI = "https://github.com/graphlint/graphlint"
DOCS_URI = f"{INFORMATION_URI}/blob/main/docs"

__all__ = ["Report", "__version__", "check"]


def __getattr__(name: str) -> object:  # the library API on first use: `import graphlint` (the CLI's) stays light
    if name in ("check", "Report"):
        from graphlint import api

        return getattr(api, name)
    raise AttributeError(f"module 'graphlint' has no attribute {name!r}")
