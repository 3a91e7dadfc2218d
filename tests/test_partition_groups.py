"""graphlint.analysis.partition.groups: the union-find behind islands and the HTML report's
outlines, against a breadth-first search over the same pairs."""

from __future__ import annotations

import os
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from graphlint.analysis.partition import groups
from tests.conftest import ROOT

EXAMPLE = os.path.join(ROOT, "testmodels", "examples", "tiny_vlm.onnx")


def by_search(count: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
    near: dict[int, set[int]] = {i: set() for i in range(count)}
    for a, b in pairs:
        near[a].add(b)
        near[b].add(a)
    seen: set[int] = set()
    out = []
    for start in range(count):
        if start in seen:
            continue
        todo, members = [start], {start}
        while todo:
            for j in near[todo.pop()] - members:
                members.add(j)
                todo.append(j)
        seen |= members
        out.append(sorted(members))
    return out


@given(st.integers(0, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0))), max_size=60)
    if n else st.just([]))))
def test_groups_match_a_search(case: tuple[int, list[tuple[int, int]]]) -> None:
    count, pairs = case
    assert groups(count, pairs) == by_search(count, pairs)


def test_a_long_chain_joined_from_its_far_end() -> None:
    # unions that always meet at the largest member: the halving keeps finds short
    n = 20_000
    pairs = [(i + 1, i) for i in range(n - 1)][::-1]
    assert groups(n, pairs) == [list(range(n))]


def test_a_check_does_not_import_networkx():
    # networkx costs a check ~0.1 s of imports and ~15 MB of memory in both of its processes
    # (bench/README.md, issue 38); only `graphlint fix` uses it.
    probe = (
        "import sys\n"
        "from graphlint.cli import cli\n"
        "try:\n"
        f"    cli.main(['check', {EXAMPLE!r}, '-t', 'trt', '-t', 'ort', '-t', 'openvino', '-f', 'sarif', '-o', "
        f"{os.devnull!r}], prog_name='graphlint', standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'networkx'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
