"""ONNX external data from an untrusted model: refused with a finding, nothing outside the folder opened.

The proof that nothing outside the model folder is opened is an audit hook (PEP 578) in a
separate interpreter: every ``open`` event while graphlint loads the models, reads every
weight a rule could ask for and renders SARIF is recorded, and none may touch the folder
holding the sentinel file. Permissions cannot prove it here because the tests run as root.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from graphlint.load import load_model
from tests.hostile_support import assert_loads, messages

WEIGHTS = np.arange(16, dtype=np.float32).reshape(4, 4)


def ext_model(folder, location: str, offset: int = 0, length: int | None = 64, name: str = "ext.onnx") -> str:
    """MatMul(x, w) whose 4x4 float weight ``w`` lives at ``location``."""
    w = T(name="w", data_type=T.FLOAT, dims=[4, 4], data_location=T.EXTERNAL)
    entries = {"location": location, "offset": str(offset)}
    if length is not None:
        entries["length"] = str(length)
    for k, v in entries.items():
        e = w.external_data.add()
        e.key, e.value = k, v
    g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], "ext",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 4])], initializer=[w])
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "wb") as f:
        f.write(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString())
    return path


def hostile_models(tmp_path) -> tuple[dict[str, tuple[str, str]], str]:
    """case -> (model path, words the refusal must contain); and the outside folder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.bin"
    secret.write_bytes(WEIGHTS.tobytes() * 4)  # valid weights: a refusal is not for lack of data
    models = tmp_path / "models"
    cases: dict[str, tuple[str, str]] = {}

    def case(name: str, location: str, says: str, **kw) -> str:
        folder = models / name
        folder.mkdir(parents=True, exist_ok=True)
        cases[name] = (ext_model(str(folder), location, **kw), says)
        return str(folder)

    case("absolute", str(secret), "absolute location")
    case("dotdot", "../../outside/secret.bin", "'..' path")
    case("dotdot_inside_then_out", "sub/../../../outside/secret.bin", "resolves outside")
    f = case("symlink_file", "data.bin", "(symlink) resolves outside")
    os.symlink(secret, os.path.join(f, "data.bin"))
    f = case("symlink_dir", "sub/secret.bin", "(symlink) resolves outside")
    os.symlink(outside, os.path.join(f, "sub"))
    f = case("symlink_device", "zero.bin", "resolves outside")
    os.symlink("/dev/zero", os.path.join(f, "zero.bin"))
    case("missing", "nope.bin", "does not exist")
    f = case("offset_past_end", "w.bin", "past the end", offset=1000)
    (models / "offset_past_end" / "w.bin").write_bytes(WEIGHTS.tobytes())
    f = case("length_past_end", "w.bin", "past the end", offset=32)
    (models / "length_past_end" / "w.bin").write_bytes(WEIGHTS.tobytes())
    f = case("length_mismatch", "w.bin", "disagrees with the tensor's declared size", length=32)
    (models / "length_mismatch" / "w.bin").write_bytes(WEIGHTS.tobytes())
    f = case("directory", "adir", "is a directory")
    os.mkdir(os.path.join(f, "adir"))
    f = case("fifo", "pipe.bin", "not a regular file")
    os.mkfifo(os.path.join(f, "pipe.bin"))
    f = case("nul_byte", "w.bin\x00../../outside/secret.bin", "NUL byte")
    f = case("negative_offset", "w.bin", "negative offset", offset=-16)
    (models / "negative_offset" / "w.bin").write_bytes(WEIGHTS.tobytes())
    return cases, str(outside)


def test_every_hostile_reference_is_refused_with_a_finding(tmp_path):
    cases, _ = hostile_models(tmp_path)
    for name, (path, says) in cases.items():
        run = assert_loads(path, str(tmp_path), "--target", "ort")
        text = messages(run)
        assert "refused" in text and says in text, (name, text)
        tensor = load_model(path).graph.values["w"].const
        assert tensor.location == "external:refused" and tensor.shape == (4, 4), name
        with pytest.raises(ValueError):
            tensor.numpy()  # no reader at all: nothing a rule can do opens the file


def test_device_file_inside_the_folder(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    try:
        os.mknod(folder / "null.bin", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot create a device node here ({e.strerror})")
    path = ext_model(str(folder), "null.bin")
    assert "not a regular file" in messages(assert_loads(path, str(tmp_path), "--target", "ort"))


def test_valid_external_data_is_read(tmp_path):
    folder = tmp_path / "good"
    path = ext_model(str(folder), "weights/w.bin", offset=64)
    (folder / "weights").mkdir()
    (folder / "weights" / "w.bin").write_bytes(b"\0" * 64 + WEIGHTS.tobytes())
    assert "refused" not in messages(assert_loads(path, str(tmp_path), "--target", "ort"))
    np.testing.assert_array_equal(load_model(path).graph.values["w"].const.numpy(), WEIGHTS)


def test_hugging_face_cache_layout_symlinks_are_followed(tmp_path):
    """snapshots/<rev>/{model.onnx,model.onnx.data} both link into blobs/: data beside the real model."""
    blobs = tmp_path / "hub" / "blobs"
    snap = tmp_path / "hub" / "snapshots" / "abc123"
    model = ext_model(str(blobs), "model.onnx.data", name="m-blob")
    (blobs / "d-blob").write_bytes(WEIGHTS.tobytes())
    snap.mkdir(parents=True)
    os.symlink("../../blobs/m-blob", snap / "model.onnx")
    os.symlink("../../blobs/d-blob", snap / "model.onnx.data")
    assert os.path.realpath(model) == os.path.realpath(snap / "model.onnx")
    tensor = load_model(str(snap / "model.onnx")).graph.values["w"].const
    np.testing.assert_array_equal(tensor.numpy(), WEIGHTS)


AUDIT = r"""
import json, os, sys
outside = os.path.realpath(sys.argv[1])
seen = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        p = os.fsdecode(args[0])
        real = os.path.realpath(p)
        if real == outside or real.startswith(outside + os.sep) or real.startswith("/dev/zero"):
            seen.append(p)
sys.addaudithook(hook)

from graphlint.lint import LintOptions, lint_paths
from graphlint.report import render
run = lint_paths(sys.argv[3:], LintOptions(targets=["ort"]))
for res in run.results:  # read every weight a rule could ask for
    for g in res.model.graph.graphs():
        for v in g.values.values():
            if v.const is not None:
                try:
                    v.const.numpy()
                except Exception:
                    pass
for fmt in ("text", "json", "sarif"):
    render(run, fmt)
during = list(seen)
with open(sys.argv[2], "rb") as f:  # control: the hook does see an open of the sentinel
    f.read(1)
print(json.dumps({"during": during, "control": seen[len(during):], "models": len(run.results),
                  "failures": len(run.failures)}))
"""


def test_nothing_outside_the_model_folder_is_opened(tmp_path):
    cases, outside = hostile_models(tmp_path)
    paths = [p for p, _ in cases.values()]
    proc = subprocess.run([sys.executable, "-c", AUDIT, outside, os.path.join(outside, "secret.bin"), *paths],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["models"] == len(paths) and report["failures"] == 0
    assert report["during"] == [], report["during"]
    assert report["control"], "the audit hook saw nothing: it proves nothing"

