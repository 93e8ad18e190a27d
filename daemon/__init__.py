"""The anchorstream service: configuration, Kafka ingest, refresh, snapshots, HTTP and metrics."""
