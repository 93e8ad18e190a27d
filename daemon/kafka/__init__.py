"""Kafka: the consumer and producers, safe record-batch reading, the bundled broker, and the
rate limit on the client's repeated log lines."""
