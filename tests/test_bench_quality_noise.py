"""The noise benchmark's subsamples: a seeded share of the training lines, in their order."""

from benchmarks.bench_quality_noise import subsample


def test_subsample_keeps_a_seeded_share_of_the_lines_in_order(tmp_path):
    train = tmp_path / "train.jsonl"
    lines = [f'{{"text": "document {i}"}}\n'.encode() for i in range(200)]
    train.write_bytes(b"".join(lines))
    got = subsample(train, 0.9, 3, tmp_path / "a.jsonl").read_bytes().splitlines(keepends=True)
    assert len(got) == 180
    positions = [lines.index(line) for line in got]
    assert positions == sorted(set(positions))  # distinct training lines, in the file's order
    again = subsample(train, 0.9, 3, tmp_path / "b.jsonl").read_bytes()
    other = subsample(train, 0.9, 4, tmp_path / "c.jsonl").read_bytes()
    assert again == b"".join(got) and other != again
