"""``anchorstream replay``: produce a JSON-lines or text file into a Kafka topic.

Every non-blank line becomes one message, sent as is (bytes; nothing is validated, so a file with
bad lines is a way to exercise the daemon's dead-letter path). ``--rate`` limits documents per
second, ``--limit`` stops early, and a progress bar (on a terminal) shows the bytes read and
the messages sent. The exit code is 1 when any message was not acknowledged.
Gzip files (``.gz``) are read transparently.

Examples::

    anchorstream replay news.jsonl --topic documents --bootstrap-servers 127.0.0.1:9092
    anchorstream replay posts.txt --topic documents --format text --rate 500
    anchorstream replay news.jsonl --topic documents --config config.yaml   # security settings
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from pathlib import Path

from tqdm import tqdm

from anchorstream.errors import InputError
from daemon.cli.options import HelpFormatter, check_input_file
from daemon.ingest.files import iter_lines

log = logging.getLogger("anchorstream.replay")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "replay",
        help="produce a JSON-lines or text file into a Kafka topic",
        description=(
            "Send every non-blank line of FILE as one Kafka message, optionally rate-limited. "
            "Connection and security settings come from --config (kafka section) when given; "
            "--bootstrap-servers overrides the address."
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument("file", type=Path, metavar="FILE", help="JSON-lines or text file (.gz allowed)")
    p.add_argument("--topic", required=True, type=_topic, help="topic to produce to")
    p.add_argument("--bootstrap-servers", default=None, metavar="HOST:PORT",
                   help="broker address(es), comma-separated (default: from --config, else "
                        "127.0.0.1:9092)")
    p.add_argument("--config", type=Path, default=None,
                   help="config.yaml whose kafka section supplies address and security")
    p.add_argument("--format", choices=("json", "text"), default="json",
                   help="json: lines are JSON documents (a key may be taken from --key-field); "
                        "text: lines are plain text")
    p.add_argument("--key-field", default=None,
                   help="(json) use this field of each line as the message key")
    p.add_argument("--rate", type=float, default=None, metavar="DOCS_PER_S",
                   help="at most this many messages per second (default: as fast as possible)")
    p.add_argument("--limit", type=int, default=None, help="stop after this many messages")
    p.add_argument("--create-topic", type=int, default=None, metavar="PARTITIONS",
                   help="create the topic with this many partitions first (kept if it exists)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _topic(text: str) -> str:
    """``--topic``: a name Kafka allows (kafka-python would raise ValueError at the first send)."""
    from daemon.settings.checks import TOPIC_RX, TOPIC_TEXT

    if not re.fullmatch(TOPIC_RX, text):
        raise argparse.ArgumentTypeError(f"expected {TOPIC_TEXT}, got {text!r}")
    return text


def _kafka_config(args):
    from daemon.settings import load_config, parse_config

    if args.config is not None:
        kafka = load_config(args.config).kafka
    else:
        kafka = parse_config({}, env={}).kafka
    servers = args.bootstrap_servers
    if servers is None and kafka.embedded:
        raise InputError("the config says kafka.bootstrap_servers: embedded; pass "
                         "--bootstrap-servers with the running broker's address")
    return kafka, (servers.split(",") if servers else None)


def _key(line: bytes, field: str | None) -> bytes | None:
    if field is None:
        return None
    try:
        value = json.loads(line).get(field)
    except (ValueError, AttributeError):
        return None  # a bad line is still sent, without a key
    return None if value is None else str(value).encode("utf-8")


def run(args) -> int:
    if args.rate is not None and args.rate <= 0:
        raise InputError(f"--rate must be > 0, got {args.rate}")
    if args.limit is not None and args.limit < 0:
        raise InputError(f"--limit must be >= 0, got {args.limit}")
    check_input_file(args.file)
    if args.format == "text" and args.key_field:
        raise InputError("--key-field needs --format json")

    # Through daemon.kafka.client, which imports kafka-python with its deprecation warning silenced.
    from daemon.kafka.client import (
        KafkaError,
        KafkaProducer,
        SourceError,
        client_settings,
        create_client,
        create_topics,
    )
    from daemon.kafka.producers import Paced

    kafka, servers = _kafka_config(args)
    if args.create_topic is not None and args.create_topic < 1:
        raise InputError(f"--create-topic needs a partition count >= 1, got {args.create_topic}")
    settings = {**client_settings(kafka, servers), "acks": "all",
                "compression_type": kafka.compression_type, "linger_ms": 5}
    where = ", ".join(settings["bootstrap_servers"]) if isinstance(
        settings["bootstrap_servers"], list) else settings["bootstrap_servers"]
    try:
        if args.create_topic is not None:
            create_topics(kafka, {args.topic: args.create_topic}, bootstrap_servers=servers)
        producer = create_client(KafkaProducer, settings)
    except KafkaError as exc:
        # No broker there (kafka-python gives up after its request timeout): one line.
        raise SourceError(f"cannot reach the Kafka broker at {where}: {exc}") from None
    sent = failed = 0
    errors: list[str] = []

    def on_error(exc):
        nonlocal failed
        failed += 1
        if len(errors) < 5:
            errors.append(str(exc))

    progress = not args.quiet and sys.stderr.isatty()
    size = args.file.stat().st_size if args.file.suffix != ".gz" else None
    bar = tqdm(total=size, unit="B", unit_scale=True, desc=args.topic, disable=not progress,
               file=sys.stderr)
    start = time.monotonic()
    last_offset = 0
    try:
        for offset, line in Paced(iter_lines(args.file), args.rate, limit=args.limit):
            key = _key(line, args.key_field) if args.format == "json" else None
            sent += 1
            try:
                producer.send(args.topic, value=line, key=key).add_errback(on_error)
            except KafkaError as exc:  # e.g. a line larger than the producer's request limit
                on_error(exc)
            if size is not None:
                bar.update(offset - last_offset)
            last_offset = offset
            if sent % 1000 == 0:
                bar.set_postfix(messages=sent, refresh=False)
        producer.flush()
    finally:
        bar.close()
        producer.close(timeout=10)
    elapsed = time.monotonic() - start
    print(f"sent {sent - failed} of {sent} messages to {args.topic!r} in {elapsed:.1f} s "
          f"({sent / max(elapsed, 1e-9):.0f}/s)", file=sys.stderr)
    for e in errors:
        print(f"  error: {e}", file=sys.stderr)
    return 1 if failed else 0
