"""The severity contract of the built-in pack (docs/severity.md), as helpers the rules share.

* ``error`` means the target named by ``--target`` rejects the model or fails (or computes other
  results than the model means) at run time. Every error finding carries a ``basis`` property
  saying what shows it, in one of three forms:

  - ``support-table:rules/data/<file>#<entry>``: an entry of a support table shipped in the package;
  - ``engine-fact:rules/data/<file>#<id>``: a fact with its source and the test that shows it;
  - ``document:<url>``: a published document at a fixed version (tag or commit in the URL);
  - ``engine-run:<engine> <version> <device>``: the engine itself, run under ``--confirm``
    (graphlint.confirm), failed or computed something else on this model at a size to be fed.

* A spec violation the target tolerates is a ``warning`` that names who tolerates it and which
  tools reject it (:func:`who`).
* A finding whose premise is unknown (rank, shape, value, what the engine does) carries
  ``unknown=[...]`` and says so in its message; :func:`capped` keeps it below error.

``tests/test_severity_contract.py`` checks these over every rule, the test models and the ONNX
backend node tests. Not a rule module (leading underscore: rule discovery skips it).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from graphlint.rule import Severity
from graphlint.target import Target, resolve

BASIS_KINDS = ("support-table", "engine-fact", "document", "engine-run")

# Verdicts data files record per target (validity.toml, drift.toml `verdict` tables).
REJECTS = "rejects"  # load, conversion or compilation fails
WRONG = "wrong-results"  # runs, but computes something else than the model means
TOLERATES = "tolerates"  # runs it as the model means
FAILING = frozenset({REJECTS, WRONG})

# The engines graphlint has built-in targets for, in the order messages name them.
ENGINES = ("ort", "openvino", "trt")


def table_basis(rel: str, entry: str) -> str:
    """Basis of a verdict read from a support table (``rel`` relative to rules/data/)."""
    return f"support-table:rules/data/{rel}#{entry}"


def fact_basis(rel: str, fact_id: str) -> str:
    """Basis of an engine fact recorded in a data file with its source and evidence test."""
    return f"engine-fact:rules/data/{rel}#{fact_id}"


def profile_basis(target: Target, entry: str) -> str:
    """Basis of a verdict read from the target profile (rules/data/targets/*.toml)."""
    return f"support-table:{target.profile.get('_file', 'rules/data/targets/?')}#{entry}"


def document_basis(url: str | None) -> str | None:
    return f"document:{url}" if url else None


@functools.cache
def onnx_operator(op_type: str) -> str:
    """The ONNX operator specification of ``op_type`` at the installed onnx release."""
    import onnx

    return f"https://github.com/onnx/onnx/blob/v{onnx.__version__}/docs/Operators.md#{op_type}"


def onnx_ir() -> str:
    """The ONNX IR specification (graph inputs, value types) at the installed onnx release."""
    import onnx

    return f"https://github.com/onnx/onnx/blob/v{onnx.__version__}/docs/IR.md"


def target_document(target: Target) -> str | None:
    """The published document the target profile is built from (its first ``sources`` URL)."""
    return next((s for s in target.sources if s.startswith("https://")), None)


def capped(severity: Severity, unknown: Iterable[str] | None) -> Severity:
    """A finding whose premise is unknown is never an error."""
    return min(severity, Severity.WARNING) if unknown else severity


def severity_of(verdict: str | None) -> Severity:
    return Severity.ERROR if verdict in FAILING else Severity.WARNING


@functools.cache
def title(name: str) -> str:
    """The default profile's title of a built-in engine (``ONNX Runtime 1.32``)."""
    t = resolve(name)
    return t.profile.get("title", name)


def _names(target: Target) -> dict[str, str]:
    """Engine name -> the title messages use (the active target's own version for its engine)."""
    return {n: target.title.split(" (")[0] if n == target.name else title(n) for n in ENGINES}


def who(verdicts: Mapping[str, str], target: Target, tools: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """(engines that tolerate, engines and tools that reject), in a fixed order: a finding every
    target reports alike reads the same on each, so SARIF shows it once for all of them."""
    label = _names(target)
    ok = [label[n] for n in ENGINES if verdicts.get(n) == TOLERATES]
    bad = [label[n] for n in ENGINES if verdicts.get(n) in FAILING]
    return ok, [*bad, *tools]


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def spec_only_note(verdicts: Mapping[str, str], target: Target, tools: Iterable[str]) -> str:
    """The sentence a tolerated spec violation ends with: who runs it anyway and who refuses it.
    What each engine does in detail goes in the finding's ``engines`` property."""
    ok, bad = who(verdicts, target, tools)
    text = f"{_and(ok)} run{'s' if len(ok) == 1 else ''} such a model"
    return text + (f"; {_and(bad)} reject{'s' if len(bad) == 1 else ''} it" if bad else "") + "."


def rejected_note(verdicts: Mapping[str, str], target: Target) -> str:
    """'<engines> reject(s) such a model', the same sentence on every target that fails."""
    bad = who(verdicts, target)[1]
    return f"{_and(bad)} reject{'s' if len(bad) == 1 else ''} such a model"


def props(basis: str | None = None, unknown: Iterable[str] | None = None, **extra: Any) -> dict[str, Any]:
    """The contract's properties for ``ctx.finding``: ``basis`` on errors, ``unknown`` on guesses."""
    out = {k: v for k, v in extra.items() if v is not None}
    if basis:
        out["basis"] = basis
    if unknown:
        out["unknown"] = sorted(set(unknown))
    return out
