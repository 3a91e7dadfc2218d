"""``json.dumps(obj, indent=...)`` with the same bytes, several times faster.

With ``indent`` set, the standard library cannot use its C encoder and falls back to a
generator-per-container pure-Python one; a report of a few thousand findings then takes a
noticeable share of a CI run. This encoder keeps the standard layout (``","`` and a newline
between items, ``": "`` after keys, ``[]``/``{}`` for empty containers), the C string escaping
and the same type rules (str, None, bools, int and float subclasses, list/tuple, dict, then
``default``), so its output is byte-identical (tests/test_report_jsonfmt.py checks that). The same walk is
in C (``_fastjson.c``), used when it is built: twice as fast again.
Not supported: ``sort_keys``, ``skipkeys``, circular-reference detection (reports are trees).
"""

from __future__ import annotations

from collections.abc import Callable
from json.encoder import INFINITY, encode_basestring, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

try:
    from graphlint.report import _fastjson
except ImportError:  # built without a C compiler: the same encoder in Python, about 2.5x slower
    _fastjson = None


def _float(o: float) -> str:
    if o != o:
        return "NaN"
    if o == INFINITY:
        return "Infinity"
    if o == -INFINITY:
        return "-Infinity"
    return float.__repr__(o)


def _key(k: Any) -> str:
    """A dict key as the standard encoder converts it (before quoting)."""
    if isinstance(k, str):
        return k
    if isinstance(k, float):
        return _float(k)
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return int.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")


def dumps(obj: Any, *, indent: int = 2, ensure_ascii: bool = True,
          default: Callable[[Any], Any] | None = None) -> str:
    """What ``json.dumps(obj, indent=indent, ensure_ascii=ensure_ascii, default=default)`` returns."""
    quote = encode_basestring_ascii if ensure_ascii else encode_basestring
    if _fastjson is not None:
        try:
            return _fastjson.dumps(obj, indent, quote, default)
        except UnicodeEncodeError:  # a lone surrogate, which its UTF-8 buffer cannot hold
            pass
    return _dumps(obj, indent, quote, default)


def _dumps(obj: Any, indent: int, quote: Callable[[str], str], default: Callable[[Any], Any] | None) -> str:
    """dumps() in Python, where the C part is not built."""
    step = " " * indent
    out: list[str] = []
    put = out.append

    def encode(o: Any, pad: str) -> None:
        if isinstance(o, str):
            put(quote(o))
        elif o is None:
            put("null")
        elif o is True:
            put("true")
        elif o is False:
            put("false")
        elif isinstance(o, int):
            put(int.__repr__(o))
        elif isinstance(o, float):
            put(_float(o))
        elif isinstance(o, (list, tuple)):
            if not o:
                put("[]")
                return
            inner = pad + step
            sep = ",\n" + inner
            put("[\n" + inner)
            for i, x in enumerate(o):
                if i:
                    put(sep)
                if x.__class__ is str:  # the most common leaf, without a call
                    put(quote(x))
                else:
                    encode(x, inner)
            put("\n" + pad + "]")
        elif isinstance(o, dict):
            if not o:
                put("{}")
                return
            inner = pad + step
            sep = ",\n" + inner
            put("{\n" + inner)
            for i, (k, x) in enumerate(o.items()):
                if i:
                    put(sep)
                put(quote(k if k.__class__ is str else _key(k)) + ": ")
                if x.__class__ is str:
                    put(quote(x))
                else:
                    encode(x, inner)
            put("\n" + pad + "}")
        elif default is not None:
            encode(default(o), pad)
        else:
            raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")

    encode(obj, "")
    return "".join(out)
