"""A third-party rule pack registers through the `graphlint.rules` entry-point group exactly like
the built-in pack: installed with pip, listed by `graphlint rules`, run on models."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, validate_sarif
from tests.packs import install_pack
from tests.test_core_ir import core_models  # noqa: F401 (fixture)

PACK_RULE = '''
"""A tiny third-party pack: flags every OpenVINO Convolution layer."""

from graphlint.ir import OPENVINO
from graphlint.rule import Rule, Severity, quote


class NoConv(Rule):
    """Convolution layers are banned on our accelerator.

    ## What it checks
    Every OpenVINO IR Convolution layer.

    ## Why it matters
    Our accelerator has no convolution unit.

    ## Example
    Any CNN.

    ## Fix
    Use a transformer.
    """

    id = "ACME001"
    name = "no-conv"
    family = "acme"
    severity = Severity.WARNING
    dialects = frozenset({OPENVINO})
    op_types = frozenset({"Convolution"})

    def check_node(self, node, ctx):
        yield ctx.finding(node, f"Node {quote(node.label)} (Convolution) is not allowed on ACME.")


RULES = [NoConv]
'''


@pytest.fixture(scope="module")
def pack_site(tmp_path_factory) -> str:
    return install_pack(tmp_path_factory.mktemp("acme_pack_src"), tmp_path_factory.mktemp("acme_site"),
                        "acme-graphlint", "acme_graphlint", "acme", PACK_RULE)


def run_with_pack(site: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=site)
    return subprocess.run([sys.executable, "-m", "graphlint", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


def test_pack_rule_is_listed(pack_site):
    r = run_with_pack(pack_site, "rules")
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith("ACME001"))
    assert row.split() == ["ACME001", "no-conv", "acme", "warning", "all", "acme"]
    assert "GL0001" in r.stdout  # built-ins still there
    # and without the pack installed it is not
    plain = subprocess.run([sys.executable, "-m", "graphlint", "rules"], capture_output=True, text=True, cwd=ROOT)
    assert "ACME001" not in plain.stdout


def test_pack_rule_runs_and_points_at_the_xml_line(pack_site, core_models, tmp_path):  # noqa: F811
    xml = os.path.join(core_models, "convnet.xml")
    r = run_with_pack(pack_site, xml, "--format", "sarif", "--select", "ACME001", "--fail-level", "warning",
                      "--repo-root", core_models)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    validate_sarif(doc)
    results = doc["runs"][0]["results"]
    with open(xml, encoding="utf-8") as f:
        lines = f.read().splitlines()
    conv_lines = [i + 1 for i, ln in enumerate(lines) if "<layer " in ln and 'type="Convolution"' in ln]
    assert len(conv_lines) == 2
    got = sorted(res["locations"][0]["physicalLocation"]["region"]["startLine"] for res in results)
    assert got == conv_lines
    assert all(res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "convnet.xml" for res in results)


def test_rules_see_only_the_dialects_they_declare(core_models):  # noqa: F811
    """An ONNX-semantics rule asking for 'Add' must not fire on OpenVINO's 'Add' layers."""
    from graphlint.engine import run_rules
    from graphlint.ir import ONNX, OPENVINO
    from graphlint.load import load_model
    from graphlint.rule import Rule
    from graphlint.target import resolve

    def make(dialect: str) -> type[Rule]:
        class AnyAdd(Rule):
            """Flags Add."""

            id = "TEST001"
            name = "any-add"
            dialects = frozenset({dialect})
            op_types = frozenset({"Add"})

            def check_node(self, node, ctx):
                yield ctx.finding(node, "add")

        return AnyAdd

    ir = load_model(os.path.join(core_models, "convnet.xml"))
    onnx_model = load_model(os.path.join(core_models, "convnet_opset17.onnx"))
    target = resolve("openvino")
    adds_ir = [n for n in ir.graph.nodes if n.op_type == "Add"]
    assert adds_ir, "the IR has Add layers"
    assert run_rules(ir, target, [make(ONNX)]).findings == []
    assert len(run_rules(ir, target, [make(OPENVINO)]).findings) == len(adds_ir)
    assert run_rules(onnx_model, target, [make(OPENVINO)]).findings == []
