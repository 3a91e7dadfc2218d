"""File access shared by the loaders: one wording for OS errors, one way to read a byte range."""

from __future__ import annotations

from graphlint.errors import DataError


def os_problem(e: OSError | ValueError) -> str:
    """The one-line problem the user sees for a model file the OS would not give us."""
    if isinstance(e, IsADirectoryError):
        return "is a directory, not a model file"
    if isinstance(e, FileNotFoundError):
        return "no such file"
    if isinstance(e, PermissionError):
        return "permission denied"
    return f"cannot read ({getattr(e, 'strerror', None) or e})"


def read_range(path: str, offset: int, nbytes: int) -> bytes:
    """Exactly ``nbytes`` from ``offset`` of an already-vetted file (weights), or DataError."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            buf = f.read(nbytes)
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror}") from None
    if len(buf) != nbytes:
        raise DataError(f"{path} is shorter than declared ({len(buf)} of {nbytes} bytes at offset {offset})")
    return buf
