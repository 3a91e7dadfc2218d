"""Resolve ONNX external-data references without ever leaving the model's folder.

A model file is untrusted: its ``location`` strings may be absolute, climb out with
``..``, or name a symlink that points elsewhere. We resolve every location against
the model folder with ``realpath`` (which reads link targets but opens no file) and
refuse anything that ends up outside. Only ``stat`` is used to check sizes; bytes are
read only when a rule asks for a tensor's values.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

import numpy as np

from graphlint.load.files import read_range


@dataclass(frozen=True, slots=True)
class ExternalRef:
    location: str  # as written in the model
    offset: int
    length: int | None


class ExternalDataRefused(Exception):
    """An external-data reference that must not (or cannot) be followed."""


def parse_ref(entries: dict[str, str]) -> ExternalRef:
    try:
        offset = int(entries.get("offset", "0") or 0)
        length = int(entries["length"]) if entries.get("length") else None
    except ValueError as e:
        raise ExternalDataRefused(f"non-numeric offset/length ({e})") from None
    if offset < 0 or (length is not None and length < 0):
        raise ExternalDataRefused("negative offset or length")
    return ExternalRef(entries.get("location", ""), offset, length)


def resolve(model_dir: str, ref: ExternalRef, expected_bytes: int | None, also_root: str | None = None) -> str:
    """Return the real path of the data file, or raise ExternalDataRefused saying why.

    ``also_root`` is the folder the model file itself really lives in, when the model path
    is a symlink: Hugging Face caches link ``snapshots/<rev>/model.onnx`` and its data file
    into ``blobs/``, and data next to the real model file is as trusted as the model.
    """
    return Resolver(model_dir, also_root).resolve(ref, expected_bytes)


class Resolver:
    """:func:`resolve` for the many tensors of one model: each location is vetted once (an LLM
    keeps thousands of tensors in one data file, and realpath costs a dozen lstat calls)."""

    def __init__(self, model_dir: str, also_root: str | None = None) -> None:
        root = os.path.realpath(model_dir)
        self.root = root
        self.roots = {root, os.path.realpath(also_root)} if also_root else {root}
        self._files: dict[str, tuple[str, int] | ExternalDataRefused] = {}

    def resolve(self, ref: ExternalRef, expected_bytes: int | None) -> str:
        loc = ref.location
        found = self._files.get(loc)
        if found is None:
            try:
                found = self._locate(loc)
            except ExternalDataRefused as e:
                found = e
            self._files[loc] = found
        if isinstance(found, ExternalDataRefused):
            raise ExternalDataRefused(str(found))
        real, size = found
        length = ref.length if ref.length is not None else expected_bytes
        if ref.offset > size or (length is not None and ref.offset + length > size):
            raise ExternalDataRefused(
                f"offset {ref.offset} + length {length} is past the end of {loc!r} ({size} bytes)"
            )
        if ref.length is not None and expected_bytes is not None and ref.length != expected_bytes:
            raise ExternalDataRefused(
                f"length {ref.length} in {loc!r} disagrees with the tensor's declared size ({expected_bytes} bytes)"
            )
        return real

    def _locate(self, loc: str) -> tuple[str, int]:
        """The real path and size of the data file ``loc`` names, if it may be read."""
        if not loc:
            raise ExternalDataRefused("external data has no location")
        if "\x00" in loc:
            raise ExternalDataRefused("location contains a NUL byte")
        if os.path.isabs(loc) or loc.startswith(("/", "\\")) or (len(loc) > 1 and loc[1] == ":"):
            raise ExternalDataRefused(f"absolute location {loc!r} is outside the model folder")
        real = os.path.realpath(os.path.join(self.root, loc))
        if not any(os.path.commonpath([r, real]) == r for r in self.roots):
            kind = "symlink" if ".." not in loc.replace("\\", "/").split("/") else "'..' path"
            raise ExternalDataRefused(f"location {loc!r} ({kind}) resolves outside the model folder")
        try:
            st = os.stat(real)
        except FileNotFoundError:
            raise ExternalDataRefused(f"data file {loc!r} does not exist") from None
        except OSError as e:
            raise ExternalDataRefused(f"data file {loc!r} cannot be read ({e.strerror})") from None
        if not stat.S_ISREG(st.st_mode):
            what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise ExternalDataRefused(f"location {loc!r} is {what}")
        return real, st.st_size


def reader(real_path: str, offset: int, nbytes: int, dtype: np.dtype, shape: tuple[int, ...]):
    """A closure that reads exactly one tensor's bytes from an already-vetted file."""

    def read() -> np.ndarray:
        return np.frombuffer(read_range(real_path, offset, nbytes), dtype=dtype).reshape(shape)

    return read
