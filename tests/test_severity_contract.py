"""The severity contract (docs/severity.md), checked over the rule pack on real models.

Every rule runs on every target over the test models (real exports, the models of the issue-17
false-positive classes, broken models that must be errors) and a sample of the ONNX backend node
tests. Every error finding of the built-in pack must carry a ``basis`` that resolves to a shipped
data entry or a versioned document; no finding whose premise is unknown may be an error; and
nothing a finding or the pack cites may point into ``../shared``, which users do not have.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re

import pytest

from graphlint.lint import LintOptions, lint_paths
from graphlint.registry import load_rules
from graphlint.rule import Severity
from graphlint.target import data_dir
from tests.conftest import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

TARGETS = ("ort", "openvino", "trt", "trt@10.1", "openvino@npu")
# A document cited as a basis names its version: a tag, a commit or a versioned path.
VERSIONED = re.compile(r"/(blob|tree)/(v?\d[\w.\-]*|[0-9a-f]{40}|release/[\w.\-]+)/|/\d+(\.\d+)*/|/20\d\d/")
SHARED = re.compile(r"(^|[\s(\[\"'/])(\.\./)?shared/reference|\.\./shared")


@functools.cache
def _data(rel: str):
    with open(os.path.join(data_dir(), rel), "rb") as f:
        return tomllib.load(f) if rel.endswith(".toml") else json.load(f)


def basis_problem(basis: object) -> str | None:
    """Why a basis does not resolve, or None."""
    if not isinstance(basis, str):
        return "no basis"
    kind, _, ref = basis.partition(":")
    if kind == "document":
        return None if ref.startswith("https://") and VERSIONED.search(ref) else f"unversioned document {ref!r}"
    path, _, entry = ref.partition("#")
    if not path.startswith("rules/data/") or not os.path.isfile(os.path.join(data_dir(), path[len("rules/data/"):])):
        return f"no shipped data file {path!r}"
    data = _data(path[len("rules/data/"):])
    if kind == "engine-fact":
        facts = data.get("fact") or data.get("complaint") or []
        fact = next((f for f in facts if f.get("id") == entry), None)
        # its source: a cited document, or the engine version it was measured on (engine_drift.toml)
        if fact is None or not (fact.get("source") or fact.get("measured")) or not fact.get("evidence"):
            return f"no fact {entry!r} with source and evidence in {path}"
        return None
    if kind != "support-table":
        return f"unknown basis kind {kind!r}"
    node = data
    for part in entry.split("."):  # a profile section or option (options.x), a table's entry (opsets.opset8)
        node = node.get(part) if isinstance(node, dict) else None
    if node is not None:
        return None
    if "ops" in data:  # TensorRT matrix: every row of the document is in the table; absent = no importer
        return None
    op = entry.partition("/")[2]
    if "domains" in data:  # ORT / OpenVINO tables: an op absent from a present domain is refused
        return None if op else f"bad entry {entry!r}"
    return f"no entry {entry!r} in {path}"


def check(findings) -> list[str]:
    """Contract violations among findings of the built-in pack."""
    bad = []
    for f in findings:
        text = f"{f.model}: {f.rule_id} {f.target}: {f.message[:160]}"
        if f.rule_id.startswith("GL9"):
            continue  # tool findings: about graphlint's run, not a target (docs/severity.md)
        if SHARED.search(f.message) or SHARED.search(json.dumps(f.properties, default=str)):
            bad.append(f"cites ../shared: {text}")
        if f.properties.get("unknown"):
            if f.severity >= Severity.ERROR:
                bad.append(f"unknown premise as an error: {text}")
            if "unknown" not in f.message:
                bad.append(f"unknown premise not said in the message: {text}")
        if f.severity >= Severity.ERROR:
            why = basis_problem(f.properties.get("basis"))
            if why:
                bad.append(f"{why}: {text}")
    return bad


def lint_all(paths: list[str], shapes: dict[str, list[str]] | None = None) -> list:
    from graphlint.shapes_spec import parse_profiles

    out = []
    for target in TARGETS:
        for p in paths:
            opts = LintOptions(targets=[target])
            if shapes and os.path.basename(p) in shapes:
                opts.rule_options["shapes"] = parse_profiles(shapes[os.path.basename(p)])
            run = lint_paths([p], opts)
            out.extend(run.findings())
    return out


def _builtin(findings) -> list:
    ids = {r.id for r in load_rules() if r.pack == "builtin"}
    return [f for f in findings if f.rule_id in ids]


def test_every_error_on_the_test_models_has_a_basis(tmp_path):
    from testmodels.export_drift import exports
    from testmodels.export_multimodal import models as multimodal
    from testmodels.fp_classes import models as fp_classes
    from testmodels.quantized import models as quantized
    from tests import test_validity_table as broken
    from tests.models import contrib_model, save, two_bad_nodes

    paths = sorted(glob.glob(os.path.join(fp_classes(), "*.onnx")) + glob.glob(os.path.join(exports(), "*.onnx"))
                   + glob.glob(os.path.join(multimodal(), "*.onnx")) + glob.glob(os.path.join(multimodal(), "*.xml"))
                   + glob.glob(os.path.join(quantized(), "*.onnx")))
    paths.append(os.path.join(ROOT, "testmodels", "examples", "tiny_vlm.onnx"))
    paths += [save(two_bad_nodes(), str(tmp_path), "two_bad.onnx"), save(contrib_model(), str(tmp_path), "c.onnx")]
    helper, vi = broken.helper, broken._vi
    for name, m in {
        "undefined": broken._model([helper.make_node("Add", ["x", "ghost"], ["y"])], [vi("x")], [vi("y")]),
        "dup": broken._model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["a"]),
                              helper.make_node("Abs", ["a"], ["y"])], [vi("x")], [vi("y")]),
        "attr": broken._model([helper.make_node("Relu", ["x"], ["y"], foo=1)], [vi("x")], [vi("y")]),
    }.items():
        paths.append(save(m, str(tmp_path), f"{name}.onnx"))
    shapes = {"fusion_fixed_reshape.onnx": ["pixel_values:1x3x32x32,2x3x32x32,8x3x32x32", "input_ids:1x1,2x7,8x64"],
              "fusion.onnx": ["pixel_values:1x3x32,2x3x32,4x3x32", "nope:1x1"]}
    findings = _builtin(lint_all(paths, shapes))
    assert not check(findings), "\n".join(check(findings)[:20])
    errors = {f.rule_id for f in findings if f.severity >= Severity.ERROR}
    # the check saw errors of the families that emit them, on real and broken models alike
    assert {"GL0001", "GL1002", "GL2003", "GL3002", "GL3007", "GL7002", "GL7003"} <= errors, errors
    assert any(f.properties.get("unknown") for f in findings)  # and guesses, kept below error


@pytest.mark.parametrize("target", ["ort", "openvino", "trt"])
def test_healthy_real_models_have_no_errors(target):
    """The false-positive classes of issue 17: every one of these runs in ONNX Runtime and OpenVINO."""
    import onnx

    from testmodels.fp_classes import models as fp_classes
    from tests.test_validity_table import engines

    for p in sorted(glob.glob(os.path.join(fp_classes(), "*.onnx"))):
        if os.path.basename(p).startswith("broken_"):
            continue  # the broken twin: test_shapes_multimodal shows its error is real
        if target != "trt":
            assert engines(onnx.load(p)) == {"ort": True, "openvino": True}, p
        elif "ortopt" in p:
            continue  # com.microsoft fused ops: the TensorRT parser has no importer for them (GL1002)
        errs = [f for f in lint_paths([p], LintOptions(targets=[target])).findings() if f.severity >= Severity.ERROR]
        assert errs == [], [f"{os.path.basename(p)}: {f.rule_id} {f.message[:200]}" for f in errs]


def test_node_test_sample_keeps_the_contract():
    from tests.test_conformance_backend import case_folder

    files = sorted(glob.glob(os.path.join(case_folder(), "*", "model.onnx")))[::12]
    findings = _builtin(lint_all(files))
    errors = {f.rule_id for f in findings if f.severity >= Severity.ERROR}
    assert len(files) > 100 and {"GL1001", "GL1004", "GL1005"} <= errors, errors
    assert not check(findings), "\n".join(check(findings)[:20])


def test_the_pack_and_its_data_cite_what_users_have():
    """Sources of rules and data files cite upstream documents or shipped files, never ../shared."""
    for rule in load_rules():
        if rule.pack == "builtin":
            assert not SHARED.search(rule.source) and not SHARED.search(rule.doc()), rule.id
    for path in glob.glob(os.path.join(data_dir(), "**", "*.*"), recursive=True):
        if path.endswith((".json", ".toml")):
            with open(path, encoding="utf-8") as f:
                assert not SHARED.search(f.read()), path
    for t in ("ort", "openvino", "trt", "trt@10.1"):
        from graphlint.target import resolve

        target = resolve(t)
        table = target.data("support")
        assert table["source"].startswith(("https://", "rules/data/")), t
        assert any(s.startswith("https://") and VERSIONED.search(s) for s in target.sources), t


def test_basis_checker_catches_bad_bases():
    assert basis_problem(None) == "no basis"
    assert basis_problem("document:https://github.com/onnx/onnx-tensorrt/blob/main/docs/operators.md")
    assert basis_problem("engine-fact:rules/data/validity.toml#no-such-class")
    assert basis_problem("support-table:rules/data/support/nope.json#Add")
    assert basis_problem("engine-fact:rules/data/validity.toml#unsorted") is None
    assert basis_problem("support-table:rules/data/support/trt-10.15.json#Unique") is None
    assert basis_problem("support-table:rules/data/targets/ort-1.32.toml#options.input_over_int64") is None
    assert basis_problem("support-table:rules/data/targets/ort-1.32.toml#options.no_such_option")
    assert SHARED.search("[shared/reference/onnx-tensorrt-operators-trt10.15.md:12]")
    assert not SHARED.search("https://github.com/onnx/onnx/blob/v1.23.2/docs/Operators.md#Reshape")


def test_openvino_ir_refusals_and_impossible_dims_keep_the_contract(tmp_path):
    """GL0006 / GL0007 errors on IRs OpenVINO's reader refuses (test_hostile_ir_engine shows each
    refusal on the engine) and on ONNX inputs no engine can feed cite what shows them."""
    from tests.test_hostile_dims import BIG, relu2
    from tests.test_hostile_dims import save as save_dims
    from tests.test_hostile_ir_engine import REFUSED, _build_pad, _case, add_ir, built_ir

    ir, pad_ir = add_ir(), built_ir("hostile-openvino-pad", _build_pad, "pad")  # real IRs saved by OpenVINO

    paths = [_case(name, seed, edit, tmp_path, ir, pad_ir)[0] for name, seed, edit, _, rule in REFUSED
             if rule in ("GL0006", "GL0007")]
    paths += [save_dims(tmp_path, "neg.onnx", relu2([1, -5], [1, 4])),
              save_dims(tmp_path, "huge.onnx", relu2([BIG, BIG], [BIG, BIG])),
              save_dims(tmp_path, "sym.onnx", relu2(["n", BIG, BIG], ["n", BIG, BIG]))]
    findings = [f for p in paths for t in ("ort", "openvino", "trt")
                for f in lint_paths([p], LintOptions(targets=[t], select=["GL0006", "GL0007"])).findings()]
    assert {f.rule_id for f in findings if f.severity >= Severity.ERROR} == {"GL0006", "GL0007"}
    assert any(f.properties.get("unknown") for f in findings if f.rule_id == "GL0007")
    assert not check(findings), "\n".join(check(findings)[:20])
