"""Errors that end a model's lint with exit code 2 and one line on stderr."""

from __future__ import annotations


class GraphlintError(Exception):
    """Base class: the message is the one line the user sees."""


class InputError(GraphlintError):
    """The model file (or a file it references) cannot be read as a model."""

    def __init__(self, path: str, problem: str, line: int | None = None) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem
        self.line = line  # 1-based line in a text model file (OpenVINO .xml), when known


class UsageError(GraphlintError):
    """Bad options: unknown target, bad --shapes spec, unknown rule selector, ..."""


class DataError(GraphlintError):
    """Weight bytes were asked for and cannot be read safely."""
