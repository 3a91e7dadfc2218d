"""graphlint.report.jsonfmt writes exactly what json.dumps(indent=...) writes (JSON/SARIF reports use it)."""

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


@settings(max_examples=300, deadline=None)
@given(_docs, st.booleans())
def test_same_bytes_as_json_dumps(doc, ascii_only):
    assert jsonfmt.dumps(doc, indent=2, ensure_ascii=ascii_only) == json.dumps(doc, indent=2, ensure_ascii=ascii_only)


def test_subclasses_and_default_follow_json_dumps():
    doc = {"sev": _Level.LOW, "np_float": np.float64(0.25), "np_int": np.int64(7), "np_bool": np.bool_(True),
           "path": _Path(), _Level.LOW: [(), {}, [[]]]}
    assert jsonfmt.dumps(doc, indent=2, default=str) == json.dumps(doc, indent=2, default=str)
    assert jsonfmt.dumps(doc, indent=4, default=str) == json.dumps(doc, indent=4, default=str)


def test_unserializable_raises_like_json_dumps():
    for bad in ({"x": object()}, {(1, 2): 1}):
        with pytest.raises(TypeError):
            json.dumps(bad, indent=2)
        with pytest.raises(TypeError):
            jsonfmt.dumps(bad, indent=2)
