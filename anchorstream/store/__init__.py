"""The on-disk co-occurrence store: Zarr v3 arrays in an Icechunk repository.

A writer (:class:`CooccurrenceStore`) adds documents in memory and checkpoints them atomically
with the source offsets; readers (:func:`open_committed`) see whole commits only. The design,
the layout and measured costs are in ``docs/store.md``, which also maps the modules by job
(format, settings, repository, segments, reading, writer with opening, compaction and
retention, location).

Importing the store has no side effects; a process that wants Icechunk's noisy local-disk
warning quieted calls :func:`configure_logging` once.
"""

from anchorstream.store.format import FORMAT_VERSION
from anchorstream.store.reading import (
    CommittedState,
    DenseRead,
    fingerprint,
    merge_committed,
    open_committed,
    read_committed,
    read_document_state,
    store_info,
    stored_tokenizing,
)
from anchorstream.store.partitions import (
    PartitionedState,
    committed_docs,
    partition_key,
    partition_url,
    pin_partitions,
    read_partitions,
)
from anchorstream.store.partroot import find_partitions, partitioned_info, pin_committed
from anchorstream.store.repository import configure_logging
from anchorstream.store.sparseread import open_committed_sparse
from anchorstream.store.writer import CooccurrenceStore

__all__ = [
    "FORMAT_VERSION",
    "CommittedState",
    "CooccurrenceStore",
    "DenseRead",
    "PartitionedState",
    "committed_docs",
    "configure_logging",
    "find_partitions",
    "fingerprint",
    "merge_committed",
    "open_committed",
    "open_committed_sparse",
    "partition_key",
    "partition_url",
    "partitioned_info",
    "pin_committed",
    "pin_partitions",
    "read_committed",
    "read_document_state",
    "read_partitions",
    "store_info",
    "stored_tokenizing",
]
