"""graphlint.report.jsonfmt writes exactly what json.dumps(indent=...) writes (JSON/SARIF reports use it),
in C (_fastjson.c) and in Python (where the C part is not built) alike."""

from __future__ import annotations

import enum
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphlint.report import jsonfmt


class _Level(enum.IntEnum):
    LOW = 1


class _Path:
    def __str__(self) -> str:
        return "p/x"


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(), st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF)),
)
_keys = st.one_of(st.text(), st.integers(), st.floats(), st.booleans(), st.none())
_docs = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
                            st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=30,
)


def both(doc, **kw) -> list[str]:
    """jsonfmt.dumps(doc, **kw) with the C part, then without it."""
    c_part = jsonfmt._fastjson
    try:
        out = [jsonfmt.dumps(doc, **kw)]
        jsonfmt._fastjson = None
        out.append(jsonfmt.dumps(doc, **kw))
    finally:
        jsonfmt._fastjson = c_part
    return out


def test_the_c_part_is_built():
    assert jsonfmt._fastjson is not None  # else the tests below compare the Python encoder twice


@settings(max_examples=300, deadline=None)
@given(_docs, st.booleans())
def test_same_bytes_as_json_dumps(doc, ascii_only):
    expected = json.dumps(doc, indent=2, ensure_ascii=ascii_only)
    assert both(doc, indent=2, ensure_ascii=ascii_only) == [expected, expected]


class _Items(dict):
    def items(self):  # json's encoder reads a dict subclass through items()
        return [("shown", 1)]


def test_subclasses_and_default_follow_json_dumps():
    doc = {"sev": _Level.LOW, "np_float": np.float64(0.25), "np_int": np.int64(7), "np_bool": np.bool_(True),
           "path": _Path(), _Level.LOW: [(), {}, [[]]], "sub": _Items(hidden=2), "nan": [float("nan"), -1e400],
           "surrogate": "a\udc80b", "deep": [[[{"k": ("t",)}]]]}
    for indent in (0, 2, 4):
        expected = json.dumps(doc, indent=indent, default=str)
        assert both(doc, indent=indent, default=str) == [expected, expected]
        expected = json.dumps(doc, indent=indent, default=str, ensure_ascii=False)
        assert both(doc, indent=indent, default=str, ensure_ascii=False) == [expected, expected]


def test_unserializable_raises_like_json_dumps():
    for bad in ({"x": object()}, {(1, 2): 1}):
        with pytest.raises(TypeError):
            json.dumps(bad, indent=2)
        c_part = jsonfmt._fastjson
        for part in (c_part, None):
            jsonfmt._fastjson = part
            try:
                with pytest.raises(TypeError):
                    jsonfmt.dumps(bad, indent=2)
            finally:
                jsonfmt._fastjson = c_part
