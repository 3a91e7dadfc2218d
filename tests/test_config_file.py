"""Configuration: discovery, validation with suggestions, precedence, per-target and per-model options."""

from __future__ import annotations

import os

import pytest

from graphlint.config import effective_config, options_from, resolve_options, target_with_options
from graphlint.errors import UsageError
from graphlint.rule import Finding, Rule, RuleContext, Severity
from graphlint.target import resolve
from tests.conftest import run_cli
from tests.models import contrib_model, save
from tests.workflow_support import copy_model, workflow_models


@pytest.fixture(scope="session")
def wf_models() -> str:
    return workflow_models()


def test_discovery_walks_up_from_the_model_and_prefers_graphlint_toml(tmp_path, monkeypatch):
    deep = tmp_path / "proj" / "models" / "v1"
    deep.mkdir(parents=True)
    model = save(contrib_model(), str(deep), "m.onnx")
    (tmp_path / "proj" / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no table: skipped
    (tmp_path / "pyproject.toml").write_text('[tool.graphlint]\ntarget = "ort"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    eff = effective_config(targets=[], select=[], ignore=[], shapes=[], config_path=None, repo_root=".",
                           models=[model])
    assert eff.file == str(tmp_path / "pyproject.toml") and eff.values["target"] == ["ort"]
    (tmp_path / "proj" / "graphlint.toml").write_text('target = ["openvino"]\n')
    (tmp_path / "proj" / "pyproject.toml").write_text('[tool.graphlint]\ntarget = "trt"\n')
    eff = effective_config(targets=[], select=[], ignore=[], shapes=[], config_path=None, repo_root=".",
                           models=[model])
    assert eff.file == str(tmp_path / "proj" / "graphlint.toml") and eff.values["target"] == ["openvino"]
    # no model: from the working directory upward
    eff = effective_config(targets=[], select=[], ignore=[], shapes=[], config_path=None, repo_root=".")
    assert eff.file == str(tmp_path / "pyproject.toml")


@pytest.mark.parametrize(("text", "expect"), [
    ("fail_levle = 'warning'", "did you mean 'fail-level'"),
    ("selct = ['GL0']", "did you mean 'select'"),
    ("[severity]\nunknwn-domain = 'info'", "did you mean 'unknown-domain'"),
    ("[severity]\nGL0003 = 'fatal'", "unknown severity"),
    ("[target-options.trt]\npad-multipel = 16", "did you mean 'pad-multiple'"),
    ("[target-options.trt]\npad-multiple = 'sixteen'", "expected int"),
    ("[target-options.tensorrt]\npad-multiple = 16", "unknown target"),
    ("select = ['unknown-domian']", "did you mean 'unknown-domain'"),
    ("target = 'trtx'", "unknown target"),
    ("[shapes]\n'*.onnx' = ['x:1x2,1x3']", "give one shape or three"),
    ("target = [", "not valid TOML"),
])
def test_bad_configuration_is_an_error_with_suggestion(tmp_path, text, expect):
    cfg = tmp_path / "graphlint.toml"
    cfg.write_text(text + "\n")
    with pytest.raises(UsageError) as e:
        effective_config(targets=[], select=[], ignore=[], shapes=[], config_path=str(cfg), repo_root=".")
    assert expect in str(e.value) and "\n" not in str(e.value)


def test_bad_configuration_on_the_command_line_is_one_line_exit_2(tmp_path):
    save(contrib_model(), str(tmp_path), "m.onnx")
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\nfail_levle = 'warning'\n")
    r = run_cli("m.onnx", cwd=str(tmp_path))
    assert r.code == 2 and r.out == ""
    assert r.err == (f"graphlint: error: {tmp_path / 'pyproject.toml'}: unknown key 'tool.graphlint.fail_levle' "
                     "(did you mean 'fail-level'?)\n")


def test_cli_flags_override_file_and_config_command_names_sources(tmp_path):
    from tests.models import relu_model

    save(relu_model(opset=21), str(tmp_path), "m.onnx")  # opset 21: newer than TensorRT 10.1 reads (9-20)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.graphlint]\ntarget = "ort"\nselect = ["GL0002"]\nfail-level = "warning"\n'
        '[tool.graphlint.severity]\nopset-outside-target = "info"\n')
    # from the file: ort reads opset 21, nothing to report
    r = run_cli("m.onnx", "--format", "json", cwd=str(tmp_path))
    rep = r.json()
    assert [m["target"].split("@")[0] for m in rep["models"]] == ["ort"]
    assert r.code == 0 and rep["models"][0]["findings"] == []
    # trt@10.1 from the command line: GL0002 at the configured severity info, below fail-level warning
    r = run_cli("m.onnx", "--target", "trt@10.1", "--format", "json", cwd=str(tmp_path))
    (f,) = r.json()["models"][0]["findings"]
    assert f["rule_id"] == "GL0002" and f["severity"] == "info" and r.code == 0
    # the command line's --fail-level wins over the file's
    r = run_cli("m.onnx", "--target", "trt@10.1", "--fail-level", "info", cwd=str(tmp_path))
    assert r.code == 1

    out = run_cli("config", "--target", "trt", cwd=str(tmp_path))
    assert out.code == 0, out.err
    lines = {ln.split("=")[0].strip(): ln for ln in out.out.splitlines() if "=" in ln and not ln.startswith("#")}
    assert "command line --target" in lines["target"]
    assert "pyproject.toml [tool.graphlint.select]" in lines["select"]
    assert '"GL0002": "info"' in lines["severity"] and "pyproject.toml" in lines["severity"]
    assert "default" in lines["ignore"]
    js = run_cli("config", "-f", "json", cwd=str(tmp_path)).json()
    assert js["values"]["fail-level"] == {"value": "warning", "source": "pyproject.toml [tool.graphlint.fail-level]"}


class _Probe(Rule):
    """Test rule: reports the option values it sees.

    ## What it checks
    Test only.
    """

    id = "GL9990"
    name = "test-probe"
    severity = Severity.INFO

    def check(self, ctx: RuleContext):
        shapes = ctx.options.get("shapes", {})
        yield ctx.finding(None, "probe", pad=ctx.target.option("pad_multiple"),
                          fp16=ctx.target.option("fp16_default"),
                          shapes={k: [list(s) for s in p.shapes()] for k, p in shapes.items()})


def _probe(opts, path: str) -> Finding:
    from graphlint import lint

    (res,) = lint.lint_model(path, [resolve(opts.targets[0])], [_Probe], opts)
    return res.findings[0]


def test_target_options_and_shape_profiles_per_model_glob(wf_models, tmp_path):
    (tmp_path / "vision").mkdir()
    a = copy_model(wf_models, "twobranch_a_legacy.onnx", str(tmp_path / "vision"), "a.onnx")
    b = copy_model(wf_models, "twobranch_b_legacy.onnx", str(tmp_path), "b.onnx")
    cfg = tmp_path / "graphlint.toml"
    cfg.write_text('target = "trt"\n[target-options.trt]\npad-multiple = 16\nfp16-default = true\n'
                   '[shapes]\n"vision/*.onnx" = ["x:1x8,4x8,8x8"]\n')
    opts = resolve_options(targets=[], select=[], ignore=[], shapes=[], config_path=str(cfg), repo_root=".")
    pa, pb = _probe(opts, a).properties, _probe(opts, b).properties
    assert pa["pad"] == 16 and pa["fp16"] is True and pb["pad"] == 16
    assert resolve("trt").option("pad_multiple") == 8, "the shared profile is untouched"
    assert pa["shapes"] == {"x": [[1, 8], [4, 8], [8, 8]]}
    assert pb["shapes"] == {}, "b.onnx is outside the glob"
    # --shapes on the command line applies to every model and wins over the file
    opts = resolve_options(targets=["ort"], select=[], ignore=[], shapes=["x:2x8"], config_path=str(cfg),
                           repo_root=".")
    pa, pb = _probe(opts, a).properties, _probe(opts, b).properties
    assert pa["shapes"] == pb["shapes"] == {"x": [[2, 8], [2, 8], [2, 8]]}
    assert pa["pad"] == 0, "trt options do not leak into ort"


def test_device_options_are_overridden_too():
    gpu = resolve("openvino@gpu")
    assert gpu.option("pad_multiple") == 16
    assert target_with_options(gpu, {"pad_multiple": 32}).option("pad_multiple") == 32


def test_explicit_config_path_and_missing_file(tmp_path):
    (tmp_path / "custom.toml").write_text('ignore = ["GL0004"]\nfail-level = "info"\n')
    eff = effective_config(targets=[], select=[], ignore=[], shapes=[], config_path=str(tmp_path / "custom.toml"),
                           repo_root=".")
    opts = options_from(eff)
    assert opts.ignore == ["GL0004"] and opts.fail_level == "info"
    with pytest.raises(UsageError, match="does not exist"):
        effective_config(targets=[], select=[], ignore=[], shapes=[], config_path=str(tmp_path / "nope.toml"),
                         repo_root=".")
    assert os.path.isfile(tmp_path / "custom.toml")


def test_documented_examples_are_valid(tmp_path):
    """docs/configuration.md's example configuration and suppression file load as written."""
    import re

    from tests.conftest import ROOT

    with open(os.path.join(ROOT, "docs", "configuration.md"), encoding="utf-8") as f:
        doc = f.read()
    blocks = re.findall(r"```toml\n(.*?)```", doc, re.S)
    config = next(b for b in blocks if b.startswith("[tool.graphlint]"))
    supp = next(b for b in blocks if b.startswith("[[suppress]]"))
    (tmp_path / "pyproject.toml").write_text(config)
    (tmp_path / "graphlint-suppressions.toml").write_text(supp)
    r = run_cli("config", "-f", "json", cwd=str(tmp_path))
    assert r.code == 0, r.err
    values = r.json()["values"]
    assert values["target"]["value"] == ["trt@10.15", "ort"]
    assert values["target-options"]["value"]["trt"] == {"pad_multiple": 16, "fp16_default": True}
    assert values["severity"]["value"] == {"GL0003": "error", "GL0002": "warning"}
    assert values["suppressions"]["value"].endswith("graphlint-suppressions.toml")
