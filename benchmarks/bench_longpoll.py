#!/usr/bin/env python
"""Long-poll crowd benchmark: N concurrent ``GET /v1/snapshots/latest?wait=`` against a real server.

The question (issue 15): with many dashboards long-polling at once, is every client answered, and
within the cap ``http.max_wait_seconds``? A server process (:class:`daemon.http.api.ApiServer` over a
:class:`daemon.publish.Publisher` holding one planted snapshot, its own process so that the
clients do not share its interpreter lock) is started with the given settings; then ``--clients``
connections are opened at the same instant from one asyncio client, each asking
``?wait=--wait`` with ``If-None-Match`` of the current version (so each one would wait), with
``Connection: close``. Each client's time runs from the start of its connect to the end of the
answer; a client gets ``--client-timeout`` seconds before it counts as "no answer".

Printed: how many were answered and with which status, how many got no answer (and why), and
the wait (median, 99th percentile, max) in seconds and relative to the cap. ``--publish-after S``
publishes a second snapshot S seconds after the crowd starts (waiters then get 200).

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_longpoll.py                      # 1000 clients, cap 60 s
    PYTHONPATH=. python benchmarks/bench_longpoll.py --clients 200 --cap 5 --max-waiters 32

Settings the server under test does not know (an older ``ApiServer``) are left out and said so.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def serve(args: argparse.Namespace) -> None:
    """The server process: print the port, publish when told to on stdin, stop at EOF."""
    import logging

    from anchorstream.synthetic import planted_model
    from daemon.http.api import ApiServer
    from daemon.publish import Publisher

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="server %(levelname)s %(name)s: %(message)s")
    vocab = [f"word{i:03d}" for i in range(200)]

    def publish(pub, seed):
        m = planted_model(len(vocab), 10, random_state=seed)
        pub.publish(vocabulary=vocab, topic_word=m.topic_word.T, topic_topic=m.topic_topic,
                    anchors=[vocab[a] for a in m.anchors], topic_ids=list(range(10)),
                    num_docs=1000, settings={}, source={})

    wanted = {"max_wait_seconds": args.cap, "max_waiters": args.max_waiters,
              "listen_backlog": args.listen_backlog}
    known = inspect.signature(ApiServer).parameters
    kwargs = {k: v for k, v in wanted.items() if v is not None and k in known}
    ignored = sorted(k for k, v in wanted.items() if v is not None and k not in known)
    with tempfile.TemporaryDirectory() as tmp:
        pub = Publisher(Path(tmp) / "snapshots")
        publish(pub, 0)
        with ApiServer(pub, **kwargs) as srv:
            print(json.dumps({"port": srv.port, "kwargs": kwargs, "ignored": ignored}),
                  flush=True)
            for line in sys.stdin:
                if line.strip() == "publish":
                    publish(pub, 1)
            pub.close()


async def one_client(port: int, wait: float, timeout: float, t0: float) -> tuple:
    """(status or None, reason, seconds) of one long poll."""
    request = (f"GET /v1/snapshots/latest?wait={wait:g} HTTP/1.1\r\nHost: bench\r\n"
               'If-None-Match: "1"\r\nConnection: close\r\n\r\n').encode()
    writer = None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            await writer.drain()
            data = await reader.read()  # until the server closes
        status_line = data.split(b"\r\n", 1)[0].split()
        if len(status_line) < 2:
            return None, "closed without an answer", time.perf_counter() - t0
        return int(status_line[1]), "", time.perf_counter() - t0
    except TimeoutError:
        return None, "client timeout", time.perf_counter() - t0
    except OSError as exc:
        return None, type(exc).__name__, time.perf_counter() - t0
    finally:
        if writer is not None:
            writer.close()


async def crowd(args: argparse.Namespace, port: int, server) -> list[tuple]:
    t0 = time.perf_counter()
    tasks = [asyncio.create_task(one_client(port, args.wait, args.client_timeout, t0))
             for _ in range(args.clients)]
    if args.publish_after is not None:
        await asyncio.sleep(args.publish_after)
        server.stdin.write("publish\n")
        server.stdin.flush()
    return await asyncio.gather(*tasks)


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--cap", type=float, default=60.0, help="the server's max_wait_seconds")
    ap.add_argument("--wait", type=float, default=None, help="?wait= asked (default: the cap)")
    ap.add_argument("--max-waiters", type=int, default=None,
                    help="the server's max_waiters (default: ApiServer's)")
    ap.add_argument("--listen-backlog", type=int, default=None,
                    help="the server's listen_backlog (default: ApiServer's)")
    ap.add_argument("--publish-after", type=float, default=None,
                    help="publish a new snapshot this many seconds after the start")
    ap.add_argument("--client-timeout", type=float, default=None,
                    help="seconds before a client gives up (default: cap + 60)")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.wait = args.cap if args.wait is None else args.wait
    args.client_timeout = args.client_timeout or args.cap + 60.0
    if args.serve:
        serve(args)
        return

    cmd = [sys.executable, __file__, "--serve", "--cap", str(args.cap)]
    for flag, value in (("--max-waiters", args.max_waiters),
                        ("--listen-backlog", args.listen_backlog)):
        if value is not None:
            cmd += [flag, str(value)]
    server = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(server.stdout.readline())
        print(f"server: {info['kwargs']} (defaults otherwise)"
              + (f"; not supported, left out: {info['ignored']}" if info["ignored"] else ""))
        print(f"{args.clients} clients, ?wait={args.wait:g}, cap {args.cap:g} s, client timeout "
              f"{args.client_timeout:g} s"
              + (f", publish after {args.publish_after:g} s" if args.publish_after else ""))
        results = asyncio.run(crowd(args, info["port"], server))
    finally:
        server.stdin.close()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    statuses = Counter(s for s, _, _ in results if s is not None)
    failures = Counter(r for s, r, _ in results if s is None)
    answered = [t for s, _, t in results if s is not None]
    everyone = [t for _, _, t in results]
    print(f"answered: {len(answered)}/{len(results)}  by status: "
          + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())))
    print("no answer: " + (", ".join(f"{k}: {v}" for k, v in failures.items()) or "0"))
    for name, xs in (("answered", answered), ("all clients", everyone)):
        if xs:
            print(f"wait of {name} (s): median {quantile(xs, 0.5):.2f}, p99 "
                  f"{quantile(xs, 0.99):.2f}, max {max(xs):.2f} = {max(xs) / args.cap:.2f} x cap")


if __name__ == "__main__":
    main()
