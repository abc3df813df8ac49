"""The demo's second half: kproto's own broker (:mod:`kproto.broker`) serving real
confluent-kafka clients, then its data directory read back as Kafka log segments."""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

from kproto.broker import Cluster
from kproto.cli import main as kproto_cli
from kproto.index import ApiKey

from .tables import Printer

TOPIC, GROUP, N = "demo-orders", "demo-group", 300


def broker_step(out_dir: Path, *, out: Printer | None = None) -> Path:
    """Start a 3-node :class:`kproto.broker.Cluster` with its data under
    ``out_dir/broker-data`` (emptied first), create a topic with confluent-kafka's
    AdminClient, produce ``N`` keyed lz4 records (idempotent), consume them in a
    consumer group that commits, and print what the broker served; return the data
    directory (topic logs and ``__consumer_offsets``, as Kafka lays them out)."""
    from confluent_kafka import Consumer, Producer, admin

    p = out or Printer(sys.stdout)
    data_dir = out_dir / "broker-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    started = time.monotonic()
    with Cluster(nodes=3, data_dir=data_dir) as cluster:
        servers = cluster.bootstrap_servers
        quiet: dict[str, str | int | float | bool] = {"bootstrap.servers": servers}
        quiet["log_level"] = 2  # no reconnect chatter when the cluster stops
        p.section(f"kproto.broker: 3 nodes at {servers}")
        client = admin.AdminClient(quiet)
        new_topic = admin.NewTopic(TOPIC, 3)  # type: ignore[attr-defined]
        client.create_topics([new_topic])[TOPIC].result(10)
        producer = Producer(
            quiet
            | {"compression.type": "lz4"}
            | {"enable.idempotence": True, "linger.ms": 5}
        )
        for i in range(N):
            producer.produce(TOPIC, key=b"customer-%d" % (i % 7), value=b"order %d" % i)
        producer.flush(10)
        consumer = Consumer(
            quiet
            | {"group.id": GROUP}
            | {"auto.offset.reset": "earliest", "enable.auto.commit": False}
        )
        consumer.subscribe([TOPIC])
        seen: Counter[int] = Counter()
        deadline = time.monotonic() + 30
        while sum(seen.values()) < N and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen[message.partition() or 0] += 1
        consumer.commit(asynchronous=False)
        consumer.close()
        p.line(f"produced {N} records, consumed {sum(seen.values())} in group {GROUP}")
        p.table(
            "partition|records consumed|log end offset",
            [(part, seen[part], cluster.records(TOPIC, part)[-1].offset + 1) for part in sorted(seen)],
        )  # fmt: skip
        served = Counter((r.api_key, r.api_version) for r in cluster.requests)
        p.line()
        p.table(
            "api|version|requests",
            [(ApiKey(k).name, v, n) for (k, v), n in sorted(served.items())],
        )
    p.line(
        f"\nbroker stopped after {time.monotonic() - started:.1f} s; data in {data_dir}"
    )
    segment = sorted((data_dir / f"{TOPIC}-0").glob("*.log"))[0]
    p.section(f"kproto dump-log {segment.relative_to(out_dir)} (first lines)")
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(io.StringIO()):
        kproto_cli(["dump-log", str(segment)])
    for line in text.getvalue().splitlines()[:6]:
        p.line(line)
    return data_dir
