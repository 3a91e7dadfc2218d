"""Property-based fuzzing of the OpenVINO IR path: random edits of a real IR's .xml text and .bin.

Seeds are OpenVINO's own IR of the core conv net (testmodels/build_core.py). Each case
deletes, duplicates, swaps or truncates lines, rewrites attribute values with hostile ones
(negative, huge, non-numeric, empty), renames tags, injects DTDs/entities or stray bytes,
and sometimes truncates the .bin. Properties: no exception escapes, exit code 0/1/2, valid
SARIF, and a DTD or entity is always refused. Longer runs: see docs/fuzzing.md.
"""

from __future__ import annotations

import os
import re
import tempfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from testmodels import build_core
from testmodels.common import cached
from tests.hostile_support import fuzz_settings, lint_in_process

WORK = tempfile.mkdtemp(prefix="graphlint-fuzz-ov-")
ATTR = re.compile(r'([\w:-]+)="([^"]*)"')
SELF_CONTAINED = re.compile(r"^\s*<(\w+)\b[^<>]*(/>|>[^<>]*</\1>)\s*$")  # <edge .../>, <dim>4</dim>
VALUES = ["", "-1", "0", "1", "?", "-1..-1", "1..x", "99999999999999999999", "2147483648", "-9223372036854775809",
          "abc", "f32", "u1", "string", "opset999", "Const", "Parameter", "Result", "If", "TensorIterator",
          "1,2,,3", " ", "\u00e9\u4e2d", "&amp;", "NaN", "1e9"]
TAGS = ["layer", "layers", "edge", "edges", "port", "input", "output", "dim", "data", "body", "rt_info", "net",
        "attribute", "then_body", "port_map", "x"]
HOSTILE_PROLOGS = [
    '<!DOCTYPE net [<!ENTITY a "aaaaaaaaaa">]>',
    '<!DOCTYPE net SYSTEM "file:///etc/passwd">',
    '<!DOCTYPE net [<!ENTITY % p SYSTEM "file:///etc/hostname"> %p;]>',
]


class Seeds(dict):
    def __repr__(self) -> str:  # failing examples print their arguments: not the whole IR
        return f"Seeds({sorted(self)})"


@pytest.fixture(scope="module")
def seeds() -> dict[str, tuple[str, bytes]]:
    folder = cached("core", build_core.build)
    out = Seeds()
    for name in ("convnet", "convnet_nchw"):
        with open(os.path.join(folder, f"{name}.xml"), encoding="utf-8") as f:
            xml = f.read()
        with open(os.path.join(folder, f"{name}.bin"), "rb") as f:
            out[name] = (xml, f.read())
    return out


@st.composite
def xml_mutants(draw, seeds) -> tuple[str, bytes, bool]:
    xml, data = seeds[draw(st.sampled_from(sorted(seeds)))]
    lines = xml.split("\n")
    for _ in range(draw(st.integers(1, 5))):
        # mostly edits that keep the XML well-formed, so the cases reach the loader and rules
        op = draw(st.sampled_from(["attr"] * 8 + ["delete", "duplicate", "swap"] * 2
                                  + ["tag", "truncate", "junk", "dtd", "bin"]))
        whole = [k for k, ln in enumerate(lines) if SELF_CONTAINED.match(ln)]
        i = draw(st.integers(0, len(lines) - 1)) if lines else 0
        if op in ("delete", "duplicate", "swap") and whole:
            i = draw(st.sampled_from(whole))
        if op == "delete" and whole:
            del lines[i]
        elif op == "duplicate" and whole:
            lines.insert(i, lines[i])
        elif op == "swap" and whole:
            j = draw(st.sampled_from(whole))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "attr" and lines:
            matches = list(ATTR.finditer(lines[i]))
            if matches:
                m = matches[draw(st.integers(0, len(matches) - 1))]
                value = draw(st.one_of(st.sampled_from(VALUES), st.text(max_size=8).map(
                    lambda s: s.replace('"', "").replace("<", "").replace("&", ""))))
                lines[i] = lines[i][:m.start(2)] + value + lines[i][m.end(2):]
        elif op == "tag" and lines:
            lines[i] = re.sub(r"(</?)(\w+)", lambda m: m.group(1) + draw(st.sampled_from(TAGS)), lines[i], count=1)
        elif op == "truncate":
            text = "\n".join(lines)
            lines = text[: draw(st.integers(0, len(text)))].split("\n")
        elif op == "junk" and lines:
            lines[i] += draw(st.sampled_from(["<", "&", "]]>", "\x00", "<!-- x", "</net>", "<layer>", "\ufffe"]))
        elif op == "dtd":
            lines.insert(1 if lines and lines[0].startswith("<?xml") else 0, draw(st.sampled_from(HOSTILE_PROLOGS)))
        elif op == "bin":
            data = data[: draw(st.integers(0, len(data)))]
    text = "\n".join(lines)
    return text, data, "<!DOCTYPE" in text


@fuzz_settings(80)
@given(data=st.data())
def test_mutated_openvino_ir(seeds, data):
    xml, weights, hostile = data.draw(xml_mutants(seeds))
    path = os.path.join(WORK, "mutant.xml")
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(xml)
    with open(os.path.join(WORK, "mutant.bin"), "wb") as f:
        f.write(weights)
    code, run = lint_in_process([path])
    if hostile and code == 2 and "unsafe XML" not in run.failures[0].message:
        # a DTD after other damage may be reported as the first error instead; never expanded
        assert "malformed XML" in run.failures[0].message or "not an OpenVINO IR" in run.failures[0].message
    if hostile and code != 2:
        raise AssertionError("a DTD or entity was accepted")
