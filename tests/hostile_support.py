"""Helpers for the hostile-input and fuzz tests: run the CLI in-process, check the contract.

The contract for a model graphlint cannot read (tests/test_hostile_*.py): exit code 2, exactly
one line on stderr naming the file and the problem, no traceback, and with ``--format sarif``
a file whose invocation carries a ``toolExecutionNotifications`` entry and a GL9000 result
located on the file. A model that loads gives exit 0 or 1 and a quiet stderr. Every SARIF these
helpers produce passes tests/sarif_github.py (schema, and what GitHub code scanning accepts).
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from urllib.parse import quote

import numpy as np
from click.testing import CliRunner

from graphlint.cli import _register_subcommands, cli
from tests.sarif_github import check_github_sarif

_registered = False


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    sarif: dict | None = None


def lint_cli(*args: str) -> Outcome:
    """``graphlint ARGS`` in this process (fast: imports and rule loading are paid once)."""
    global _registered
    if not _registered:
        _register_subcommands()
        _registered = True
    res = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"exception escaped the CLI: {res.exception!r}") from res.exception
    return Outcome(res.exit_code, res.stdout, res.stderr)


def lint_sarif(paths: list[str], out_dir: str, *extra: str) -> Outcome:
    """Lint with ``--format sarif -o``; the SARIF file (checked) is on the Outcome."""
    out = os.path.join(out_dir, "report.sarif")
    if os.path.exists(out):
        os.unlink(out)
    r = lint_cli(*paths, "--format", "sarif", "-o", out, *extra)
    assert "Traceback" not in r.err + r.out, r.err
    assert "internal error" not in r.err, r.err
    assert os.path.isfile(out), f"no SARIF written (exit {r.code}): {r.err}"
    with open(out, encoding="utf-8") as f:
        r.sarif = json.load(f)
    check_github_sarif(r.sarif, sarif_root(extra))
    return r


def sarif_root(args: tuple[str, ...] | list[str]) -> str:
    """The root SARIF URIs are relative to, as the command line resolves it."""
    from graphlint.config import repo_root

    args = list(args)
    explicit = args[args.index("--repo-root") + 1] if "--repo-root" in args[:-1] else None
    return os.path.abspath(repo_root(explicit))


def assert_input_error(path: str, out_dir: str, *extra: str, says: str | tuple[str, ...] = ()) -> str:
    """The unreadable-model contract for one path; returns the stderr line."""
    r = lint_sarif([path], out_dir, *extra)
    assert r.code == 2, (r.code, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert path in lines[0], lines[0]
    for word in (says,) if isinstance(says, str) else says:
        assert word in lines[0], lines[0]
    run = r.sarif["runs"][0]
    (note,) = [n for n in run["invocations"][0]["toolExecutionNotifications"] if n["level"] == "error"]
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        quote(os.path.basename(path)))
    gl9000 = [x for x in run["results"] if x["ruleId"] == "GL9000"]
    assert len(gl9000) == 1, run["results"]
    assert gl9000[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    return lines[0]


def assert_loads(path: str, out_dir: str, *extra: str) -> dict:
    """The model loads: exit 0 or 1, nothing on stderr, no failure notification; returns the SARIF run."""
    r = lint_sarif([path], out_dir, *extra)
    assert r.code in (0, 1), (r.code, r.err)
    assert r.err.strip() == "", r.err
    run = r.sarif["runs"][0]
    assert not [x for x in run["results"] if x["ruleId"] == "GL9000"]
    return run


def rule_ids(run: dict) -> set[str]:
    return {x["ruleId"] for x in run["results"]}


def messages(run: dict) -> str:
    """Every result message of a SARIF run, one per line (asserts match on words, not rule ids)."""
    return "\n".join(x["message"]["text"] for x in run["results"])


# --- a real OpenVINO IR to damage ------------------------------------------------------------------

ADD_WEIGHTS = np.array([[1, 2, 3, 4]], np.float32)


def _build_add_ir(folder: str) -> None:
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h

    from testmodels.common import to_openvino

    g = h.make_graph([h.make_node("Add", ["x", "w"], ["y"], name="add")], "add",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, 4])], [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
                     [onnx.numpy_helper.from_array(ADD_WEIGHTS, "w")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), os.path.join(folder, "add.onnx"))
    to_openvino(os.path.join(folder, "add.onnx"), os.path.join(folder, "add.xml"))


def add_ir() -> tuple[str, bytes]:
    """A real IR written by OpenVINO (Parameter, Const, Add, Result): its .xml text and .bin bytes."""
    return built_ir("hostile-openvino-add", _build_add_ir, "add")


def built_ir(name: str, builder, stem: str) -> tuple[str, bytes]:
    """``stem``.xml text and .bin bytes that ``builder(folder)`` writes, built once (testmodels cache)."""
    from testmodels.common import cached

    folder = cached(name, builder)
    with open(os.path.join(folder, f"{stem}.xml"), encoding="utf-8") as f:
        xml = f.read()
    with open(os.path.join(folder, f"{stem}.bin"), "rb") as f:
        return xml, f.read()


def write_ir(folder, name: str, xml: str, bin_bytes: bytes | None = None) -> str:
    """``folder/name.xml`` (and ``name.bin`` when given); returns the .xml path."""
    p = os.path.join(folder, f"{name}.xml")
    with open(p, "w", encoding="utf-8") as f:
        f.write(xml)
    if bin_bytes is not None:
        with open(os.path.join(folder, f"{name}.bin"), "wb") as f:
            f.write(bin_bytes)
    return p


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing ``needle`` (found independently of graphlint)."""
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def body_of(xml: str) -> str:
    """The IR without its XML declaration, to put a DOCTYPE in front."""
    return xml.split("\n", 1)[1]


# --- raw protobuf: nesting deeper than the protobuf library lets onnx.helper build ----------------

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pb_field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2): sub-messages concatenate into a parent."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def nested_if_model(depth: int) -> bytes:
    """ModelProto bytes with ``depth`` If nodes, each in the then_branch of the one above."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h

    def vi(name: str) -> onnx.ValueInfoProto:
        return h.make_tensor_value_info(name, T.FLOAT, [1])

    leaf = h.make_graph([h.make_node("Identity", ["x"], ["o0"])], "b0", [], [vi("o0")])
    graph = leaf.SerializeToString()
    else_attr = h.make_attribute("else_branch", leaf).SerializeToString()
    for i in range(1, depth + 1):
        then = onnx.AttributeProto(name="then_branch", type=onnx.AttributeProto.GRAPH).SerializeToString()
        then += pb_field(6, graph)  # AttributeProto.g
        node = h.make_node("If", ["c"], [f"o{i}"], name=f"if{i}").SerializeToString()
        node += pb_field(5, then) + pb_field(5, else_attr)  # NodeProto.attribute
        shell = h.make_graph([], f"b{i}", [], [vi(f"o{i}")])
        if i == depth:
            shell.input.extend([vi("x"), h.make_tensor_value_info("c", T.BOOL, [])])
        graph = shell.SerializeToString() + pb_field(1, node)  # GraphProto.node
    model = h.make_model(h.make_graph([], "g", [], []), opset_imports=[h.make_opsetid("", 17)])
    model.ClearField("graph")
    return model.SerializeToString() + pb_field(7, graph)  # ModelProto.graph


def sparse_file(path: str, size: int, tail: bytes = b"") -> None:
    """A file of ``size`` bytes that occupies almost no disk (a hole), ending with ``tail``."""
    with open(path, "wb") as f:
        f.truncate(size - len(tail))
        f.seek(size - len(tail))
        f.write(tail)


def f32(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


# --- fuzzing ---------------------------------------------------------------------------------------

def fuzz_settings(default_examples: int = 40):
    """Fixed budget and seed in CI; ``GRAPHLINT_FUZZ_EXAMPLES`` / ``GRAPHLINT_FUZZ_RANDOM=1`` for long runs."""
    from hypothesis import HealthCheck, Phase, settings

    return settings(
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
        max_examples=int(os.environ.get("GRAPHLINT_FUZZ_EXAMPLES", default_examples)),
        derandomize=os.environ.get("GRAPHLINT_FUZZ_RANDOM") != "1",
        database=None,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


def lint_in_process(paths: list[str], targets: list[str] | None = None):
    """What ``graphlint check`` does minus the process: lint, render every format, exit code.

    Asserts the fuzz properties: no exception escapes, the exit code is 0, 1 or 2, the SARIF
    is schema-valid, and every load failure is one line naming a problem.
    """
    from graphlint.lint import LintOptions, exit_code, lint_paths
    from graphlint.report import render
    from graphlint.rule import Severity

    run = lint_paths(paths, LintOptions(targets=list(targets or []), time_budget=60))
    for fmt in ("text", "json", "github"):
        assert isinstance(render(run, fmt), str)
    doc = json.loads(render(run, "sarif"))
    check_github_sarif(doc, run.root)
    for fail in run.failures:
        assert fail.message and "\n" not in fail.message, fail.message
        assert "Traceback" not in fail.message
    notes = doc["runs"][0]["invocations"][0].get("toolExecutionNotifications", [])
    assert len([n for n in notes if n["level"] == "error"]) == len(run.failures)
    code = exit_code(run, Severity.ERROR)
    assert code in (0, 1, 2)
    log = os.environ.get("GRAPHLINT_FUZZ_LOG")
    if log:  # long runs: one JSON line per case, to count outcomes and collect rule crashes
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"code": code, "failures": [x.message for x in run.failures],
                                "crashes": crashed_rules(run)}) + "\n")
    return code, run


def crashed_rules(run) -> list[str]:
    """Messages of GL9002 (a rule raised): the engine survives it, but it is a rule bug to report."""
    return [f.message for f in run.findings() if f.rule_id == "GL9002"]
