"""The split benchmark's random hold-out: a seeded share of the training lines, the rest kept
in order, nothing lost or repeated."""

import json

from benchmarks.bench_quality_split import random_split


def test_random_split_holds_out_a_seeded_share_and_keeps_the_rest_in_order(tmp_path):
    train = tmp_path / "train.jsonl"
    texts = [f"document {i}" for i in range(200)]
    train.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    held = random_split(train, 0.2, 3, tmp_path / "a.jsonl")
    kept = [json.loads(x)["text"] for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert len(held) == 40 and len(kept) == 160
    assert sorted(held + kept, key=texts.index) == texts  # every line once, on one side
    assert kept == sorted(kept, key=texts.index)  # the training file's order
    assert random_split(train, 0.2, 3, tmp_path / "b.jsonl") == held
    assert random_split(train, 0.2, 4, tmp_path / "c.jsonl") != held
