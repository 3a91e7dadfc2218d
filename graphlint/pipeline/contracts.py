"""The facts each pipeline contract is judged on, computed once per pipeline (rules only read them).

- Ports: each edge's source output and destination input, resolved in the loaded stage graphs
  (an edge that names no port takes the first output / the ``inputs_embeds`` input).
- Feeds: for every source image size the processor arithmetic covers
  (:meth:`~graphlint.pipeline.processors.Processor.sample_sizes`), what each vision-side stage is
  fed, and how many rows it emits there: the stage graph evaluated at those concrete shapes by the
  same shape walk every GL3 rule uses (:func:`graphlint.analysis.shapes.evaluate`), chained through
  the merger stages along the edges. A size the walk finds a conflict at is recorded with the
  conflict, which is how a graph frozen at its export's size shows.
- Fed shapes per stage input, for the per-stage shape rules (GL3003 reads them as the sizes that
  will be fed: ``options["fed"]``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from graphlint.analysis import Analyses
from graphlint.analysis.shapes import evaluate
from graphlint.ir import Model, Value
from graphlint.pipeline import LANGUAGE_MODEL, MERGER, VISION, Edge, Pipeline

Shape = tuple[int, ...]


@dataclass
class StageModel:
    model: Model
    analyses: Analyses


@dataclass
class EdgeFacts:
    edge: Edge
    out: Value | None  # the source output (None: the stage has no such output)
    inp: Value | None
    problem: str = ""  # why a port could not be resolved


@dataclass
class FeedFacts:
    """One source image through the vision side."""

    feed: Any  # processors.ImageFeed
    fed: dict[str, dict[str, Shape]] = field(default_factory=dict)  # stage -> input -> shape
    rows: int | None = None  # rows the last vision-side stage emits (None: not computable)
    width: int | None = None
    conflict: str = ""  # the shape walk's conflict at this size (a graph frozen at another size)
    conflict_stage: str = ""
    unknown: str = ""  # why rows is None
    images: int = 1  # images of the prompt this feed is (the feed's tensors hold all of them)


@dataclass
class Contracts:
    pipeline: Pipeline
    stages: dict[str, StageModel]
    processor: Any  # processors.Processor | None
    unknown_processor: str | None  # the class named in the configs that graphlint has no arithmetic for
    edges: list[EdgeFacts]
    feeds: list[FeedFacts]
    chain: list[str]  # vision-side stage names, in feeding order, ending at the merge edge
    processor_failures: dict[tuple[int, int], str] = field(default_factory=dict)  # source size -> error

    def merge_edge(self) -> EdgeFacts | None:
        return next((e for e in self.edges if e.edge.merge), None)


def _names(v: Value) -> tuple[str, ...]:
    """A port's names: OpenVINO IR ports carry several (``names`` in rt_info, comma-separated)."""
    raw = v.rt_info.get("names", "") if v.rt_info else ""
    return tuple(n.strip() for n in str(raw).split(",") if n.strip())


def fed_inputs(stages: dict[str, StageModel], pipeline: Pipeline, fed: Feeds) -> dict[str, dict[str, list[Shape]]]:
    """Per stage, per input: every shape the processor feeds it (vision stages' ``pixel_values``
    and the other image tensors the processor makes, under their own names)."""
    out: dict[str, dict[str, list[Shape]]] = {}
    for stage in pipeline.by_role(VISION):
        sm = stages.get(stage.name)
        if sm is None:
            continue
        per: dict[str, list[Shape]] = {}
        for feed, _ in fed.sent(sm.model):
            for name, shape in _stage_feed(sm.model, feed).items():
                if shape not in per.setdefault(name, []):
                    per[name].append(shape)
        if per:
            out[stage.name] = per
    return out


def _stage_feed(model: Model, feed: Any) -> dict[str, Shape]:
    """The processor's tensors for one image as a vision graph's inputs take them: a graph input of
    one rank more than the tensor gets a batch of one image in front."""
    tensors = {"pixel_values": tuple(feed.pixel_values), **{k: tuple(v) for k, v in feed.extras.items()}}
    pixel = pixel_input(model)
    out: dict[str, Shape] = {}
    for v in model.graph.inputs:
        shape = tensors.get("pixel_values" if v is pixel else v.name)
        if shape is None or v.shape is None:
            continue
        if len(v.shape) == len(shape) + 1:
            shape = (1, *shape)
        elif len(v.shape) == len(shape) - 1:
            shape = (shape[0] * shape[1], *shape[2:])  # the images' tiles (anyres, splitting): fed as the batch
        elif len(v.shape) != len(shape):
            continue
        out[v.name] = shape
    return out


def pixel_input(model: Model) -> Value | None:
    """The vision graph's input the processor's ``pixel_values`` go to: the input of that name, else the
    only floating-point input (optimum-intel names Qwen2-VL's patch input ``hidden_states``)."""
    ins = model.graph.inputs
    named = next((v for v in ins if v.name == "pixel_values"), None)
    if named is not None:
        return named
    floats = [v for v in ins if v.dtype and v.dtype.startswith(("float", "bfloat"))]
    return floats[0] if len(floats) == 1 else None


def build(pipeline: Pipeline, stages: dict[str, StageModel], processor: Any, unknown_processor: str | None,
          fed: Feeds) -> Contracts:
    # an edge the roles imply but the graphs do not have (a decoder-with-past takes no encoder output:
    # its cross-attention cache holds it) is no edge; a missing image-token port stays a problem
    edges = [ef for ef in (_resolve(e, stages) for e in pipeline.edges)
             if not (ef.problem and ef.edge.implied and not ef.edge.merge and ef.out is not None)]
    chain = _vision_chain(pipeline)
    c = Contracts(pipeline, stages, processor, unknown_processor, edges, [], chain, fed.failures)
    if processor is not None and chain and all(s in stages for s in chain):
        c.feeds = [_through_chain(c, feed, images) for feed, images in fed.sent(stages[chain[0]].model)]
    return c


@dataclass
class Feeds:
    """What the processor feeds, computed once per pipeline: one feed per distinct (tensors, tokens) over
    its sample sizes (many source sizes crop or resize to the same tensors), and the sizes at which its
    own arithmetic raises, as transformers' raises there too (a LLaVA-NeXT grid that rounds to zero)."""

    feeds: list[Any] = field(default_factory=list)
    failures: dict[tuple[int, int], str] = field(default_factory=dict)
    # the same feeds for a prompt of two images: processors concatenate every image tensor along
    # axis 0 and the runtimes run the vision graph once on all of them
    pairs: list[Any] = field(default_factory=list)

    @classmethod
    def of(cls, processor: Any) -> Feeds:
        out = cls()
        if processor is None:
            return out
        distinct: dict[tuple, Any] = {}
        for size in processor.sample_sizes():
            try:
                (feed,) = processor.feeds([size])
            except (ArithmeticError, ValueError, IndexError, KeyError) as e:
                out.failures[tuple(size)] = f"{type(e).__name__}: {e}"
                continue
            key = (feed.pixel_values, feed.tokens, feed.rows, tuple(sorted(feed.extras.items())),
                   tuple(sorted(feed.values.items())))
            distinct.setdefault(key, feed)
        out.feeds = list(distinct.values())
        out.pairs = [_two(f) for f in out.feeds]
        return out

    def sent(self, vision: Model) -> list[tuple[Any, int]]:
        """(feed, images in the prompt) for what reaches the vision graph ``vision``: every feed, and each
        as two images where the graph declares its batch dynamic."""
        return [(f, 1) for f in self.feeds] + ([(f, 2) for f in self.pairs] if batched(vision) else [])


def _two(feed: Any) -> Any:
    """``feed`` for two such images in one prompt (tensors doubled along axis 0, tokens and rows doubled)."""
    def double(shape: tuple[int, ...]) -> tuple[int, ...]:
        return (2 * shape[0], *shape[1:]) if shape else shape

    return dataclasses.replace(feed, pixel_values=double(tuple(feed.pixel_values)), tokens=2 * feed.tokens,
                               rows=2 * feed.rows, extras={k: double(tuple(v)) for k, v in feed.extras.items()})


def batched(model: Model) -> bool:
    """Whether the vision graph's image input declares axis 0 dynamic: it promises several images per call."""
    v = pixel_input(model)
    return v is not None and bool(v.shape) and not isinstance(v.shape[0], int)


def expected_rows(processor: Any, feed: Any) -> int:
    """The rows the vision graphs must emit for ``feed``. Where the runtime packs the tiles' rows itself
    (LLaVA-NeXT's anyres: unpadding and a newline row per line, in Python), the graphs emit every
    tile's patch rows and the packing makes the token count; elsewhere rows are the tokens."""
    from graphlint.pipeline.processors import table_arith

    if table_arith(processor.cls) == "anyres":
        tiles, (th, tw) = math.prod(feed.pixel_values[:-3]), feed.pixel_values[-2:]
        p = processor.params
        ps = int(p.get("patch_size") or 1)
        # the CLS row stays per tile unless the 'default' feature strategy drops it (processing_llava_next)
        extra = int(p.get("num_additional_image_tokens") or 0) - (p.get("vision_feature_select_strategy") == "default")
        return tiles * ((th // ps) * (tw // ps) + max(extra, 0))
    return feed.rows


def _vision_chain(pipeline: Pipeline) -> list[str]:
    """The vision stage, then each stage its output feeds directly, up to the merge edge."""
    vision = pipeline.by_role(VISION)
    if not vision:
        return []
    chain = [vision[0].name]
    while True:
        nxt = [e for e in pipeline.edges if e.source == chain[-1] and not e.merge]
        roles = {s.name: s.role for s in pipeline.stages}
        nxt = [e for e in nxt if roles.get(e.dest) == MERGER and e.dest not in chain]
        if not nxt:
            return chain
        chain.append(nxt[0].dest)


def _resolve(edge: Edge, stages: dict[str, StageModel]) -> EdgeFacts:
    src, dst = stages.get(edge.source), stages.get(edge.dest)
    if src is None or dst is None:
        return EdgeFacts(edge, None, None, "a stage of this edge could not be loaded")
    outs = src.model.graph.outputs
    out = _port(outs, edge.output) if edge.output else (outs[0] if outs else None)
    ins = dst.model.graph.inputs
    if edge.input:
        inp = _port(ins, edge.input)
    elif edge.merge or _port(ins, "inputs_embeds") is not None:
        inp = _port(ins, "inputs_embeds")
    else:  # a merger or projector: the input named like the output, else its first input
        inp = _port(ins, out.name) if out is not None else None
        inp = inp or (ins[0] if ins else None)
    problem = ""
    if out is None:
        problem = f"stage '{edge.source}' has no output '{edge.output}'"
    elif inp is None:
        problem = f"stage '{edge.dest}' has no input '{edge.input or 'inputs_embeds'}'"
    else:  # the ports as the graphs name them, for messages and the report
        edge = dataclasses.replace(edge, output=out.name, input=inp.name)
    return EdgeFacts(edge, out, inp, problem)


def _port(ports: list[Value], name: str) -> Value | None:
    return next((v for v in ports if v.name == name or name in _names(v)), None)


def _through_chain(c: Contracts, feed: Any, images: int = 1) -> FeedFacts:
    facts = FeedFacts(feed, images=images)
    shapes: dict[str, Shape] | None = None
    for i, name in enumerate(c.chain):
        sm = c.stages[name]
        if i == 0:
            inputs = _stage_feed(sm.model, feed)
        else:  # the previous stage's outputs, along the edges between the two
            inputs = {}
            for e in c.edges:
                if e.edge.source == c.chain[i - 1] and e.edge.dest == name and e.out is not None and e.inp is not None:
                    got = (shapes or {}).get(e.out.name)
                    if got is not None:
                        inputs[e.inp.name] = got
        facts.fed[name] = inputs
        if not inputs:
            facts.unknown = f"nothing the processor makes reaches stage '{name}'s inputs"
            return facts
        ev = evaluate(sm.model, inputs, sm.analyses.get("shapes", None))
        for event in ev.events:
            if event.kind in ("conflict", "reshape"):
                facts.conflict, facts.conflict_stage = _describe(event), name
                break
        shapes = {}
        for v in sm.model.graph.outputs:
            s = ev.shapes.get(v)
            if s is not None and all(d is not None and d.is_const for d in s):
                shapes[v.name] = tuple(int(d.value) for d in s)
        if facts.conflict:
            return facts
    me = c.merge_edge()
    last = (shapes or {}).get(me.out.name) if me is not None and me.out is not None else None
    if last is None and shapes:
        last = next(iter(shapes.values()))
    if last is None or len(last) < 2:
        facts.unknown = f"the shape walk cannot settle the output shape of stage '{c.chain[-1]}' at this size"
        return facts
    facts.rows, facts.width = math.prod(last[:-1]), last[-1]
    return facts


def _describe(event: Any) -> str:
    node = event.node
    what = "cannot reshape" if event.kind == "reshape" else "needs equal dims"
    return f"node '{node.label}' ({node.op_type}) {what}: {event.a} vs {event.b}"


def lm_stage(pipeline: Pipeline) -> str | None:
    lm = pipeline.by_role(LANGUAGE_MODEL)
    return lm[0].name if lm else None
