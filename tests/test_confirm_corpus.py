"""``--confirm`` against recorded engine truth, on a subset of the real-model corpus (issue 37).

Each model below is linted with ``--confirm`` for each of its targets, one target per run, with the
truth run's sizes given as a shape profile (testmodels/corpus/confirm_conformance.py: min = opt =
the declared-run shapes, max = the other-size run's; OpenVINO compiled as the truth compiled it).
Positive = an error finding; the engine's verdict is what testmodels/corpus/truth.json records.

* every engine failure truth records (all happen at a given size) is an error: recall 1.0;
* no error on a model truth says runs.

The subset holds every false negative the static rules have on the corpus (wheel_khmersm@ir on
OpenVINO), each kind of recorded failure that confirm must keep an error (refused loads, failures
at the other size only, OpenVINO's empty outputs), and healthy models of each source (exports,
wheels with fixed inputs, optimum's merged decoder at a later step, ViT, an ORT-optimized graph).
``python -m testmodels.corpus.confirm_conformance`` measures the whole corpus
(docs/conformance.md, "--confirm").

KNOWN lists the cases confirm still gets wrong, each with its cause in graphlint/confirm; each is
asserted to be wrong still, so fixing one asks for its entry to go.
"""

from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

CASES = (
    # static false negative on the corpus
    "wheel_khmersm@ir",
    # truth failures that confirm must keep errors
    "wheel_khmersm",  # fails-run-alt on both engines (batch 2)
    "vit_dynhw_legacy_op17",  # fails-run-alt (ORT error; OpenVINO an empty output)
    "whisperenc_dynframes_legacy_op17@ir",  # OpenVINO's empty output at the other size, on the IR
    "llama_dynamo_op23",  # ORT fails-run-alt (RotaryEmbedding cache); OpenVINO runs it
    "wheel_silero_vad_v5",  # OpenVINO rejects; ORT runs it with the manifest's sample rate
    "vit_legacy_op17_qoperator",  # both engines reject
    "wheel_openwakeword_hey_jarvis",  # OpenVINO rejects (If condition of rank 2); ORT runs it
    # healthy models
    "bert_legacy_op13",
    "resnet_legacy_op16",
    "cliptext_legacy_op14_fused_ort@ir",
    "pl_optimum_text_llama_merged_step1",  # merged decoder, use_cache_branch true, past 8 / 16
    "pl_optimum_vision_vit_cls",
    "pl_skl2onnx_gb_reg",  # ORT runs it; OpenVINO has no conversion for the tree ensemble
    # a KV-cache decoder whose mask length is written 'past_sequence_length + 1' (an expression, no rule)
    "pl_optimum_text_gpt2_model",
)

KNOWN: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def rows() -> dict[str, dict]:
    from testmodels.corpus import confirm_conformance as cc
    from testmodels.corpus.build import corpus
    from testmodels.pool import isolated_map

    models = [m for m in corpus() if m.id in CASES]
    missing = set(CASES) - {m.id for m in models}
    assert not missing, f"not in the corpus: {sorted(missing)}"
    return isolated_map(cc.judge, models, key=lambda m: m.id, on_crash=cc._crashed_model, jobs=2, chunk=1)


def _cases(rows: dict[str, dict]):
    for mid in CASES:
        row = rows[mid]
        assert not row.get("crashed") and not row.get("missing_truth"), row
        for target, t in row["targets"].items():
            yield mid, target, t


@pytest.mark.slow
def test_confirm_recall_on_truth_failures(rows):
    """Every failure the engines show at the given sizes is an error under --confirm."""
    missed, positives = [], 0
    for mid, target, t in _cases(rows):
        if t["truth"] == "accepts":
            continue
        positives += 1
        caught = bool(t["confirm_errors"])
        if (mid, target) in KNOWN:
            assert not caught, f"{mid} on {target} is caught now: drop it from KNOWN"
            continue
        if not caught:
            missed.append((mid, target, t["truth"], t["truth_error"][:160], t["confirm"]))
    assert positives >= 10
    assert not missed, missed


@pytest.mark.slow
def test_confirm_no_error_on_models_that_run(rows):
    """No error under --confirm on a model both the truth run and confirm ran at those sizes."""
    wrong, negatives = [], 0
    for mid, target, t in _cases(rows):
        if t["truth"] != "accepts":
            continue
        negatives += 1
        if (mid, target) in KNOWN:
            assert t["confirm_errors"], f"{mid} on {target} has no error now: drop it from KNOWN"
            continue
        note = t["confirm"] or {}
        assert not note.get("skipped"), f"{mid} on {target}: confirm did not run: {note.get('skipped')}"
        given = [p for p in note.get("points", []) if p["label"].startswith("--shapes")]
        assert given and all(p["ok"] for p in given), f"{mid} on {target}: {note}"
        if t["confirm_errors"]:
            wrong.append((mid, target, t["confirm_errors"][:2]))
    assert negatives >= 10
    assert not wrong, wrong


@pytest.mark.slow
def test_confirm_runs_at_the_given_sizes(rows):
    """The points confirm ran are the truth run's sizes (min = opt = declared, max = the other run's)."""
    from testmodels.corpus import truth

    recorded = truth.load()["models"]
    for mid, target, t in _cases(rows):
        note = t["confirm"] or {}
        if not note.get("points"):
            continue
        shapes = recorded[mid]["shapes"]
        want = [shapes["declared"]] + ([shapes["other"]] if isinstance(shapes["other"], dict)
                                       and shapes["other"] != shapes["declared"] else [])
        got = [p["shapes"] for p in note["points"]]
        for w in want:
            assert any(all(g.get(k) == v for k, v in w.items() if k in g) for g in got), (mid, target, w, got)
