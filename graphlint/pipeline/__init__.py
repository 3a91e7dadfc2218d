"""Deployment folders as pipelines: the graphs a runtime runs together and the contracts between them.

A multimodal model is deployed as a folder: a vision graph, a text-embedding graph, a language
model, and the configs that say how they are fed (``config.json``, ``preprocessor_config.json``,
``processor_config.json``, ``generation_config.json``, ``genai_config.json``). The failures users
meet most live between those files ("image features and image tokens do not match"), so a
folder is read into a :class:`Pipeline`: its stages (one model file each, with a role), the
edges between them (which output feeds which input, and whether the rows are scattered into
the language model's ``inputs_embeds`` at the image-token positions), and the configs as parsed
JSON with the line of each key. :mod:`.detect` recognizes the layouts, :mod:`.configs` reads the
files, :mod:`.processors` says what the processor feeds, :mod:`.contracts` checks each edge and
each fed size, and :mod:`.lint` lints the stages with those sizes and runs the pipeline rules.

Like the model IR, a pipeline is built once and then only read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphlint.pipeline.configs import Configs

# Stage roles. A runtime feeds the vision side's rows into the language model's inputs_embeds at
# the image-token positions; the text-embedding graph's output is those inputs_embeds.
VISION = "vision"
MERGER = "merger"  # Qwen2-VL's patch merger, a graph of its own in optimum-intel's layout
TEXT_EMBEDDINGS = "text_embeddings"
LANGUAGE_MODEL = "language_model"
ENCODER = "encoder"
DECODER = "decoder"
OTHER = "other"
ROLES = (VISION, MERGER, TEXT_EMBEDDINGS, LANGUAGE_MODEL, ENCODER, DECODER, OTHER)

# Layouts (how the folder was made), named in reports.
OPTIMUM_INTEL = "optimum-intel"
OPTIMUM_ONNX = "optimum-onnx"
GENAI = "onnxruntime-genai"
CONFIGURED = "graphlint.toml"


@dataclass(frozen=True)
class Stage:
    name: str  # "vision", "language_model", ... (the layout's own word, or the [pipeline] table's)
    path: str  # the model file, as the run names it (folder as given + file name)
    role: str


@dataclass(frozen=True)
class Edge:
    """``source`` stage's output feeds ``dest`` stage's input.

    ``merge``: "image_tokens" when the runtime scatters the source's rows into the destination at
    the image-token positions (its row count must equal the tokens the processor inserted; its
    last dim the destination's width); "" for a direct feed (same dtype and shape).
    ``output`` / ``input``: port names; "" means the stage's first output / the input its role
    implies (``inputs_embeds`` of a language model), resolved against the graphs when linted.
    """

    source: str
    output: str
    dest: str
    input: str
    merge: str = ""
    implied: bool = False  # made from the stages' roles, not stated: dropped where the graphs lack the port

    def describe(self) -> str:
        arrow = " -[image tokens]-> " if self.merge else " -> "
        return f"{self.source}:{self.output or '?'}{arrow}{self.dest}:{self.input or '?'}"


@dataclass
class Pipeline:
    folder: str  # as given on the command line
    layout: str
    name: str
    stages: list[Stage]
    edges: list[Edge]
    configs: Configs
    notes: list[str] = field(default_factory=list)  # what detection could not settle

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    def by_role(self, role: str) -> list[Stage]:
        return [s for s in self.stages if s.role == role]

    @property
    def paths(self) -> list[str]:
        return [s.path for s in self.stages]

    @property
    def title(self) -> str:
        return f"{self.folder} ({self.layout} pipeline '{self.name}')"
