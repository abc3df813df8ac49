"""The broker's CPU per Produce request, with the client's costs out of the way.

``python -m benchmarks.broker_request_bench [--requests N] [--rounds R]``: a
``kproto broker`` subprocess (4 partitions) gets the same pre-encoded ProduceRequest
v9 (acks=-1) N times over one plain socket, 5 in flight as librdkafka pipelines,
for two requests: ``tiny`` (one 100-byte record: the per-request fixed cost of the
socket path, turns, dispatch and the handler) and ``lz4`` (4 partitions x 350
records of 100 bytes, lz4, ~19 KB: about what the confluent-kafka producer of
``benchmarks.broker_bench`` sends). Prints the broker process's CPU time per request
(median of R rounds, each on a fresh broker, after 200 warm-up requests). Not a
test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

from benchmarks.broker_bench import cpu_s, create_topic, read_bootstrap, stop

IN_FLIGHT = 5
WARM_UP = 200


def request_frame(kind: str) -> bytes:
    """One ProduceRequest v9 frame (size prefix included) to topic ``bench``."""
    from kproto.broker.dispatch import build
    from kproto.framing import encode_request
    from kproto.records import Compression, encode_batch
    from kproto.schema.produce.v9 import ProduceRequest

    if kind == "tiny":
        parts = [{"index": 0, "records": encode_batch([(None, b"x" * 100)])}]
    else:
        noise = os.urandom(50)
        parts = [
            {
                "index": p,
                "records": encode_batch(
                    [(None, noise + bytes([i % 251]) * 50) for i in range(350)],
                    compression=Compression.LZ4,
                ),
            }
            for p in range(4)
        ]
    request = build(
        ProduceRequest,
        {
            "acks": -1,
            "timeout_ms": 1000,
            "topic_data": [{"name": "bench", "partition_data": parts}],
        },
    )
    return encode_request(request, correlation_id=1, client_id="request-bench")


def drive(bootstrap: str, frame: bytes, n: int) -> None:
    """Send ``frame`` ``n`` times, :data:`IN_FLIGHT` unanswered at most; read
    every response."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stream = s.makefile("rb")
        sent = answered = 0
        while answered < n:
            while sent < n and sent - answered < IN_FLIGHT:
                s.sendall(frame)
                sent += 1
            size = int.from_bytes(stream.read(4), "big")
            if len(stream.read(size)) != size:
                raise ConnectionError("the broker closed the connection")
            answered += 1


def one_round(frame: bytes, n: int) -> float:
    """Broker CPU per request (seconds) on a fresh ``kproto broker``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kproto", "broker", "--partitions", "4"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        bootstrap = read_bootstrap(proc, 30)
        create_topic(bootstrap)
        drive(bootstrap, frame, WARM_UP)
        before = cpu_s(proc.pid)
        drive(bootstrap, frame, n)
        return (cpu_s(proc.pid) - before) / n
    finally:
        stop(proc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{'request':<8}{'bytes':>8}{'broker CPU us/request':>24}  rounds")
    for kind in ("tiny", "lz4"):
        frame = request_frame(kind)
        n = args.requests * (4 if kind == "tiny" else 1)
        started = time.monotonic()
        runs = [one_round(frame, n) * 1e6 for _ in range(args.rounds)]
        print(
            f"{kind:<8}{len(frame):>8}{statistics.median(runs):>24.1f}  "
            f"{', '.join(f'{r:.1f}' for r in runs)} "
            f"({n} requests a round, {time.monotonic() - started:.0f} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
