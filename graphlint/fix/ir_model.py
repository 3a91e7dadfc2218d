"""An OpenVINO IR held as its .xml text plus the .bin it reads (kept byte-for-byte unless a pass rewrote it)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any


@dataclass
class IRModel:
    xml: str  # the .xml text
    bin_path: str  # the .bin the xml's Const offsets refer to
    bin_changed: bool = False  # True once a pass re-serialized the weights (openvino.save_model)

    @classmethod
    def load(cls, xml_path: str) -> IRModel:
        with open(xml_path, encoding="utf-8") as f:
            text = f.read()
        return cls(text, os.path.splitext(xml_path)[0] + ".bin")

    def to_openvino(self, workdir: str) -> Any:
        """The openvino.Model (read from a scratch copy of the xml, weights from bin_path)."""
        import openvino as ov

        fd, path = tempfile.mkstemp(suffix=".xml", dir=workdir)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(self.xml)
        bin_path = self.bin_path if os.path.exists(self.bin_path) else ""
        return ov.Core().read_model(path, bin_path)

    @classmethod
    def from_openvino(cls, model: Any, workdir: str) -> IRModel:
        import openvino as ov

        folder = tempfile.mkdtemp(dir=workdir)
        xml = os.path.join(folder, "model.xml")
        ov.save_model(model, xml, compress_to_fp16=False)
        with open(xml, encoding="utf-8") as f:
            return cls(f.read(), os.path.join(folder, "model.bin"), bin_changed=True)
