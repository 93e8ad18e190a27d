"""Ingest: documents from a source (Kafka or files) into the store, checkpointed exactly once."""
