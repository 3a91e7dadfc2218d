"""Recognize deployment folders: which files are stages of one pipeline, and how they connect.

Layouts, each by the file names its tool writes (the tool's own source cited):

- optimum-intel (``optimum-cli export openvino``, optimum-intel 2.2.0,
  optimum/intel/openvino/modeling_visual_language.py: ``_submodel_names`` and the
  ``openvino_<name>_model.xml`` files it loads): ``openvino_language_model.xml``,
  ``openvino_text_embeddings_model.xml``, ``openvino_vision_embeddings_model.xml`` and, by
  architecture, ``openvino_vision_embeddings_merger_model.xml`` (Qwen2-VL, Qwen2.5-VL),
  ``openvino_vision_projection_model.xml`` (Phi-4-multimodal), ``openvino_resampler_model.xml``
  (MiniCPM-V), ``openvino_multi_modal_projector_model.xml`` (LLaVA-NeXT-Video); seq2seq:
  ``openvino_encoder_model.xml`` + ``openvino_decoder_model.xml``.
- optimum ONNX (optimum / optimum-onnx exporters' file names, also used by transformers.js under
  ``onnx/``): ``vision_encoder.onnx`` + ``embed_tokens.onnx`` + ``decoder_model_merged.onnx``
  (or ``decoder_model.onnx``); seq2seq ``encoder_model.onnx`` + ``decoder_model*.onnx``.
- onnxruntime-genai: ``genai_config.json`` names the graphs in its ``model.decoder``,
  ``model.vision`` and ``model.embedding`` sections (onnxruntime-genai 0.18 config schema).
- hand-made: a ``[pipeline]`` table in the folder's ``graphlint.toml`` (``docs/pipelines.md``).

A folder given on the command line is searched (:data:`MAX_DEPTH` levels, hidden folders and
virtual environments skipped); model files that belong to no pipeline are returned to be linted
alone, as before.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field

from graphlint.errors import UsageError
from graphlint.fsutil import read_toml
from graphlint.pipeline import (
    CONFIGURED,
    DECODER,
    ENCODER,
    GENAI,
    LANGUAGE_MODEL,
    MERGER,
    OPTIMUM_INTEL,
    OPTIMUM_ONNX,
    OTHER,
    ROLES,
    TEXT_EMBEDDINGS,
    VISION,
    Edge,
    Pipeline,
    Stage,
)
from graphlint.pipeline.configs import read_configs

MAX_DEPTH = 4
MODEL_SUFFIXES = (".onnx", ".xml")
_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages"}

# optimum-intel VLM: file -> (stage name, role), in pipeline order
_OV_VLM = {
    "openvino_vision_embeddings_model.xml": ("vision_embeddings", VISION),
    "openvino_vision_embeddings_merger_model.xml": ("vision_embeddings_merger", MERGER),
    "openvino_vision_projection_model.xml": ("vision_projection", MERGER),
    "openvino_resampler_model.xml": ("resampler", MERGER),
    "openvino_multi_modal_projector_model.xml": ("multi_modal_projector", MERGER),
    "openvino_text_embeddings_model.xml": ("text_embeddings", TEXT_EMBEDDINGS),
    "openvino_language_model.xml": ("language_model", LANGUAGE_MODEL),
}
_OV_SEQ2SEQ = {
    "openvino_encoder_model.xml": ("encoder", ENCODER),
    "openvino_decoder_model.xml": ("decoder", DECODER),
    "openvino_decoder_with_past_model.xml": ("decoder_with_past", DECODER),
}
_ONNX_VLM = {
    "vision_encoder.onnx": ("vision_encoder", VISION),
    "embed_tokens.onnx": ("embed_tokens", TEXT_EMBEDDINGS),
    "decoder_model_merged.onnx": ("decoder_model_merged", LANGUAGE_MODEL),
    "decoder_model.onnx": ("decoder_model", LANGUAGE_MODEL),
}
_ONNX_SEQ2SEQ = {
    "encoder_model.onnx": ("encoder_model", ENCODER),
    "decoder_model_merged.onnx": ("decoder_model_merged", DECODER),
    "decoder_model.onnx": ("decoder_model", DECODER),
    "decoder_with_past_model.onnx": ("decoder_with_past_model", DECODER),
}


@dataclass
class Found:
    pipelines: list[Pipeline] = field(default_factory=list)
    loose: list[str] = field(default_factory=list)  # model files of no pipeline: linted alone


def find(folder: str) -> Found:
    """Pipelines in ``folder`` and below, and the model files that belong to none."""
    found = Found()
    _search(folder, 0, found)
    return found


def _search(folder: str, depth: int, found: Found) -> None:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as e:
        raise UsageError(f"{folder}: cannot list the folder ({e.strerror})") from None
    files = {e.name for e in entries if e.is_file(follow_symlinks=False)}
    pipes = detect(folder, files)
    here = os.path.normpath(folder)
    claimed = {os.path.basename(p) for pipe in pipes for p in pipe.paths if os.path.normpath(os.path.dirname(p)) == here}
    found.pipelines.extend(pipes)
    for name in sorted(files):
        if name.lower().endswith(MODEL_SUFFIXES) and name not in claimed and _is_model(folder, name):
            found.loose.append(os.path.join(folder, name))
    if depth >= MAX_DEPTH:
        return
    for e in entries:
        if e.is_dir(follow_symlinks=False) and not e.name.startswith(".") and e.name not in _SKIP_DIRS \
                and not os.path.isfile(os.path.join(e.path, "pyvenv.cfg")):
            if e.name == "onnx" and any(p.folder == folder for p in pipes):
                continue  # transformers.js layout: the onnx/ files were taken by the folder's pipeline
            _search(e.path, depth + 1, found)


def _is_model(folder: str, name: str) -> bool:
    """An .xml is a model only when it is OpenVINO IR (a .bin beside it, or an <net> root):
    a folder may hold other XML."""
    if not name.lower().endswith(".xml"):
        return True
    if os.path.isfile(os.path.join(folder, name[:-4] + ".bin")):
        return True
    try:
        with open(os.path.join(folder, name), "rb") as fh:
            head = fh.read(512)
    except OSError:
        return False
    return b"<net" in head


def detect(folder: str, files: set[str]) -> list[Pipeline]:
    """The pipelines of one folder (not its subfolders)."""
    if "graphlint.toml" in files:
        pipes = _configured(folder)
        if pipes:
            return pipes
    if "genai_config.json" in files:
        pipe = _genai(folder)
        if pipe is not None:
            return [pipe]
    for table, layout, kind in ((_OV_VLM, OPTIMUM_INTEL, "vlm"), (_OV_SEQ2SEQ, OPTIMUM_INTEL, "seq2seq")):
        pipe = _by_names(folder, files, table, layout, kind)
        if pipe is not None:
            return [pipe]
    sub = os.path.join(folder, "onnx")
    onnx_files = files
    onnx_dir = folder
    if os.path.isdir(sub) and not (files & set(_ONNX_VLM) | files & set(_ONNX_SEQ2SEQ)):
        onnx_dir, onnx_files = sub, {n for n in os.listdir(sub) if os.path.isfile(os.path.join(sub, n))}
    for table, kind in ((_ONNX_VLM, "vlm"), (_ONNX_SEQ2SEQ, "seq2seq")):
        pipe = _by_names(folder, onnx_files, table, OPTIMUM_ONNX, kind, model_dir=onnx_dir)
        if pipe is not None:
            return [pipe]
    return []


def _by_names(folder: str, files: set[str], table: dict[str, tuple[str, str]], layout: str, kind: str,
              model_dir: str | None = None) -> Pipeline | None:
    model_dir = model_dir or folder
    present = [(f, *table[f]) for f in table if f in files]
    roles = {role for _, _, role in present}
    if kind == "vlm" and not ({VISION, LANGUAGE_MODEL} <= roles):
        return None
    if kind == "seq2seq" and not ({ENCODER, DECODER} <= roles):
        return None
    if kind == "vlm" and layout == OPTIMUM_ONNX:  # merged decoder and plain decoder: the merged one runs
        names = [f for f, _, _ in present]
        if "decoder_model_merged.onnx" in names:
            present = [p for p in present if p[0] != "decoder_model.onnx"]
    stages = [Stage(name, os.path.join(model_dir, f), role) for f, name, role in present]
    configs = read_configs(folder)
    name = str(configs.value("config.json", "model_type", "") or os.path.basename(os.path.normpath(folder)))
    return Pipeline(folder, layout, name, stages, _default_edges(stages), configs)


def _default_edges(stages: list[Stage]) -> list[Edge]:
    """The edges a runtime of these roles wires: vision -> merger(s) -> language model (at the image
    tokens), text embeddings -> language model, encoder -> decoder(s)."""
    by_role: dict[str, list[Stage]] = {}
    for s in stages:
        by_role.setdefault(s.role, []).append(s)
    edges: list[Edge] = []
    lm = by_role.get(LANGUAGE_MODEL, [None])[0]
    chain = by_role.get(VISION, [])[:1] + by_role.get(MERGER, [])
    for a, b in itertools.pairwise(chain):
        edges.append(Edge(a.name, "", b.name, "", implied=True))
    if chain and lm is not None:
        edges.append(Edge(chain[-1].name, "", lm.name, "inputs_embeds", merge="image_tokens", implied=True))
    for emb in by_role.get(TEXT_EMBEDDINGS, []):
        if lm is not None:
            edges.append(Edge(emb.name, "", lm.name, "inputs_embeds", implied=True))
    for enc in by_role.get(ENCODER, []):
        for dec in by_role.get(DECODER, []):
            edges.append(Edge(enc.name, "", dec.name, "encoder_hidden_states", implied=True))
    return edges


def _genai(folder: str) -> Pipeline | None:
    configs = read_configs(folder)
    model = configs.value("genai_config.json", "model")
    if not isinstance(model, dict):
        return None
    sections = (("vision", VISION), ("embedding", TEXT_EMBEDDINGS), ("decoder", LANGUAGE_MODEL))
    stages: list[Stage] = []
    notes: list[str] = []
    for key, role in sections:
        sec = model.get(key)
        if not isinstance(sec, dict) or not isinstance(sec.get("filename"), str):
            continue
        path = _inside(folder, sec["filename"])
        if path is None:
            notes.append(f"genai_config.json model.{key}.filename {sec['filename']!r} is outside the folder "
                         "or missing: not linted")
            continue
        stages.append(Stage(key, path, role))
    if not any(s.role == LANGUAGE_MODEL for s in stages):
        return None
    edges: list[Edge] = []
    ios = {key: (model.get(key) or {}) for key, _ in sections}
    names = {s.name for s in stages}
    emb_in = ios["embedding"].get("inputs", {}) if isinstance(ios["embedding"], dict) else {}
    dec_in = ios["decoder"].get("inputs", {}) if isinstance(ios["decoder"], dict) else {}
    vis_out = ios["vision"].get("outputs", {}) if isinstance(ios["vision"], dict) else {}
    if "vision" in names and "embedding" in names:
        # genai's embedding graph takes the image features and merges them itself (phi3v, qwen2.5-vl)
        edges.append(Edge("vision", str(vis_out.get("image_features", "")), "embedding",
                          str(emb_in.get("image_features", "image_features")), merge="image_tokens"))
    if "embedding" in names:
        emb_out = ios["embedding"].get("outputs", {}) if isinstance(ios["embedding"], dict) else {}
        edges.append(Edge("embedding", str(emb_out.get("inputs_embeds", "")), "decoder",
                          str(dec_in.get("inputs_embeds", "inputs_embeds"))))
    elif "vision" in names:
        edges.append(Edge("vision", str(vis_out.get("image_features", "")), "decoder",
                          str(dec_in.get("inputs_embeds", "inputs_embeds")), merge="image_tokens"))
    name = str(model.get("type") or os.path.basename(os.path.normpath(folder)))
    return Pipeline(folder, GENAI, name, stages, edges, configs, notes)


def _inside(folder: str, rel: str) -> str | None:
    """``rel`` resolved in ``folder``, or None when it leaves the folder (absolute, ``..``, a link
    out) or names no file: model files are untrusted, like external-data paths."""
    if os.path.isabs(rel) or ".." in rel.replace("\\", "/").split("/"):
        return None
    path = os.path.join(folder, rel)
    real, base = os.path.realpath(path), os.path.realpath(folder)
    if os.path.commonpath([real, base]) != base or not os.path.isfile(path):
        return None
    return path


def _configured(folder: str) -> list[Pipeline]:
    """``[pipeline]`` (or ``[[pipeline]]``) in the folder's graphlint.toml; a malformed table is a
    usage error naming the key, as every configuration problem is."""
    where = os.path.join(folder, "graphlint.toml")
    raw = read_toml(where).get("pipeline")
    if raw is None:
        return []
    tables = raw if isinstance(raw, list) else [raw]
    pipes = []
    for i, t in enumerate(tables):
        if not isinstance(t, dict):
            raise UsageError(f"{where}: [pipeline] must be a table")
        pipes.append(_configured_one(folder, where, t, i))
    return pipes


def _configured_one(folder: str, where: str, t: dict, i: int) -> Pipeline:
    stages = []
    for j, s in enumerate(t.get("stage", [])):
        key = f"pipeline.stage[{j}]"
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not isinstance(s.get("model"), str):
            raise UsageError(f"{where}: {key} needs a name and a model (strings)")
        role = s.get("role", OTHER)
        if role not in ROLES:
            raise UsageError(f"{where}: {key}.role {role!r} is not one of {', '.join(ROLES)}")
        path = _inside(folder, s["model"])
        if path is None:
            raise UsageError(f"{where}: {key}.model {s['model']!r} is not a file inside {folder}")
        stages.append(Stage(s["name"], path, role))
    if not stages:
        raise UsageError(f"{where}: [pipeline] has no [[pipeline.stage]]")
    names = {s.name for s in stages}
    edges = []
    for j, e in enumerate(t.get("edge", [])):
        key = f"pipeline.edge[{j}]"
        try:
            src, out = str(e["from"]).split(":", 1)
            dst, inp = str(e["to"]).split(":", 1)
        except (KeyError, TypeError, ValueError):
            raise UsageError(f"{where}: {key} needs from = \"stage:output\" and to = \"stage:input\"") from None
        if src not in names or dst not in names:
            raise UsageError(f"{where}: {key} names a stage that is not in [[pipeline.stage]]")
        merge = e.get("merge", "")
        if merge not in ("", "image_tokens"):
            raise UsageError(f"{where}: {key}.merge must be \"image_tokens\" or absent")
        edges.append(Edge(src, out, dst, inp, merge))
    names_cfg = [n for n in (t.get("config"), t.get("processor")) if isinstance(n, str)]
    configs = read_configs(folder)
    for n in names_cfg:
        if _inside(folder, n) is None:
            raise UsageError(f"{where}: pipeline config {n!r} is not a file inside {folder}")
    name = str(t.get("name") or f"pipeline{i}")
    return Pipeline(folder, CONFIGURED, name, stages, edges if t.get("edge") is not None else _default_edges(stages),
                    configs)
