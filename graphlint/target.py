"""Target profiles: data files in rules/data/targets/ read by this small generic code.

A target spec on the command line is ``NAME[@VERSION_OR_DEVICE]``: ``trt``, ``trt@10.1``,
``ort``, ``ort@cpu``, ``openvino``, ``openvino@npu``. Each profile file describes one
engine version: the dialects it takes, the opset range per domain, options such as
whether every dim must be static, and the devices it has (OpenVINO) with per-device
overrides. Support tables (which op, which constraint) are separate data files named by
the profile and read through :meth:`Target.data`.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from graphlint.compat import tomllib
from graphlint.errors import UsageError


def data_dir() -> str:
    """Folder of the built-in pack's data files (rules/data in a checkout)."""
    return str(resources.files("graphlint_rules") / "data")


@functools.cache
def _profiles() -> dict[str, list[dict[str, Any]]]:
    folder = os.path.join(data_dir(), "targets")
    out: dict[str, list[dict[str, Any]]] = {}
    for fn in sorted(os.listdir(folder)):
        if fn.endswith(".toml"):
            with open(os.path.join(folder, fn), "rb") as f:
                prof = tomllib.load(f)
            prof["_file"] = f"rules/data/targets/{fn}"
            out.setdefault(prof["name"], []).append(prof)
    return out


def target_names() -> list[str]:
    return sorted(_profiles())


def table_versions() -> list[str]:
    """One line per target profile: which engine release its support table was made from, and where."""
    out = []
    for name in target_names():
        for prof in _profiles()[name]:
            rel = prof.get("data", {}).get("support")
            table = data_file(rel) if rel else {}
            made = f"{table.get('engine', name)} {table.get('version', prof['version'])}" if table else "no table"
            out.append(f"{name}@{prof['version']}: {prof.get('title', name)}, support table from {made} "
                       f"({table.get('source', 'no source')})")
    return out


@dataclass(frozen=True)
class Target:
    name: str  # trt | ort | openvino
    version: str
    device: str  # "" for engines without devices (trt), else cpu/gpu/npu
    profile: dict[str, Any] = field(repr=False, compare=False, hash=False)

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}" + (f":{self.device}" if self.device else "")

    @property
    def title(self) -> str:
        t = self.profile.get("title", self.name)
        return f"{t} ({self.device.upper()})" if self.device else t

    def option(self, key: str, default: Any = None) -> Any:
        dev = self.profile.get("devices", {}).get(self.device, {}) if self.device else {}
        if key in dev:
            return dev[key]
        return self.profile.get("options", {}).get(key, default)

    @property
    def dialects(self) -> list[str]:
        return list(self.profile.get("dialects", ["onnx"]))

    def opset_range(self, domain: str) -> tuple[int, int] | None:
        r = self.profile.get("opsets", {}).get(domain)
        return (int(r[0]), int(r[1])) if r else None

    @property
    def sources(self) -> list[str]:
        return list(self.profile.get("sources", []))

    def data(self, key: str) -> Any:
        """Load the data file the profile names under [data] ``key`` (JSON or TOML), cached."""
        rel = self.profile.get("data", {}).get(key)
        if not rel:
            return None
        return data_file(rel)


@functools.cache
def data_file(rel: str) -> Any:
    """A data file of the built-in pack (``rel`` relative to rules/data/), parsed once per process."""
    path = os.path.join(data_dir(), rel)
    with open(path, "rb") as f:
        return tomllib.load(f) if rel.endswith(".toml") else json.load(f)


def resolve(spec: str) -> Target:
    """Parse ``NAME[@VERSION|@DEVICE]`` (also ``NAME@VERSION:DEVICE``) into a Target."""
    name, _, rest = spec.strip().lower().partition("@")
    profiles = _profiles().get(name)
    if not profiles:
        raise UsageError(f"unknown target {name!r} (choose from {', '.join(target_names())})")
    version, _, device = rest.partition(":")
    chosen = None
    if version and not version[0].isdigit():  # openvino@npu: a device, not a version
        version, device = "", version
    if version:
        chosen = next((p for p in profiles if str(p["version"]) == version), None)
        if chosen is None:
            known = ", ".join(str(p["version"]) for p in profiles)
            raise UsageError(f"unknown {name} version {version!r} (known: {known})")
    else:
        chosen = next((p for p in profiles if p.get("default")), profiles[-1])
    devices = chosen.get("devices", {})
    if device:
        if device not in devices:
            raise UsageError(f"{name} has no device {device!r} (choose from {', '.join(devices) or 'none'})")
    else:
        device = chosen.get("default_device", "")
    return Target(name, str(chosen["version"]), device, chosen)
