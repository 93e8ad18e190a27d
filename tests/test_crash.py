"""Kill -9 at random moments: the store always reopens at a whole commit, and replaying from its
offsets gives the batch result, with no document lost or counted twice.

Each trial forks a writer from a *zygote*, a helper process that has already imported
everything (forking is instant, where starting Python, numba, zarr and Icechunk takes ~1 s per
trial), lets it run ``anchorstream ingest`` over a small corpus with frequent checkpoints,
compactions and garbage collections, and kills it with SIGKILL after a random delay. The test
process then checks the committed state against the batch estimator over the documents before
the committed offset, resumes the ingestion in-process, and checks the final matrix against
the batch estimator over the whole corpus. The zygote never touches Icechunk or Zarr itself,
so it forks with no storage threads running.

A second test runs the same kills with a vocabulary capacity below the corpus's words, so that
words are admitted and evicted while the writer works; there the reference is the same stream
without a crash (what the active words are depends on the stream, so there is no batch
estimator over a fixed vocabulary): the committed state after a kill equals an uninterrupted
run stopped at the committed offset, and after the replay the store equals the uninterrupted
run of the whole corpus, slot for slot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from anchorstream.stats.cooccurrence import cooccurrence
from anchorstream.errors import StoreError
from anchorstream.store import CooccurrenceStore, open_committed
from anchorstream.text.tokenize import Tokenizer, count_matrix
from daemon.cli.ingest import file_key, ingest_files

ROOT = Path(__file__).resolve().parents[1]

#: Store settings of every trial: capacity above the corpus vocabulary and threshold 1, so the
#: active vocabulary is the same however the stream is cut (streaming equals batch).
#: Compactions run in steps of one shard pair (of 10), so kills also land between the commits
#: of a fold in progress.
STORE = {
    "capacity": 64, "admit_threshold": 1.0, "chunk_size": 8, "shard_size": 16,
    "max_segments": 3, "compact_step_seconds": 1e-9, "keep_versions": 2, "gc_every": 4,
    "gc_min_age": 0.0, "length_cap": 5.0,  # pairs weighted up to 5-token documents
}

#: The same with 20 slots for the corpus's 48 words: about 50 evictions spread over the whole
#: stream, from the seventh document on.
EVICTING_STORE = {**STORE, "capacity": 20}

ZYGOTE = textwrap.dedent(
    """
    import json, os, signal, sys, time, traceback
    import numpy as np
    from anchorstream._kernels.store import store_pair_delta, store_unique_counts
    from anchorstream.store import CooccurrenceStore, configure_logging
    from anchorstream.text.tokenize import Tokenizer
    from daemon.cli.ingest import ingest_files

    configure_logging()  # Icechunk's local-disk warning would go to stdout

    STORE = json.loads(sys.argv[1])
    # Load the compiled kernels now, so that children start working at once.
    u = store_unique_counts(np.array([0, 2], np.int64), np.array([0, 1], np.int32), 2)
    store_pair_delta(u[0], u[1], u[2], np.array([0.5]), 2, np.zeros((1, 2)))
    tokenizer = Tokenizer()
    tokenizer("warm up the regular expression")

    def child(job):
        store = CooccurrenceStore.open_or_create(job["url"], **STORE)
        ingest_files(store, [job["path"]], tokenizer=tokenizer,
                     checkpoint_every=job["every"], batch_size=job["batch"])

    for line in sys.stdin:
        job = json.loads(line)
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                child(job)
            except BaseException:
                traceback.print_exc()
                code = 1
            os._exit(code)
        killed = False
        status = None
        if job["delay"] is None:
            _, status = os.waitpid(pid, 0)
        else:
            deadline = t0 + job["delay"]
            while time.monotonic() < deadline:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                time.sleep(0.0005)
            else:
                os.kill(pid, signal.SIGKILL)
                killed = True
                _, status = os.waitpid(pid, 0)
        print(json.dumps({"killed": killed, "elapsed": time.monotonic() - t0,
                          "status": status}), flush=True)
    """
)


class CrashHarness:
    """A zygote process plus the corpus and its batch references."""

    def __init__(self, workdir: Path, *, store: dict = STORE, n_docs: int = 110, seed: int = 0):
        self.workdir = workdir
        self.store = store
        self._references: dict[int, object] = {}
        rng = np.random.default_rng(seed)
        words = [f"topic{k}word{j}" for k in range(6) for j in range(8)]
        self.n_words = len(words)
        lines = []
        for d in range(n_docs):
            if d % 37 == 5:
                lines.append("{this is not json")
                continue
            n = int(rng.integers(1, 12))
            lines.append(json.dumps({"text": " ".join(rng.choice(words, size=n))}))
        self.path = workdir / "corpus.jsonl"
        self.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        tok = Tokenizer()
        self.records = []  # (offset after line, tokens or None for a malformed line)
        offset = 0
        for line in lines:
            offset += len(line.encode("utf-8")) + 1
            tokens = tok(json.loads(line)["text"]) if line.startswith("{\"") else None
            self.records.append((offset, tokens))
        self.err = open(workdir / "zygote.err", "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE, json.dumps(store)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1",
                 "OMP_NUM_THREADS": "1"},
        )

    def run(self, url: str, delay: float | None, *, every: int = 8, batch: int = 7) -> dict:
        job = {"url": url, "path": str(self.path), "delay": delay, "every": every,
               "batch": batch}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"zygote died; see {self.workdir / 'zygote.err'}")
        return json.loads(line)

    def docs_before(self, offset: int) -> list[list[str]]:
        return [t for off, t in self.records if off <= offset and t is not None]

    def check(self, url: str, state, offset: int) -> None:
        """The committed ``state`` of ``url`` holds exactly the documents before ``offset``."""
        docs = self.docs_before(offset)
        assert state.n_docs_added == len(docs), "a document was lost or counted twice"
        if self.store["capacity"] >= self.n_words:
            self.check_equals_batch(state, docs)
        else:
            self.check_equals_uninterrupted(url, state, offset)

    def check_equals_batch(self, state, docs) -> None:
        c = state.cooccurrence
        ref = cooccurrence(count_matrix(docs, state.words), length_cap=c.length_cap)
        assert c.num_docs == ref.num_docs and c.num_tokens == ref.num_tokens
        scale = max(float(np.abs(ref.counts).max(initial=0.0)), 1.0)
        np.testing.assert_allclose(c.counts, ref.counts, rtol=1e-12, atol=1e-12 * scale)
        np.testing.assert_allclose(c.unigram, ref.unigram, rtol=1e-12)

    def reference(self, offset: int) -> tuple:
        """``(committed state, sketch items)`` of an uninterrupted stream of the documents
        before ``offset`` through a fresh store with the trials' settings (cached)."""
        if offset not in self._references:
            url = f"memory://crash-reference-{uuid.uuid4().hex}"
            s = CooccurrenceStore.create(url, **self.store)
            s.add(self.docs_before(offset))
            s.checkpoint()
            self._references[offset] = (open_committed(url), s.vocabulary.sketch_items())
        return self._references[offset]

    def check_equals_uninterrupted(self, url: str, state, offset: int) -> None:
        ref, sketch = self.reference(offset)
        # The same words in the same slots, the same matrix, and the same sketch (which
        # decides the admissions and evictions still to come).
        assert state.words == ref.words and np.array_equal(state.slots, ref.slots)
        c, r = state.cooccurrence, ref.cooccurrence
        assert c.num_docs == r.num_docs and c.num_tokens == r.num_tokens
        scale = max(float(np.abs(r.counts).max(initial=0.0)), 1.0)
        np.testing.assert_allclose(c.counts, r.counts, rtol=1e-12, atol=1e-12 * scale)
        np.testing.assert_allclose(c.unigram, r.unigram, rtol=1e-12)
        np.testing.assert_array_equal(c.doc_freq, r.doc_freq)
        # When each word's counting began, and what it missed (the admission correction).
        np.testing.assert_array_equal(state.admission.points, ref.admission.points)
        np.testing.assert_array_equal(state.admission.missed, ref.admission.missed)
        assert CooccurrenceStore.open(url).vocabulary.sketch_items() == sketch

    def trial(self, url: str, delay: float) -> dict:
        result = self.run(url, delay)
        key = file_key(self.path)
        try:
            committed = open_committed(url)
        except StoreError:
            committed = None  # killed before the store's first commit was in place
        if committed is not None:
            self.check(url, committed, committed.offsets.get(key, 0))
        store = CooccurrenceStore.open_or_create(url, **self.store)
        ingest_files(store, [self.path], tokenizer=Tokenizer(), checkpoint_every=10_000)
        final = open_committed(url)
        self.check(url, final, self.records[-1][0])
        assert final.offsets[key] == self.path.stat().st_size
        result["committed_docs"] = None if committed is None else committed.n_docs_added
        # Whether a slot had been evicted before the commit the kill left.
        result["evicted"] = committed is not None and bool((committed.dense.reset_seq > 0).any())
        return result

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()
        self.err.close()


@pytest.fixture
def harness(tmp_path):
    h = CrashHarness(tmp_path)
    yield h
    h.close()


@pytest.fixture
def evicting_harness(tmp_path):
    h = CrashHarness(tmp_path, store=EVICTING_STORE)
    yield h
    h.close()


def kill_at_random_moments(harness: CrashHarness, tmp_path: Path, n_kills: int,
                           enough=lambda killed: True) -> list[dict]:
    """Trials until ``n_kills`` kills landed while the writer was working, at 5 or more points
    of its progress, and ``enough(killed)`` holds; their results.

    An uninterrupted run calibrates how long a run takes on this (possibly loaded) machine;
    kill delays are drawn below that. A run that finishes before its kill lowers the estimate
    (and does not count); when the kills have not spread over the writer's progress yet (the
    machine slowed down since, so they all land early), another uninterrupted run measures
    it again. How many trials that takes depends on the machine; what is asserted does not.
    """
    calibration = str(tmp_path / "calibration")
    full = harness.run(calibration, None)
    assert full["status"] == 0, (tmp_path / "zygote.err").read_text()
    # The uninterrupted run is what every replay must reproduce.
    harness.check(calibration, open_committed(calibration), harness.records[-1][0])
    estimate = full["elapsed"]
    rng = np.random.default_rng(1234)
    killed: list[dict] = []
    trial = calibrations = 0
    t0 = time.monotonic()

    def progress() -> set:
        return {r["committed_docs"] for r in killed}

    while len(killed) < n_kills or len(progress()) < 5 or not enough(killed):
        assert trial < 10 * n_kills, (
            f"{trial} trials: {len(killed)} kills at progress {sorted(progress(), key=str)}")
        if len(killed) >= n_kills and trial % 5 == 0:
            calibrations += 1
            again = harness.run(str(tmp_path / f"calibration{calibrations}"), None)
            assert again["status"] == 0, (tmp_path / "zygote.err").read_text()
            estimate = again["elapsed"]
        result = harness.trial(str(tmp_path / f"s{trial}"), rng.uniform(0, 0.9 * estimate))
        if result["killed"]:
            killed.append(result)
        else:
            estimate = min(estimate, result["elapsed"])
        trial += 1
    print(f"{trial} trials, {len(killed)} kills, {calibrations} more calibrations in "
          f"{time.monotonic() - t0:.1f} s (an uninterrupted run takes {full['elapsed']:.2f} s)")
    return killed


def test_sigkill_at_random_moments_never_loses_or_doubles_a_document(harness, tmp_path):
    kill_at_random_moments(harness, tmp_path, 50)


def test_sigkill_while_the_vocabulary_evicts_replays_the_uninterrupted_run(
    evicting_harness, tmp_path
):
    # 20 slots for 48 words: words are admitted and evicted throughout the stream. Each kill's
    # committed state equals the uninterrupted stream stopped at its offset, and the replay
    # ends slot for slot where the uninterrupted run does.
    def after_evictions(killed):  # kills after evictions had been committed
        return sum(r["evicted"] for r in killed) >= 5

    killed = kill_at_random_moments(evicting_harness, tmp_path, 25, enough=after_evictions)
    assert after_evictions(killed)
