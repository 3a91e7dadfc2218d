"""The recorded truth of the hand-exported VLM folders stays true.

testmodels/vlm/truth_hand.json says, per committed folder (testmodels/vlm/hand/) and seed
(hand/seeds.toml), what running the pipeline end to end did in ONNX Runtime and OpenVINO (default
threads and INFERENCE_NUM_THREADS=1) on each synthetic image: fails / wrong / ok. Here the engine part is
run again on the committed graphs (no torch export; the PyTorch reference is the seeded model rebuilt) and
every recorded outcome must come out the same.
"""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("PIL")  # the transformers image processors' PIL backend (no torchvision here)

from testmodels.vlm import hand_runner, hand_seeds

with open(hand_runner.TRUTH) as _f:
    TRUTH = json.load(_f)


@pytest.fixture(scope="module")
def rerun(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return hand_runner.truth(hand_runner.folders(), str(tmp_path_factory.mktemp("seeds")))


def test_truth_covers_every_folder_and_seed() -> None:
    ids = {e["id"] for e in hand_runner.folders()}
    assert ids == set(TRUTH) - {"_meta"}
    assert TRUTH["_meta"]["images"] == {k: list(v) for k, v in hand_runner.IMAGES.items()}


def test_seeds_change_their_base() -> None:
    """Every seed edits a value or swaps a graph: its materialized folder differs from its base there."""
    import tempfile

    def value(path: str, dotted: str) -> object:
        with open(path) as f:
            doc = json.load(f)
        for key in dotted.split("."):
            doc = doc.get(key) if isinstance(doc, dict) else None
        return doc

    with tempfile.TemporaryDirectory() as tmp:
        for seed in hand_seeds.load_seeds():
            folder = hand_seeds.materialize(seed["id"], tmp)
            base = os.path.join(hand_seeds.HAND, seed["base"])
            for edit in seed.get("edit", []):
                assert value(os.path.join(folder, edit["file"]), edit["key"]) == edit["value"], seed["id"]
                assert value(os.path.join(base, edit["file"]), edit["key"]) != edit["value"], seed["id"]
            for name in os.listdir(os.path.join(hand_seeds.HAND, seed.get("files", "-"))) if "files" in seed else []:
                with open(os.path.join(folder, name), "rb") as a, open(os.path.join(base, name), "rb") as b:
                    assert a.read() != b.read(), (seed["id"], name)
            assert seed.get("edit") or seed.get("files"), seed["id"]


def test_recorded_outcomes_hold(rerun: dict) -> None:
    changed = []
    for fid, rec in TRUTH.items():
        if fid == "_meta":
            continue
        now = {(r["engine"], r["image"]): r for r in rerun[fid]["runs"]}
        for r in rec["runs"]:
            got = now[(r["engine"], r["image"])]
            if got["outcome"] != r["outcome"]:
                changed.append(f"{fid} {r['engine']} {r['image']}: recorded {r['outcome']}, now {got['outcome']} "
                               f"({got['message'][:120]})")
        assert rerun[fid]["verdict"] == rec["verdict"] or changed, fid
    assert not changed, "\n".join(changed)


def test_the_issue_cases_are_in_the_truth() -> None:
    """The behaviours the folders exist for (issue 36), so a rebuild that loses one is noticed."""
    def run(fid: str, engine: str, image: str) -> dict:
        return next(r for r in TRUTH[fid]["runs"] if r["engine"] == engine and r["image"] == image)

    for fid in ("llava_ts", "llava_dynamo"):  # healthy: every engine, every image
        assert set(TRUTH[fid]["verdict"].values()) == {"ok"}
    # batch declared dynamic, frozen at 1: ORT fails at batch 2, single images pass
    assert run("llava_ts_pooled", "ort", "pair")["outcome"] == "fails"
    assert run("llava_ts_pooled", "ort", "square")["outcome"] == "ok"
    # Qwen2-VL vision frozen at its export's patch count: the export size passes, every other fails
    for engine in hand_runner.ENGINES:
        assert run("qwen2vl_ts", engine, "square")["outcome"] == "ok"
        assert all(run("qwen2vl_ts", engine, i)["outcome"] == "fails" for i in ("wide", "tall", "small", "large"))
    # the seed classes: silently wrong preprocessing, failing contracts, a control that changes nothing
    for tag in ("ts", "dynamo"):
        assert set(TRUTH[f"llava_{tag}__rescale_off"]["verdict"].values()) == {"wrong"}
        assert set(TRUTH[f"llava_{tag}__extra_token"]["verdict"].values()) == {"fails"}
        assert set(TRUTH[f"llava_{tag}__control"]["verdict"].values()) == {"ok"}
