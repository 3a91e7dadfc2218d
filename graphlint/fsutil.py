"""Reading the user's TOML files, and writing files without ever leaving a partial or clobbered file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

from graphlint.compat import tomllib
from graphlint.errors import UsageError


def read_toml(path: str) -> dict[str, Any]:
    """A TOML file the user gave or keeps (a configuration, a folder's graphlint.toml); unreadable or
    invalid TOML is a usage error naming the file."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise UsageError(f"cannot read configuration {path!r}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None


def check_output_path(path: str) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"output folder {os.path.dirname(path) or '.'!r} does not exist")
    if os.path.isdir(path):
        raise UsageError(f"output {path!r} is a directory")
    return folder


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """Yield a temporary path in the destination folder; rename it over ``path`` on success only."""
    folder = check_output_path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    os.close(fd)
    # mkstemp creates 0600; a replaced file keeps its mode, a new one gets what open() would give.
    os.chmod(tmp, os.stat(path).st_mode & 0o7777 if os.path.exists(path) else 0o666 & ~_umask())
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_text(path: str, text: str) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
