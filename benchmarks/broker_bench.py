"""kproto's broker against librdkafka's mock cluster, with confluent-kafka clients.

``make bench-broker`` (``python -m benchmarks.broker_bench [--messages N]``):
a confluent-kafka Producer sends N messages of 100 bytes (linger.ms 5, lz4) to a
4-partition topic, then a Consumer (assigned, from offset 0) reads them back;
once against kproto's broker (a ``kproto broker`` subprocess, whose peak RSS is
sampled with psutil every 10 ms) and once against librdkafka's mock cluster (in
this process, as librdkafka runs it). Prints messages/s and MB/s each way and the
ratios kproto / mock. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from typing import Any

MESSAGE_BYTES = 100
PARTITIONS = 4


class PeakRss:
    """Samples a process's RSS in a thread; ``peak`` and ``first`` in bytes."""

    def __init__(self, pid: int, interval_s: float = 0.01) -> None:
        import psutil

        self.process = psutil.Process(pid)
        self.first = self.process.memory_info().rss
        self.peak = self.first
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except Exception:  # the process ended
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def produce(bootstrap: str, topic: str, n: int) -> float:
    """Seconds to produce and flush ``n`` messages."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 1_000_000,
            "log_level": 2,
        }
    )
    payload = os.urandom(MESSAGE_BYTES // 2).hex().encode()
    producer.list_topics(topic, timeout=10)  # auto-create before timing
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                producer.produce(topic, payload, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
    left = producer.flush(120)
    elapsed = time.perf_counter() - start
    if left:
        raise RuntimeError(f"{left} messages not delivered")
    return elapsed


def consume(bootstrap: str, topic: str, n: int) -> float:
    """Seconds to read ``n`` messages back from offset 0."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "log_level": 2,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    start = time.perf_counter()
    deadline = start + 120
    while got < n and time.perf_counter() < deadline:
        for msg in consumer.consume(10_000, 1.0):
            if msg.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if got < n:
        raise RuntimeError(f"read {got} of {n} messages")
    return elapsed


def run_kproto(n: int) -> dict[str, Any]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kproto", "broker", "--partitions", str(PARTITIONS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip()
        rss = PeakRss(proc.pid)
        p = produce(bootstrap, "bench", n)
        c = consume(bootstrap, "bench", n)
        rss.stop()
        return {
            "produce_s": p,
            "consume_s": c,
            "rss_start": rss.first,
            "rss_peak": rss.peak,
        }
    finally:
        proc.terminate()
        proc.wait(30)


def run_mock(n: int) -> dict[str, Any]:
    from demo.cluster import mock_cluster

    with mock_cluster(1) as brokers:
        bootstrap = ",".join(f"{host}:{port}" for host, port in brokers.values())
        p = produce(bootstrap, "bench", n)
        c = consume(bootstrap, "bench", n)
    return {"produce_s": p, "consume_s": c}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    args = parser.parse_args(argv)
    n = args.messages
    mb = n * MESSAGE_BYTES / 1e6
    results = {"kproto broker": run_kproto(n), "librdkafka mock": run_mock(n)}
    print(
        f"{n} messages of {MESSAGE_BYTES} bytes, linger.ms 5, lz4, {PARTITIONS} partitions"
    )
    print(
        f"{'broker':<18}{'produce msg/s':>15}{'MB/s':>8}{'consume msg/s':>15}{'MB/s':>8}"
    )
    for name, r in results.items():
        print(
            f"{name:<18}{n / r['produce_s']:>15,.0f}{mb / r['produce_s']:>8.1f}"
            f"{n / r['consume_s']:>15,.0f}{mb / r['consume_s']:>8.1f}"
        )
    k, m = results["kproto broker"], results["librdkafka mock"]
    print(
        f"ratio kproto/mock: produce {m['produce_s'] / k['produce_s']:.2f}x, "
        f"consume {m['consume_s'] / k['consume_s']:.2f}x"
    )
    print(
        f"kproto broker RSS: {k['rss_start'] / 2**20:.0f} MiB at start, "
        f"peak {k['rss_peak'] / 2**20:.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
