"""The rule interface: what a rule declares, what it receives, and what it emits.

A rule is a small class, one per file, whose docstring is its documentation (ruff style):
a one-line summary, then ``## What it checks``, ``## Why it matters``, ``## Example`` and
``## Fix`` sections. It declares the dialects and op types it wants; the engine indexes
nodes by op type once and calls ``check_node`` only for those nodes, so a rule's cost is
proportional to the nodes it asks for. Model-level rules implement ``check`` instead.

    class ResizeAlignCorners(Rule):
        \"\"\"Resize uses align_corners. ...\"\"\"
        id = "GL0201"; name = "resize-align-corners"; family = "drift"
        op_types = frozenset({"Resize"})

        def check_node(self, node, ctx):
            if node.attr("coordinate_transformation_mode") == "align_corners":
                yield ctx.finding(node, "...")
"""

from __future__ import annotations

import enum
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from graphlint.ir import ONNX, Model, Node, SourceLoc, Value

if TYPE_CHECKING:
    from graphlint.analysis import Analyses
    from graphlint.analysis.origins import Origin
    from graphlint.target import Target

ALL_OPS = frozenset({"*"})

FAMILIES = {
    "GL0": "validity",
    "GL1": "target-support",
    "GL2": "drift",
    "GL3": "dynamic-shapes",
    "GL4": "input-contract",
    "GL5": "layout",
    "GL6": "precision",
    "GL7": "quantization",
    "GL8": "pipeline",
    "GL9": "tool",
}


class Severity(enum.IntEnum):
    INFO = 1
    WARNING = 2
    ERROR = 3

    @classmethod
    def parse(cls, text: str) -> Severity:
        aliases = {"note": "info", "information": "info", "warn": "warning", "err": "error"}
        key = aliases.get(text.lower(), text.lower())
        try:
            return cls[key.upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (use info, warning or error)") from None

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def sarif_level(self) -> str:
        return {Severity.INFO: "note", Severity.WARNING: "warning", Severity.ERROR: "error"}[self]


@dataclass(frozen=True)
class Rewrite:
    """A suggested graph rewrite, as data the fix command can apply.

    ``safe`` means the rewrite preserves results exactly (making a default explicit,
    folding constants); unsafe rewrites change numbers on purpose and run only when
    named explicitly.
    """

    name: str  # e.g. "resize-explicit-coordinate-mode"; see graphlint.fix for the catalogue
    params: dict[str, Any] = field(default_factory=dict)
    safe: bool = True
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": self.params, "safe": self.safe, "description": self.description}


@dataclass
class Finding:
    rule_id: str
    rule_name: str
    severity: Severity
    message: str
    model: str  # model path as given
    location: SourceLoc
    node: str | None = None  # node label (name or op->output)
    op_type: str | None = None
    value: str | None = None
    target: str = ""
    rewrite: Rewrite | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    suppressed: str | None = None  # reason, when a suppression matched
    origin: Origin | None = None  # where the node came from in the model's code (set after the rules ran)

    @property
    def identity(self) -> str:
        """What the finding is about, stable across re-exports that reorder nodes."""
        return f"{self.location.graph_path}/{self.node or ''}|{self.value or ''}"

    @property
    def fingerprint(self) -> str:
        """Rule, model, subject and the rule's ``kind`` discriminator (a rule that can report one
        subject more than once sets ``kind=`` to say which problem each finding is)."""
        # "./m.onnx" and "m.onnx" are the same model; baselines use structural anchors (graphlint.workflow)
        model = posixpath.normpath(self.model.replace("\\", "/"))
        text = f"{self.rule_id}|{model}|{self.identity}"
        kind = self.properties.get("kind")
        if kind:
            text += f"|{kind}"
        import hashlib  # here, not at the top: OpenSSL's 3.6 MB would land in the inference child (bench/README.md)

        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def sort_key(self) -> tuple:
        loc = self.location
        return (self.model, loc.graph_path, loc.node_index if loc.node_index is not None else -1,
                self.rule_id, self.value or "", self.message)


_SECTION = re.compile(r"^##\s+(.+?)\s*$", re.M)


class Rule:
    """Base class of every rule. Subclasses set the class attributes and one check method."""

    id: ClassVar[str]
    name: ClassVar[str]  # kebab-case
    family: ClassVar[str] = ""  # derived from the id prefix when empty
    severity: ClassVar[Severity] = Severity.WARNING
    dialects: ClassVar[frozenset[str]] = frozenset({ONNX})
    op_types: ClassVar[frozenset[str] | None] = None  # None: model-level rule; ALL_OPS: every node
    domains: ClassVar[frozenset[str] | None] = None  # restrict node dispatch to these domains
    targets: ClassVar[frozenset[str] | None] = None  # target names it applies to; None: all
    requires: ClassVar[tuple[str, ...]] = ()  # analyses computed before the rule runs
    # Analyses whose result a child process may still be computing ("onnx_checker"): the engine
    # runs these rules after the others, so the wait overlaps their work.
    waits_for: ClassVar[frozenset[str]] = frozenset()
    # Whether the rule reads value types or shapes. Every rule now sees the complete, typed model,
    # so the engine no longer reads this; it stays for rule packs that set it.
    reads_types: ClassVar[bool] = True
    # "model": runs on each model (check / check_node); "pipeline": runs once per deployment folder's
    # pipeline on its contracts (check_pipeline, graphlint.pipeline.engine), never on a model alone;
    # "confirm": runs on what the engines did under --confirm (check_confirm, graphlint.confirm).
    scope: ClassVar[str] = "model"
    fixable: ClassVar[bool] = False  # attaches a machine-applicable rewrite
    source: ClassVar[str] = ""  # where the rule's facts come from (docs, data files)
    pack: ClassVar[str] = "builtin"  # set by the registry from the entry point

    def check(self, ctx: RuleContext) -> Iterable[Finding]:
        return ()

    def check_node(self, node: Node, ctx: RuleContext) -> Iterable[Finding]:
        return ()

    def check_pipeline(self, ctx: Any) -> Iterable[Finding]:
        """Pipeline rules (``scope = "pipeline"``): ``ctx`` is a graphlint.pipeline.engine.PipelineContext."""
        return ()

    def check_confirm(self, ctx: Any) -> Iterable[Finding]:
        """Runtime rules (``scope = "confirm"``): ``ctx`` is a graphlint.confirm.ConfirmContext."""
        return ()

    def check_pipeline_confirm(self, ctx: Any) -> Iterable[Finding]:
        """Runtime rules on a deployment folder run end to end (``scope = "confirm"``): ``ctx`` is a
        graphlint.pipeline.engine.PipelineContext with ``unpredicted``, the run's failures no finding predicted."""
        return ()

    # --- documentation -------------------------------------------------------------
    @classmethod
    def family_name(cls) -> str:
        return cls.family or FAMILIES.get(cls.id[:3], "other")

    @classmethod
    def doc(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        return cls.doc().split("\n\n", 1)[0].replace("\n", " ").strip() or cls.name

    @classmethod
    def sections(cls) -> dict[str, str]:
        doc = cls.doc()
        parts = _SECTION.split(doc)
        return {parts[i].strip().lower(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}

    @classmethod
    def pascal_name(cls) -> str:
        return "".join(p.capitalize() for p in re.split(r"[-_\s]+", cls.name) if p)


class RuleContext:
    """What a rule sees: the model, the target, shared analyses, options, and a finding factory."""

    def __init__(self, model: Model, target: Target, analyses: Analyses, options: dict[str, Any]) -> None:
        self.model = model
        self.target = target
        self.analyses = analyses
        self.options = options
        self.rule: type[Rule] | None = None

    def analysis(self, name: str) -> Any:
        """The result of the analysis ``name`` for this model and target (list it in ``requires``)."""
        return self.analyses.get(name, self.target)

    @property
    def stats(self) -> Mapping[str, Any]:
        """The model's statistics: what the loader counted and the analyses computed so far recorded."""
        return MappingProxyType(self.analyses.stats)

    def finding(
        self,
        node: Node | None,
        message: str,
        *,
        value: Value | str | None = None,
        rewrite: Rewrite | None = None,
        severity: Severity | None = None,
        **properties: Any,
    ) -> Finding:
        rule = self.rule
        assert rule is not None, "finding() called outside a rule"
        vname = value.name if isinstance(value, Value) else value
        return Finding(
            rule_id=rule.id,
            rule_name=rule.name,
            severity=severity or rule.severity,
            message=message,
            model=self.model.path,
            location=location_of(self.model, node, value),
            node=node.label if node is not None else None,
            op_type=node.op_type if node is not None else None,
            value=vname,
            target=self.target.spec,
            rewrite=rewrite,
            properties={k: v for k, v in properties.items() if v is not None},
        )


def location_of(model: Model, node: Node | None, value: Value | str | None = None) -> SourceLoc:
    """The source location of a node, or of a value (its producer, or the input that declares it)."""
    if node is None and isinstance(value, Value):
        node = value.producer
        if node is None:
            return SourceLoc(file=model.path, graph_path=value.graph.path, node_name=value.name)
    if node is None:
        return SourceLoc(file=model.path)
    if node.source is not None:
        return node.source
    return SourceLoc(file=model.path, graph_path=node.graph.path, node_index=node.index, node_name=node.name)


def quote(name: str | None) -> str:
    """Names in messages are quoted so people can search for them."""
    return f"'{name}'" if name else "'<unnamed>'"


def quote_node(node: Node) -> str:
    """How a message starts about a node: ``Node 'name' (OpType)``."""
    return f"Node {quote(node.label)} ({node.op_type})"


def iter_rules(rules: Iterable[type[Rule]]) -> Iterator[type[Rule]]:
    return iter(sorted(rules, key=lambda r: r.id))
