"""Write a fixed model atomically: a temporary file in the destination folder, then a rename.

ONNX with external data stays external (a new ``<model>.data`` beside the new model, renamed
into place before the model that references it). OpenVINO IR: the .bin is copied byte for byte
when no pass touched the weights, else the re-serialized one is used; .bin lands before .xml.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import onnx

from graphlint.fix.ir_model import IRModel
from graphlint.fsutil import atomic_path, check_output_path

_TWO_GB = 2**31 - 1


def has_external_data(model: onnx.ModelProto) -> bool:
    from onnx.external_data_helper import _get_all_tensors

    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in _get_all_tensors(model))


def save_onnx(model: onnx.ModelProto, path: str, *, external: bool) -> list[str]:
    """Write ``model`` to ``path``; return the files written."""
    folder = check_output_path(path)
    external = external or model.ByteSize() >= _TWO_GB
    if not external:
        with atomic_path(path) as tmp:
            onnx.save_model(model, tmp)
        return [path]
    data_name = os.path.basename(path) + ".data"
    scratch = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.", dir=folder)
    try:
        tmp_model = os.path.join(scratch, os.path.basename(path))
        onnx.save_model(model, tmp_model, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=data_name, size_threshold=1024)
        written = [path]
        if os.path.exists(os.path.join(scratch, data_name)):
            os.replace(os.path.join(scratch, data_name), os.path.join(folder, data_name))
            written.append(os.path.join(folder, data_name))
        os.replace(tmp_model, path)
        return written
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def save_ir(model: IRModel, xml_path: str) -> list[str]:
    """Write the .bin (a byte copy of the original unless re-serialized) then the .xml."""
    check_output_path(xml_path)
    bin_path = os.path.splitext(xml_path)[0] + ".bin"
    written = []
    same = os.path.exists(bin_path) and os.path.exists(model.bin_path) and os.path.samefile(bin_path, model.bin_path)
    if os.path.exists(model.bin_path) and not same:
        with atomic_path(bin_path) as tmp:
            shutil.copyfile(model.bin_path, tmp)
        written.append(bin_path)
    with atomic_path(xml_path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(model.xml)
    written.insert(0, xml_path)
    return written
