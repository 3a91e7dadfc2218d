"""The CI recipes in docs/ci.md and .pre-commit-hooks.yaml, run as written.

pre-commit itself validates the hook manifest and the configs, then really runs the local
hook in a scratch git repository; the GitHub Actions workflow's lint command runs in a
scratch checkout and its SARIF must pass the schema and GitHub's ingestion rules.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from graphlint.report.github import render_github
from tests.conftest import ROOT, validate_sarif
from tests.models import contrib_model, relu_model, save
from tests.test_core_sarif import check_github_rules
from tests.workflow_support import FakeUnsupported, lint_with, workflow_models


@pytest.fixture(scope="session")
def wf_models() -> str:
    return workflow_models()

DOC = os.path.join(ROOT, "docs", "ci.md")
BIN = os.path.dirname(sys.executable)
PRE_COMMIT = shutil.which("pre-commit", path=BIN) or shutil.which("pre-commit")
needs_pre_commit = pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit not installed (pip install -e .[test])")


def recipe(name: str) -> str:
    text = Path(DOC).read_text(encoding="utf-8")
    m = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```yaml\n(.*?)```", text, re.S)
    assert m, f"recipe {name} missing from docs/ci.md"
    return m.group(1)


def _env(tmp_path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com")
    return env


def _git(cwd, *args, env):
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@needs_pre_commit
def test_hook_manifest_and_configs_validate(tmp_path):
    env = _env(tmp_path)
    r = subprocess.run([PRE_COMMIT, "validate-manifest", os.path.join(ROOT, ".pre-commit-hooks.yaml")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    manifest = {h["id"]: h for h in yaml.safe_load(Path(ROOT, ".pre-commit-hooks.yaml").read_text())}
    for name in ("pre-commit-remote", "pre-commit-local"):
        cfg = tmp_path / f"{name}.yaml"
        cfg.write_text(recipe(name))
        r = subprocess.run([PRE_COMMIT, "validate-config", str(cfg)], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
    remote = yaml.safe_load(recipe("pre-commit-remote"))["repos"][0]
    assert {h["id"] for h in remote["hooks"]} <= set(manifest)
    for hook in manifest.values():
        files = re.compile(hook["files"])
        assert hook["entry"].split()[0] == "graphlint"
        assert not files.search("setup.py") and not files.search("model.onnx.data")
    assert re.compile(manifest["graphlint"]["files"]).search("models/resnet.onnx")
    assert re.compile(manifest["graphlint-openvino"]["files"]).search("ir/model.xml")


@needs_pre_commit
def test_local_hook_runs_in_a_real_repository(tmp_path):
    env = _env(tmp_path)
    repo = tmp_path / "repo"
    (repo / "models").mkdir(parents=True)
    _git(repo, "init", "-q", env=env)
    (repo / ".pre-commit-config.yaml").write_text(recipe("pre-commit-local"))
    save(relu_model(), str(repo / "models"), "ok.onnx")
    (repo / "notes.txt").write_text("not a model\n")
    _git(repo, "add", "-A", env=env)
    ok = subprocess.run([PRE_COMMIT, "run", "--all-files"], cwd=repo, capture_output=True, text=True, env=env,
                        timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "graphlint" in ok.stdout and "Passed" in ok.stdout

    save(contrib_model(), str(repo / "models"), "contrib.onnx")
    _git(repo, "add", "-A", env=env)
    bad = subprocess.run([PRE_COMMIT, "run", "--all-files"], cwd=repo, capture_output=True, text=True, env=env,
                         timeout=300)
    assert bad.returncode == 1
    assert "Failed" in bad.stdout and "'fast_gelu' (FastGelu)" in bad.stdout and " GL1" in bad.stdout

    # a suppression with a reason makes the commit pass again
    (repo / "graphlint-suppressions.toml").write_text(
        '[[suppress]]\nmodel = "models/contrib.onnx"\nrule = "GL1"\nreason = "TensorRT plugin"\n')
    _git(repo, "add", "-A", env=env)
    again = subprocess.run([PRE_COMMIT, "run", "--all-files"], cwd=repo, capture_output=True, text=True, env=env,
                           timeout=300)
    assert again.returncode == 0, again.stdout


def _lint_step(workflow: dict) -> tuple[str, list[dict]]:
    (job,) = workflow["jobs"].values()
    steps = job["steps"]
    (cmd,) = [s["run"] for s in steps if "run" in s and s["run"].startswith("graphlint ")]
    return cmd, steps


def test_github_actions_workflow_produces_uploadable_sarif(tmp_path):
    wf = yaml.safe_load(recipe("github-actions"))
    assert wf["permissions"]["security-events"] == "write"
    cmd, steps = _lint_step(wf)
    (upload,) = [s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")]
    assert upload["if"] == "always()" and upload["uses"].endswith("@v3")
    sarif_file = upload["with"]["sarif_file"]
    assert f"-o {sarif_file}" in cmd and "--format sarif" in cmd

    # a checkout with a bad model and a good one, linted by the workflow's own command line
    checkout = tmp_path / "checkout"
    (checkout / "models").mkdir(parents=True)
    save(contrib_model(), str(checkout / "models"), "contrib.onnx")
    save(relu_model(), str(checkout / "models"), "relu.onnx")
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run(["bash", "-c", cmd], cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr  # findings fail the job; upload still runs (if: always())
    doc = json.loads((checkout / sarif_file).read_text())
    validate_sarif(doc)
    check_github_rules(doc)
    results = doc["runs"][0]["results"]
    uris = {x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for x in results}
    assert "models/contrib.onnx" in uris
    assert any(x["ruleId"].startswith("GL1") and x["level"] == "error" for x in results)


def test_annotations_workflow_and_github_format(tmp_path):
    wf = yaml.safe_load(recipe("github-annotations"))
    cmd, _ = _lint_step(wf)
    assert "--format github" in cmd
    checkout = tmp_path / "checkout"
    (checkout / "models").mkdir(parents=True)
    save(contrib_model(), str(checkout / "models"), "contrib.onnx")
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run(["bash", "-c", cmd], cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines and all(re.fullmatch(r"::(error|warning|notice) file=[^,:]+(,line=\d+)?,title=[^:]+::.+", ln)
                         for ln in lines)
    gl1 = [ln for ln in lines if "title=GL1" in ln]
    assert any(ln.startswith("::error file=models/contrib.onnx,") for ln in gl1)


def test_github_format_escapes_and_skips_suppressed(wf_models):
    run = lint_with([os.path.join(wf_models, "twobranch_a_legacy.onnx")], [FakeUnsupported],
                    unsupported=("Relu", "Tanh"))
    a, b, c = run.findings()
    a.message = "50% of it\nis unsupported: yes, really"
    a.model = "dir,with:odd/m.onnx"
    b.suppressed = "accepted"
    out = render_github(run).splitlines()
    assert len(out) == 2
    assert out[0] == ("::error file=dir%2Cwith%3Aodd/m.onnx,title=GL1990 test-unsupported::"
                      "50%25 of it%0Ais unsupported: yes, really")
    assert c.node in out[1]


def _doc_block(doc: str, name: str, lang: str) -> str:
    text = Path(ROOT, "docs", doc).read_text(encoding="utf-8")
    m = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```{lang}\n(.*?)```", text, re.S)
    assert m, f"{name} missing from docs/{doc}"
    return m.group(1)


def test_rule_pack_doc_example_runs_on_a_real_export(tmp_path):
    """docs/writing-a-rule-pack.md: the entry point names RULES, and the example rule works as written."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    import torch
    from torch import nn

    from graphlint import lint
    from graphlint.target import resolve
    from testmodels.common import torch_export

    meta = tomllib.loads(_doc_block("writing-a-rule-pack.md", "pack-pyproject", "toml"))
    assert meta["project"]["entry-points"]["graphlint.rules"] == {"acme": "acme_graphlint:RULES"}
    ns: dict = {}
    exec(compile(_doc_block("writing-a-rule-pack.md", "pack-rule", "python"), "pack_rule", "exec"), ns)
    rules = ns["RULES"]

    class Video(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c3 = nn.Conv3d(3, 4, 3, padding=1)
            self.c2 = nn.Conv2d(4, 4, 1)

        def forward(self, x):
            y = self.c3(x).mean(dim=2)
            return self.c2(y)

    path = torch_export(Video(), (torch.randn(1, 3, 4, 8, 8),), str(tmp_path / "video.onnx"), opset=17,
                        input_names=["clip"])
    (res,) = lint.lint_model(path, [resolve("trt")], rules, lint.LintOptions())
    (f,) = res.findings
    assert f.rule_id == "ACME001" and f.op_type == "Conv" and f.node == "/c3/Conv"
    assert f.message.startswith("Node '/c3/Conv' (Conv)") and f.message.endswith(".")
    assert f.properties["kernel"] == [3, 3, 3]
    assert rules[0].sections().keys() >= {"what it checks", "why it matters", "example", "fix"}


def test_progress_bar_only_on_a_tty(tmp_path):
    """Multi-model runs draw a bar on a terminal's stderr; in CI (no TTY) stderr stays clean."""
    import pty

    for name in ("a.onnx", "b.onnx", "c.onnx"):
        save(relu_model(), str(tmp_path), name)
    args = [sys.executable, "-m", "graphlint", "a.onnx", "b.onnx", "c.onnx", "--target", "ort"]
    piped = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0 and piped.stderr == ""
    main_fd, sub_fd = pty.openpty()
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=sub_fd, text=True)
    os.close(sub_fd)
    out, _ = proc.communicate(timeout=300)
    chunks = []
    while True:
        try:
            data = os.read(main_fd, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(main_fd)
    tty = b"".join(chunks).decode()
    assert proc.returncode == 0 and "a.onnx" in out
    assert "] 1/3 a.onnx" in tty and "] 3/3 c.onnx" in tty and tty.count("\r\x1b[2K") == 3
