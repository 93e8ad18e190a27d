"""Refreshing the topic model off the ingest path: read, fit (warm), align ids, publish.

:class:`Refresher` runs in a background thread: when enough new documents were checkpointed and
the interval passed, it pins one committed store version, fits the configured method (warm-started
from the previous model), aligns topic ids with the last snapshot and publishes. A failed refresh
is logged and counted; the last good snapshot keeps being served. Why: docs/daemon.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from anchorstream.errors import InputError
from anchorstream.model.align import align_topics
from anchorstream.stats.admission import MIN_SHARE, correct_admission
from anchorstream.stats.cooccurrence import Cooccurrence
from anchorstream.model.correlations import hierarchy
from anchorstream.model.storedfit import fit_novel_words
from anchorstream.stats.documents import DocumentState
from anchorstream.stats.windowpairs import window_cooccurrence
from anchorstream.text.windows import (AUTO, WINDOWS_AUTO_SIZE, WINDOWS_LATE_SHARE,
                                       check_refine_window, refine_window_for)
from anchorstream.evaluate import topic_sparsity, topic_specificity
from anchorstream.model.methods import TopicFit, fit_topics
from anchorstream.model.pipeline import AnchorModel
from anchorstream.model.registry import method_spec, rectify_method_for
from anchorstream.store import read_document_state
from anchorstream.store.delay import selection_marginals
from daemon.refresh_inputs import (KEEP_READ_MAX_BYTES, Buffers, Skip, by_word, check_documents,
                                   check_enough, model_settings, partitions_of, select_words)
from daemon.refresh_reads import RefreshReads

__all__ = ["RefreshResult", "Refresher", "select_words"]

log = logging.getLogger("anchorstream.refresher")


class RefreshResult(dict):
    """What one successful refresh did (a dict: version, store_version, num_docs, timings...)."""


class Refresher:
    """Background model refreshes from a store into a publisher.

    Parameters
    ----------
    store_url : str
        The store (read with :func:`~anchorstream.store.open_committed`).
    publisher : daemon.publish.Publisher
    model_kwargs : mapping
        ``AnchorModel`` arguments (``ModelConfig.model_kwargs()``), ``n_topics`` included;
        ``anchor_method`` may also be ``"ddp"`` or ``"rp"`` (novel words).
    method : {"anchor", "anchorfree", "tsvd"}, default "anchor"
        ``anchor`` with ``ddp``/``rp`` anchors and ``tsvd`` need a store that keeps document
        statistics (``CooccurrenceStore.open(..., document_stats=...)``).
    metrics : daemon.metrics.Metrics, optional
    interval_seconds : float, default 60
    min_new_docs : int, default 1000
        Committed documents needed since the last published model (at least 1).
    warm_start : bool, default True
    min_df, max_df_ratio : float, default 1 and 1.0
    admission_min_share : float in (0, 1], default MIN_SHARE
        Floor of ``correct_admission`` (:mod:`anchorstream.stats.admission`), as ``fit --store``.
    align_min_similarity : float, default 0.5
    settings : mapping, optional
        Extra settings recorded in every snapshot (e.g. the redacted daemon configuration).
    source_info : mapping, optional
        Extra ``source`` entries (e.g. the Kafka topics).
    storage_options : mapping, optional
        Options of the store's storage (endpoint, region, ...; see :mod:`anchorstream.store.location`).
    reader : callable ``(version, sparse) -> state``, optional
        Reads the state to fit (default: :func:`~anchorstream.store.open_committed` of
        ``store_url``), sparse counts when ``sparse`` (:attr:`sparse`); the partitioned layout
        passes :func:`daemon.scaled.partitioned_reader` (``documents(state, idx)``: document
        statistics; ``keeps()``: whether it keeps its sum), whose ``partitions`` go to ``source``.
    keep_read_max_bytes : int or None, default 1 GiB
        Sparse reads of one store up to this size (or 2 V²) are kept for the next
        (:class:`~daemon.refresh_reads.RefreshReads`).
    clock : callable, default time.monotonic
    """

    def __init__(self, store_url: str, publisher, *, model_kwargs: Mapping[str, Any],
                 metrics=None, interval_seconds: float = 60.0, min_new_docs: int = 1000,
                 warm_start: bool = True, min_df: float = 1, max_df_ratio: float = 1.0,
                 admission_min_share: float = MIN_SHARE,
                 align_min_similarity: float = 0.5, settings: Mapping[str, Any] | None = None,
                 source_info: Mapping[str, Any] | None = None,
                 supertopics: int = 0, method: str = "anchor",
                 storage_options: Mapping[str, Any] | None = None,
                 reader: Callable[..., Any] | None = None,
                 refine_window: int | str | None = None,
                 keep_read_max_bytes: int | None = KEEP_READ_MAX_BYTES,
                 clock: Callable[[], float] = time.monotonic):
        self.store_url = str(store_url)
        # The store keeps its documents' windows' pairs for the refinement (model.refine_window:
        # a size, or auto to decide by the documents' length at each refresh).
        self.refine_window = check_refine_window(refine_window)
        self._window_note: str | None = None  # the last "no windows" warning logged
        self.reader = reader
        self.storage_options = None if storage_options is None else dict(storage_options)
        self.publisher = publisher
        self.model_kwargs = dict(model_kwargs)
        self.method = str(method)
        self.anchor_method = str(self.model_kwargs.get("anchor_method", "qr"))
        self.supertopics = int(supertopics)
        self.n_topics = int(self.model_kwargs["n_topics"])
        self.metrics = metrics
        self.interval_seconds = float(interval_seconds)
        self.min_new_docs = max(int(min_new_docs), 1)
        self.warm_start = bool(warm_start)
        self.min_df = float(min_df)
        self.max_df_ratio = float(max_df_ratio)
        self.admission_min_share = float(admission_min_share)
        self.align_min_similarity = float(align_min_similarity)
        self.settings = dict(settings or {})
        self.source_info = dict(source_info or {})
        self._clock = clock
        self._model: AnchorModel | None = None
        self._model_words: list[str] | None = None
        # AnchorFree's warm start: the last word-topic matrix, by word.
        self._topic_word: np.ndarray | None = None
        latest = publisher.latest()
        # Documents covered by what is already published (a restart does not refresh again
        # for nothing).
        self._published_docs = latest[1].num_docs if latest is not None else 0
        self._published_store_version = (
            (latest[1].source or {}).get("store_version") if latest is not None else None)
        self._committed_docs = 0
        self._last_attempt = -float("inf")
        self._cond = threading.Condition()
        self._requested = False
        self._stop = False
        self._thread: threading.Thread | None = None
        self._buffers = Buffers()
        # The reads, and what is kept of them for the next one to catch up from.
        self.reads = RefreshReads(self.store_url, sparse=self.sparse,
                                  warm_start=self.warm_start, buffers=self._buffers,
                                  reader=reader, storage_options=self.storage_options,
                                  keep_read_max_bytes=keep_read_max_bytes)
        self._refresh_lock = threading.Lock()
        self._busy = False
        self.failures = 0
        self.last_error: str | None = None
        self.last_result: RefreshResult | None = None

    # ----------------------------------------------------------------------------------------
    # scheduling

    def notify(self, committed) -> None:
        """The store committed a new version (``committed.n_docs`` documents in all)."""
        with self._cond:
            self._committed_docs = max(self._committed_docs, int(committed.n_docs))
            self._cond.notify_all()

    def request(self) -> None:
        """Refresh at the next chance, ignoring the interval (still needs new documents)."""
        with self._cond:
            self._requested = True
            self._cond.notify_all()

    def due(self) -> bool:
        """Whether a refresh should start now."""
        new = self._committed_docs - self._published_docs
        if new < self.min_new_docs and not (self._requested and new > 0):
            return False
        return self._requested or self._clock() - self._last_attempt >= self.interval_seconds

    def start(self) -> Refresher:
        """Run refreshes in a daemon thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._run, name="anchorstream-refresher",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> bool:
        """Ask the thread to stop and wait up to ``timeout`` s; False if a refresh still runs.

        A refresh cannot be interrupted mid-fit; since publication is atomic, abandoning it
        (the thread is a daemon thread) at process exit loses nothing but its work.
        """
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def busy(self) -> bool:
        return self._busy

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stop and not self.due():
                    # Wake on notify or when the interval may have elapsed.
                    wait = self.interval_seconds - (self._clock() - self._last_attempt)
                    self._cond.wait(timeout=min(max(wait, 0.05), 1.0))
                if self._stop:
                    return
                self._requested = False
                self._last_attempt = self._clock()
                self._busy = True
            try:
                self.refresh_once()
            except Exception:  # noqa: BLE001 - refresh_once already logged and counted it
                pass
            finally:
                self._busy = False

    # ----------------------------------------------------------------------------------------
    # one refresh

    def refresh_once(self, version: str | None = None) -> RefreshResult | None:
        """Read, fit, align and publish once (in the calling thread).

        Parameters
        ----------
        version : str, optional
            Store version to read; default the latest commit.

        Returns
        -------
        RefreshResult or None
            None when skipped (no new store version, or not enough words yet).

        Raises
        ------
        Exception
            Whatever failed, after logging it and counting it under the failing stage.
        """
        # One refresh at a time: they share the buffers and the warm-start state.
        with self._refresh_lock:
            return self._refresh_once(version)

    def _refresh_once(self, version: str | None) -> RefreshResult | None:
        stage = "read"
        t_total = time.perf_counter()
        timings: dict[str, float] = {}
        m = self.metrics

        def observe(name: str, seconds: float) -> None:
            timings[name] = seconds
            if m is not None:
                m.refresh_duration.labels(name).observe(seconds)

        try:
            t0 = time.perf_counter()
            # In the last read's memory; warm, its counts plus the segments committed since
            # (RefreshReads.read). Until this read succeeds they are unknown.
            st = self.reads.read(version)
            if st.version == self._published_store_version:
                log.debug("store version %s is already published", st.version)
                self._published_docs = max(self._published_docs, st.n_docs_added)
                return None
            # Documents a delay line holds back count as if they left it now: no lag.
            idx = select_words(selection_marginals(st.cooccurrence, st.waiting),
                               min_df=self.min_df, max_df_ratio=self.max_df_ratio)
            words = [st.words[i] for i in idx]
            window = self._window_for(st.cooccurrence)
            st, cooc, kept = self.reads.word_counts(st, idx)
            # As `fit --store` (a dense cooc is this refresh's own: a copy, or a cold read's).
            cooc = correct_admission(cooc,
                                     None if st.admission is None else st.admission.subset(idx),
                                     min_share=self.admission_min_share)
            check_enough(cooc, len(words), n_topics=self.n_topics, method=self.method,
                         anchor_min_df=self._anchor_min_df)
            docs = self._documents(st, idx, window)
            observe("read", time.perf_counter() - t0)

            stage = "fit"

            def on_stage(name: str, seconds: float | None) -> None:
                nonlocal stage
                if seconds is None:
                    stage = name
                else:
                    observe(name, seconds)

            try:
                model, fit, init, settings = self._fit(cooc, words, docs, on_stage, window,
                                                       st.n_docs_added)
                self.reads.fitted(cooc)  # the product a warm update follows next time
            finally:
                if kept is not None:
                    # The read may be kept for the next refresh: not the products' dense block.
                    kept.drop_head_block()

            stage = "align"
            t0 = time.perf_counter()
            alignment = self._align(fit, words)
            observe("align", time.perf_counter() - t0)

            stage = "publish"
            t0 = time.perf_counter()
            churn = alignment.churn()
            info = self._publish(st, cooc, words, docs, model, fit, init, settings, alignment,
                                 churn, timings)
            observe("publish", time.perf_counter() - t0)
        except Skip as exc:
            log.info("refresh skipped: %s", exc)
            return None
        except Exception as exc:
            self.failures += 1
            self.last_error = f"{stage}: {type(exc).__name__}: {exc}"
            if m is not None:
                m.refresh_failures.labels(stage).inc()
            log.exception("refresh failed at stage %r; still serving the last good snapshot",
                          stage)
            raise
        total = time.perf_counter() - t_total
        observe("total", total)
        self._model, self._model_words = model, words
        self._topic_word = fit.topic_word
        self._published_docs = int(st.n_docs_added)
        self._published_store_version = st.version
        self.last_error = None
        self._observe_success(model, churn)
        result = RefreshResult(version=info.version, store_version=st.version,
                               num_docs=int(st.n_docs_added), n_words=len(words),
                               warm=init is not None, timings=timings, churn=churn,
                               iterations={} if model is None else dict(model.n_iter_))
        self.last_result = result
        log.info("refresh: snapshot %d from store version %s (%d documents, %d words, %s, "
                 "%.2f s)", info.version, st.version, st.n_docs_added, len(words),
                 "warm" if init is not None else "cold", total)
        return result

    @property
    def sparse(self) -> bool:
        """Whether refreshes read the counts sparse: the low-rank rectifier (no V x V array)."""
        kw = self.model_kwargs
        low = rectify_method_for(kw.get("rectify_method", "auto"), kw.get("recover_method", "admm"))
        return (method_spec(self.method, self.anchor_method).anchor_words
                and bool(kw.get("rectify", True)) and low == "lowrank")

    def _align(self, fit, words: list[str]):
        """Topic ids of ``fit``: matched to the latest published snapshot's, new ones after."""
        latest = self.publisher.latest()
        if latest is None:
            return align_topics(fit.topic_word, words, min_similarity=self.align_min_similarity)
        prev = latest[1]
        return align_topics(
            fit.topic_word, words, np.asarray(prev.topic_word).T,
            list(prev.vocabulary), prev.topic_ids,
            next_id=max(int((prev.extra or {}).get("next_topic_id", 0)),
                        max(prev.topic_ids, default=-1) + 1),
            min_similarity=self.align_min_similarity)

    def _publish(self, st, cooc, words, docs, model, fit, init, settings, alignment, churn,
                 timings: dict[str, float]):
        """Publish the refreshed snapshot; returns the publisher's info."""
        unigram = cooc.unigram / max(float(cooc.unigram.sum()), 1e-300)
        quality = {
            "sparsity": topic_sparsity(fit.topic_word).tolist(),
            "specificity": topic_specificity(fit.topic_word, unigram).tolist(),
        }
        extra_hierarchy = {}
        if 0 < self.supertopics < self.n_topics:
            # JSMF §4: the rectified A factorized again; ids are the aligned public ones.
            extra_hierarchy["hierarchy"] = hierarchy(
                fit.topic_topic, self.supertopics, topic_ids=alignment.ids.tolist(),
                random_state=int(self.model_kwargs.get("random_state", 0)))
        source_docs = {} if docs is None else {"document_stats": docs.summary()}
        return self.publisher.publish(
            vocabulary=words,
            topic_word=fit.topic_word.T,
            topic_topic=fit.topic_topic,
            anchors=[words[a] for a in fit.anchors],
            topic_ids=alignment.ids.tolist(),
            prevalence=fit.prevalence,
            num_docs=int(st.n_docs_added),
            settings={**settings, "min_df": self.min_df,
                      "max_df_ratio": self.max_df_ratio, "warm_start": self.warm_start,
                      "admission_min_share": self.admission_min_share, **self.settings},
            source={**self.source_info, "store": self.store_url,
                    "store_version": st.version, "offsets": st.offsets,
                    "matrix_docs": float(cooc.num_docs), "clock": st.clock,
                    **source_docs, **partitions_of(st)},
            quality=quality,
            mean_doc_length=cooc.num_tokens / max(cooc.num_docs, 1),
            extra={
                "churn": churn,
                "next_topic_id": alignment.next_id,
                "warm_started": init is not None,
                "alpha": (None if model is None or model.alpha_ is None
                          else np.asarray(model.alpha_).tolist()),
                "rectify_residual": None if model is None else model.rectify_residual_,
                "rectify_warm_change": None if model is None else model.rectify_change_,
                "iterations": {} if model is None else model.n_iter_,
                "timings_seconds": dict(timings),
                # How a method with two estimates of its topics (TSVD, DDP, RP) made them.
                **({} if fit.estimate is None else {"estimate": fit.estimate}),
                **extra_hierarchy,
            },
        )

    def _observe_success(self, model, churn) -> None:
        if self.metrics is not None:
            self.metrics.observe_refresh(model, churn, self.kept_bytes())

    def kept_bytes(self) -> int:
        """Memory kept for the next refresh (:meth:`RefreshReads.kept_bytes
        <daemon.refresh_reads.RefreshReads.kept_bytes>`)."""
        return self.reads.kept_bytes()

    @property
    def _anchor_min_df(self) -> float:
        return float(self.model_kwargs.get("anchor_min_df", 0))

    @property
    def needs_documents(self) -> bool:
        """Whether the configured method reads the store's document statistics (the
        refinement's windows may too: :meth:`_window_for`)."""
        return method_spec(self.method, self.anchor_method).needs_documents

    def _documents(self, st, idx, window: int | None) -> DocumentState | None:
        """The store's document statistics over the words ``idx`` of the same version(s) as
        the counts, where the method or the refinement's ``window`` reads them."""
        if not (self.needs_documents or window is not None):
            return None
        docs = (self.reader.documents(st, idx) if self.reader is not None else
                read_document_state(self.store_url, st.version, st.slots[idx],
                                    storage_options=self.storage_options))
        if self.needs_documents:
            check_documents(docs, n_topics=self.n_topics, method=self.method,
                            anchor_method=self.anchor_method, anchor_min_df=self._anchor_min_df)
        return docs

    def _window_for(self, cooc) -> int | None:
        """The windows this refresh refines in (model.refine_window, ``auto`` by the stored
        documents' mean length), None for whole documents or no refinement."""
        if self.model_kwargs.get("refine", "auto") == "none":
            return None
        return refine_window_for(self.refine_window, cooc.num_docs, cooc.num_tokens,
                                 self.n_topics)

    def _refine_cooc(self, cooc, docs: DocumentState | None, window: int | None,
                     n_docs: int):
        """``(the windows' pairs over the fit's words, their size)`` where the store keeps
        them, else ``(None, None)``: the refinement counts whole documents' pairs, as a store
        without windows."""
        if window is None:
            return None, None
        kept = 0 if docs is None or docs.window_pairs is None else docs.settings.pair_window
        if self.refine_window == AUTO:
            # auto refines in the windows the store keeps, if they cover its documents.
            late = kept and docs.since_docs > WINDOWS_LATE_SHARE * n_docs
            if not kept or late:
                self._note_no_windows(
                    "model.refine_window is auto and the documents call for windows, but the "
                    + ("store keeps no windows' pairs" if not kept else
                       f"store keeps windows' pairs from document {docs.since_docs} on only")
                    + ": refreshes refine on whole documents (model.refine_window: "
                    f"{WINDOWS_AUTO_SIZE} starts them on this store from the next document)")
                return None, None
            window = kept
        elif not kept:
            self._note_no_windows(
                f"model.refine_window is {window} but the store keeps no windows' pairs yet "
                "(they are counted from the first document after the setting): refreshes "
                "refine on whole documents")
            return None, None
        elif kept != window:
            raise InputError(f"the store keeps windows of {kept} tokens, "
                             f"model.refine_window is {window}")
        self._window_note = None
        return window_cooccurrence(docs.window_pairs, cooc), window

    def _note_no_windows(self, message: str) -> None:
        """Log (once until it changes) that a refresh that would refine in windows cannot."""
        if self._window_note != message:
            self._window_note = message
            log.warning("%s", message)

    def _fit(self, cooc: Cooccurrence, words: list[str], docs: DocumentState | None,
             on_stage, window: int | None = None, n_docs: int = 0
             ) -> tuple[AnchorModel | None, TopicFit, Any, dict]:
        """Run the configured method: ``(AnchorModel or None, TopicFit, warm start, settings)``."""
        kw = self.model_kwargs
        K, seed = self.n_topics, int(kw.get("random_state", 0))
        # What this refresh refines on: the windows (of this size), or (None) whole documents.
        refine_cooc, window = self._refine_cooc(cooc, docs, window, n_docs)
        common = {"method": self.method, "n_topics": K, "random_state": seed,
                  "refine_window": window}
        if method_spec(self.method, self.anchor_method).anchor_words:
            model = AnchorModel(**kw)
            init = None
            if self.warm_start and self._model is not None:
                init = self._model.remapped(self._model_words, words)
            s = model.settings
            dense = s.rectify and s.rectify_method != "lowrank"  # lowrank keeps no V x V
            workspace = (self._buffers.get("iterate", len(words) ** 2, np.float32)
                         if dense and np.dtype(s.rectify_dtype) == np.float32 else None)
            # Two buffers for the rectification's state take turns: the new one must not be
            # the one the warm start (the current model) reads.
            data_out = None
            if dense:
                current = None if self._model is None else self._model.rectify_data_
                for name in ("state-a", "state-b"):
                    buf = self._buffers.get(name, len(words) ** 2, np.float32)
                    if current is None or not np.shares_memory(buf, current):
                        data_out = buf
                        break
            # cooc is this refresh's own subset; only its vectors are read afterwards.
            # No refinement log-likelihood: a snapshot does not publish it (a pass saved).
            model.fit(cooc, init=init, on_stage=on_stage, overwrite_cooc=True,
                      rectify_workspace=workspace, rectify_data_out=data_out,
                      refine_loglik=False, refine_cooc=refine_cooc)
            fit = TopicFit.from_model(model)
            return model, fit, init, {**model.get_params(), "method": "anchor",
                                      "refine_window": window}
        # Every method's topics are refined on short documents as the pipeline's are.
        refine = {k: kw[k] for k in ("refine", "refine_max_iter") if k in kw}
        if self.method == "anchor":
            # The groups are rectified and recovered as configured (fit_topics).
            rect = model_settings(kw, ("rectify", "recover"))
            fit = fit_novel_words(K, cooc, docs, anchor_method=self.anchor_method,
                                  min_df=float(kw.get("anchor_min_df", 0)), random_state=seed,
                                  on_stage=on_stage, refine_cooc=refine_cooc, **rect, **refine)
            return None, fit, None, {**common, "anchor_method": self.anchor_method,
                                     "anchor_min_df": kw.get("anchor_min_df", 0), **rect,
                                     **refine, **docs.settings.to_dict()}
        if self.method == "anchorfree":
            # Rectification as configured (every rectify_* setting, defaults included).
            rect = model_settings(kw, ("rectify", "anchorfree_"))
            init = None
            if self.warm_start and self._topic_word is not None:
                init = by_word(self._topic_word, self._model_words, words)
            fit = fit_topics(K, cooc=cooc, method="anchorfree", random_state=seed,
                             on_stage=on_stage, init=init, refine_cooc=refine_cooc, **rect,
                             **refine)
            return None, fit, init, {**common, "anchor_method": None, **rect, **refine}
        # TSVD's word groups, where it keeps them, are rectified and recovered as configured,
        # from words in anchor_min_df documents.
        rect = model_settings(kw, ("rectify", "recover", "anchor_min_df"))
        fit = fit_topics(K, cooc=cooc, documents=docs.documents, method="tsvd",
                         random_state=seed, on_stage=on_stage, refine_cooc=refine_cooc, **rect,
                         **refine)
        return None, fit, None, {**common, "anchor_method": None, **rect, **refine,
                                 **docs.settings.to_dict()}

