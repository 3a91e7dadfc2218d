"""Symbolic dimension arithmetic: small integer polynomials over dim symbols.

Dims in shape analysis are ``Poly`` objects: ``Poly.const(16)``, ``Poly.sym("seq")``,
``seq + 16``, ``2*batch*seq``. Canonical form (sorted terms) makes equality structural, so
``16 + seq`` from one branch equals ``seq + 16`` from another. Strings that exporters write
as dim_param (``"s0 + 16"``, ``"2*s1"``) are parsed with :mod:`ast`; anything else is one
opaque symbol.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Mapping

Mono = tuple[str, ...]  # sorted symbol names (repeats for powers)
_INTERNED: dict[tuple, Poly] = {}  # canonical terms -> the one Poly with those terms


class Poly:
    """An integer polynomial over dim symbols, immutable and interned.

    Interning (one object per canonical form) makes equality identity and hashing id-based,
    both at C speed: the shape pass compares dims, tests ``None in shape`` and keys dicts by
    shapes hundreds of thousands of times on a large model. The table only grows with the
    distinct dims a process sees (a few thousand for a big model).
    """

    __slots__ = ("is_const", "terms", "value")

    terms: tuple[tuple[Mono, int], ...]
    is_const: bool  # no symbols
    value: int | None  # the number when constant

    def __new__(cls, terms: Iterable[tuple[Mono, int]] = ()) -> Poly:
        acc: dict[Mono, int] = {}
        for m, c in terms:
            acc[m] = acc.get(m, 0) + c
        return cls._raw(tuple(sorted((m, c) for m, c in acc.items() if c)))

    @staticmethod
    def const(c: int) -> Poly:
        return _const(int(c))

    @staticmethod
    def sym(name: str) -> Poly:
        return _sym(name)

    @classmethod
    def _raw(cls, terms: tuple[tuple[Mono, int], ...]) -> Poly:
        """The interned Poly for terms already in canonical form (no normalization: the hot path)."""
        p = _INTERNED.get(terms)
        if p is None:
            p = object.__new__(cls)
            p.terms = terms
            p.is_const = all(not m for m, _ in terms)
            p.value = (terms[0][1] if terms else 0) if p.is_const else None
            p = _INTERNED.setdefault(terms, p)  # atomic: a racing thread's object wins consistently
        return p

    def __reduce__(self) -> tuple:  # copies and pickles come back as the interned object
        return (Poly._raw, (self.terms,))

    # --- queries --------------------------------------------------------------------
    @property
    def symbols(self) -> frozenset[str]:
        return frozenset(s for m, _ in self.terms for s in m)

    def to_dim(self) -> int | str:
        v = self.value
        return v if v is not None else str(self)

    # --- arithmetic -----------------------------------------------------------------
    def __add__(self, o: Poly) -> Poly:
        if self.is_const and o.is_const:  # numbers (shape values, Concat sizes): no normalizing
            return _const(self.value + o.value)  # type: ignore[operator]
        return Poly((*self.terms, *o.terms))

    def __sub__(self, o: Poly) -> Poly:
        if self.is_const and o.is_const:
            return _const(self.value - o.value)  # type: ignore[operator]
        return Poly((*self.terms, *((m, -c) for m, c in o.terms)))

    def __mul__(self, o: Poly) -> Poly:
        a, b = self.terms, o.terms
        if not a or not b:
            return _const(0)
        if len(b) == 1 and not b[0][0]:  # times a number (the common case in element counts)
            k = b[0][1]
            return self if k == 1 else Poly._raw(tuple((m, c * k) for m, c in a))
        if len(a) == 1 and not a[0][0]:
            return o * self
        if len(a) == 1 and len(b) == 1:  # monomial times monomial
            (m1, c1), (m2, c2) = a[0], b[0]
            return Poly._raw(((tuple(sorted(m1 + m2)), c1 * c2),))
        return Poly((tuple(sorted(m1 + m2)), c1 * c2) for m1, c1 in self.terms for m2, c2 in o.terms)

    def div_exact(self, o: Poly) -> Poly | None:
        """self / o when o is a single term dividing every term of self exactly, else None."""
        if len(o.terms) != 1:
            return None
        (om, oc), = o.terms
        if oc == 0:
            return None
        out = []
        for m, c in self.terms:
            rest = list(m)
            for s in om:
                if s not in rest:
                    return None
                rest.remove(s)
            if c % oc:
                return None
            out.append((tuple(rest), c // oc))
        return Poly(out)

    def floordiv(self, k: int) -> Poly | None:
        if k == 0:
            return None
        if self.is_const:
            return Poly.const((self.value or 0) // k)
        return self.div_exact(Poly.const(k))

    def subs(self, env: Mapping[str, int]) -> Poly:
        out = []
        for m, c in self.terms:
            rest = []
            for s in m:
                if s in env:
                    c *= env[s]
                else:
                    rest.append(s)
            out.append((tuple(rest), c))
        return Poly(out)

    # --- protocol -------------------------------------------------------------------
    # equality and hashing are object identity (see the class docstring)

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for m, c in sorted(self.terms, key=lambda t: (-len(t[0]), t[0])):
            body = "*".join(m)
            if not body:
                parts.append(str(c))
            elif c == 1:
                parts.append(body)
            elif c == -1:
                parts.append(f"-{body}")
            else:
                parts.append(f"{c}*{body}")
        return " + ".join(parts).replace("+ -", "- ")

    __repr__ = __str__


def cancel(a: Poly, b: Poly) -> tuple[Poly, Poly]:
    """Two single-term polys divided by the symbols they share: ``seq*batch*576`` against
    ``seq*576`` gives ``576*batch`` against ``576``, whose equality says batch = 1."""
    if len(a.terms) != 1 or len(b.terms) != 1:
        return a, b
    rest = list(b.terms[0][0])
    common = []
    for s in a.terms[0][0]:
        if s in rest:
            rest.remove(s)
            common.append(s)
    if not common:
        return a, b
    d = Poly._raw(((tuple(common), 1),))  # sorted: a subsequence of a's sorted symbols
    return a.div_exact(d) or a, b.div_exact(d) or b


@functools.lru_cache(maxsize=8192)
def _const(c: int) -> Poly:
    return Poly._raw((((), c),) if c else ())


@functools.lru_cache(maxsize=65536)
def _sym(name: str) -> Poly:
    return Poly._raw((((name,), 1),))


ONE = Poly.const(1)


_TIGHT_PLUS_MINUS = re.compile(r"[\w)][-+][\w(]")


@functools.lru_cache(maxsize=65536)
def parse_dim(text: str) -> Poly:
    """A dim_param string as a Poly: arithmetic over identifiers is understood, the rest is opaque.

    Exporters write sums with spaces (``s0 + 16``); a bare ``text-batch`` is a name, not a difference.
    """
    if _TIGHT_PLUS_MINUS.search(text):
        return Poly.sym(text)
    try:
        tree = ast.parse(text.strip(), mode="eval").body
        p = _eval(tree)
        if p is not None:
            return p
    except (SyntaxError, ValueError, RecursionError):
        pass
    return Poly.sym(text)


def _eval(node: ast.AST) -> Poly | None:
    if isinstance(node, ast.Name):
        return Poly.sym(node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return Poly.const(node.value)
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left), _eval(node.right)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, ast.FloorDiv) and b.is_const:
            return a.floordiv(b.value or 0)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        a = _eval(node.operand)
        return None if a is None else Poly.const(0) - a
    return None


def to_poly(d: int | str | None) -> Poly | None:
    if d is None:
        return None
    if isinstance(d, int):
        return Poly.const(d)
    return parse_dim(d)


def product(dims: Iterable[Poly | None]) -> Poly | None:
    if isinstance(dims, tuple):
        return _product_cached(dims)
    return _product(dims)


@functools.lru_cache(maxsize=16384)
def _product_cached(dims: tuple[Poly | None, ...]) -> Poly | None:
    return _product(dims)


def _product(dims: Iterable[Poly | None]) -> Poly | None:
    out = ONE
    for d in dims:
        if d is None:
            return None
        out = out * d
    return out
