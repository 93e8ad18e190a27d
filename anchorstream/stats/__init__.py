"""Statistics over documents, all mergeable sums: co-occurrence, its in-memory delta and
forgetting, and the document statistics some methods need beside the counts."""
