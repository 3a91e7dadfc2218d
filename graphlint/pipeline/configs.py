"""The JSON configs of a deployment folder, parsed as the runtime reads them, with key lines.

Only plain JSON is read (never code: a folder's ``*.py`` remote code is not executed), each file
at most :data:`MAX_BYTES`. A file that is missing is absent from :class:`Configs`; one that is
not JSON (or too large) is recorded in ``problems`` and treated as absent, so a rule whose
premise it held says the premise is unknown instead of guessing.

``line(file, "size.height")`` finds the 1-based line where a key is written, so a finding on a
config lands on that line in SARIF (code scanning shows it in the file the user must change).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_BYTES = 8 << 20  # tokenizer.json can be large; the configs graphlint reads are small
FILES = ("config.json", "preprocessor_config.json", "processor_config.json", "generation_config.json",
         "tokenizer_config.json", "genai_config.json", "special_tokens_map.json", "chat_template.json",
         "video_preprocessor_config.json")
_MISSING = object()


@dataclass
class Configs:
    folder: str
    data: dict[str, dict[str, Any]] = field(default_factory=dict)  # file name -> parsed object
    text: dict[str, str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)  # file name -> why it was not read

    def __contains__(self, name: str) -> bool:
        return name in self.data

    def get(self, name: str) -> Mapping[str, Any]:
        return self.data.get(name, {})

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def value(self, name: str, key: str, default: Any = None) -> Any:
        """``key`` a dotted path ("text_config.hidden_size"); ``default`` when any part is missing."""
        cur: Any = self.data.get(name, _MISSING)
        for part in key.split("."):
            if not isinstance(cur, Mapping) or part not in cur:
                return default
            cur = cur[part]
        return cur

    def line(self, name: str, key: str) -> int | None:
        """The line of ``key`` (its last part, searched after each earlier part) in file ``name``."""
        text = self.text.get(name)
        if text is None:
            return None
        pos = 0
        for part in key.split("."):
            m = re.compile(r'"' + re.escape(part) + r'"\s*:').search(text, pos)
            if m is None:
                return None
            pos = m.start()
        return text.count("\n", 0, pos) + 1


def read_configs(folder: str, names: tuple[str, ...] = FILES) -> Configs:
    out = Configs(folder)
    for name in names:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        try:
            if os.path.getsize(path) > MAX_BYTES:
                out.problems[name] = f"larger than {MAX_BYTES >> 20} MB"
                continue
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            obj = json.loads(text)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            out.problems[name] = f"not readable JSON ({type(e).__name__}: {str(e).splitlines()[0][:120]})"
            continue
        if not isinstance(obj, dict):
            out.problems[name] = "not a JSON object"
            continue
        out.data[name] = obj
        out.text[name] = text
    return out
