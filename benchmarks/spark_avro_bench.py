"""Benchmark typed reads: the ``kproto-kafka`` Spark source decoding Confluent-framed
Avro (``valueFormat=avro``) beside the same job with binary values and a
confluent-kafka ``DeserializingConsumer`` + ``AvroDeserializer`` loop.

    python -m benchmarks.spark_avro_bench [--records 1000000] [--partitions 4]

Starts kproto's broker with its Schema Registry in a subprocess, registers issue
26's 10-field record (:data:`benchmarks.avro_bench.SCHEMA`: long, string, double,
enum, timestamp-millis, int, nullable string, boolean, string, float), produces
``--records`` values in Confluent's wire format (lz4), then writes the whole topic
to Parquet three ways:

* ``binary``: ``spark.read.format("kproto-kafka")`` -> ``df.write.parquet``
  (``key``, ``value`` binary and the record columns);
* ``avro``: the same with ``valueFormat=avro`` and ``schemaRegistryUrl`` (``value``
  a struct of the 10 fields, decoded batch by batch by kproto's native decoder);
* ``consumer``: a ``DeserializingConsumer`` with ``AvroDeserializer`` (dicts),
  rows into pyarrow, ``ParquetWriter`` every 100,000 rows (no Spark).

Reported per job: wall seconds, records/s, CPU seconds per 1M records of this
process tree without the broker (driver, JVM and Python workers for the Spark
jobs), and the peak RSS (MB) of one Python worker (``pyspark.daemon`` children;
for ``consumer`` this process, which holds the Spark driver's Python side too),
sampled every 50 ms. Not a test: nothing is asserted.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._spark_harness import (
    CONSUMER_CONFIG,
    ParquetColumns,
    PeakWorkerRss,
    live_topic_arguments,
    spark_session,
    tree_cpu,
)
from benchmarks.avro_bench import SCHEMA, make_values

TOPIC = "trades"
# The broker and its registry, in a process of their own (their CPU is left out).
_BROKER = """
import signal, sys, threading
from kproto.broker import Cluster
done = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: done.set())
with Cluster(nodes=1, schema_registry=True, num_partitions={parts}) as c:
    print(c.bootstrap_servers, c.schema_registry_url, flush=True)
    done.wait()
"""


def produce(bootstrap: str, registry: str, n: int, partitions: int) -> None:
    import confluent_kafka as ck
    import requests

    answer = requests.post(
        f"{registry}/subjects/{TOPIC}-value/versions",
        json={"schema": json.dumps(SCHEMA)},
        timeout=30,
    )
    answer.raise_for_status()
    prefix = b"\x00" + int(answer.json()["id"]).to_bytes(4, "big")
    values = [prefix + v[5:] for v in make_values()]
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": "lz4",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "log_level": 2,
        }
    )
    for i in range(n):
        while True:
            try:
                producer.produce(
                    TOPIC, values[i % len(values)], partition=i % partitions
                )
                break
            except BufferError:
                producer.poll(0.1)
        if i % 10000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("produce did not finish")


def job_spark(spark: Any, bootstrap: str, registry: str, fmt: str, out: Path) -> int:
    reader = (
        spark.read.format("kproto-kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
    )
    if fmt != "binary":
        reader = reader.option("valueFormat", fmt).option("schemaRegistryUrl", registry)
    reader.load().write.mode("overwrite").parquet(str(out))
    return -1  # counted after the measurement


def job_consumer(bootstrap: str, registry: str, n: int, parts: int, out: Path) -> int:
    import confluent_kafka as ck
    import pyarrow as pa  # type: ignore[import-untyped]
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    from kproto.avro import avro_plan
    from kproto.avro.arrow import arrow_type

    value_type = arrow_type(avro_plan(json.dumps(SCHEMA)).column)
    schema = pa.schema(
        [
            ("value", value_type),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
        ]
    )
    consumer = ck.DeserializingConsumer(
        {
            **CONSUMER_CONFIG,
            "bootstrap.servers": bootstrap,
            "value.deserializer": AvroDeserializer(
                SchemaRegistryClient({"url": registry})
            ),
        }
    )
    consumer.assign([ck.TopicPartition(TOPIC, p, 0) for p in range(parts)])
    parquet = ParquetColumns(schema, out)
    values, topics, partitions, offsets = parquet.cols
    got = 0
    deadline = time.monotonic() + 600
    # DeserializingConsumer has no consume(): one poll per message
    while got < n and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None or msg.error() is not None:
            continue
        values.append(msg.value())
        topics.append(msg.topic())
        partitions.append(msg.partition())
        offsets.append(msg.offset())
        got += 1
        parquet.write_if_full()
    parquet.close()
    consumer.close()
    return got


def main(argv: list[str] | None = None) -> int:
    args = live_topic_arguments(__doc__.splitlines()[0]).parse_args(argv)
    n, parts = args.records, args.partitions
    work = Path(tempfile.mkdtemp(prefix="kproto-avro-bench-"))
    broker = subprocess.Popen(
        [sys.executable, "-c", _BROKER.format(parts=parts)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert broker.stdout is not None
        bootstrap, registry = broker.stdout.readline().split()
        t = time.perf_counter()
        produce(bootstrap, registry, n, parts)
        print(
            f"topic: {n:,} Avro records (10 fields, Confluent's wire format, lz4) in "
            f"{parts} partitions, produced in {time.perf_counter() - t:.1f} s",
            flush=True,
        )
        from kproto.spark import KafkaDataSource

        spark = spark_session(args.master, "kproto typed source bench")
        spark.dataSource.register(KafkaDataSource)
        job_spark(spark, bootstrap, registry, "avro", work / "warm")  # workers up

        jobs: dict[str, Callable[[], int]] = {
            "binary": lambda: job_spark(
                spark, bootstrap, registry, "binary", work / "binary"
            ),
            "avro": lambda: job_spark(
                spark, bootstrap, registry, "avro", work / "avro"
            ),
            "consumer": lambda: job_consumer(
                bootstrap, registry, n, parts, work / "consumer"
            ),
        }
        print(
            f"{'job':<10}{'wall s':>8}{'records/s':>12}{'CPU s/1M':>10}"
            f"{'worker RSS MB':>15}{'Parquet MB':>12}",
            flush=True,
        )
        for name, fn in jobs.items():
            cpu0, t0 = tree_cpu({broker.pid}), time.perf_counter()
            with PeakWorkerRss(own=name == "consumer") as rss:
                records = fn()
            wall = time.perf_counter() - t0
            cpu = tree_cpu({broker.pid}) - cpu0
            mb = sum(p.stat().st_size for p in (work / name).rglob("*.parquet")) / 1e6
            if records < 0:
                records = int(spark.read.parquet(str(work / name)).count())
            if records != n:
                print(f"{name}: read {records:,} of {n:,} records")
            peak = f"{rss.peak / 1e6:.0f}" if rss.peak else "-"
            print(
                f"{name:<10}{wall:>8.1f}{records / wall:>12,.0f}"
                f"{cpu / records * 1e6:>10.1f}{peak:>15}{mb:>12.1f}",
                flush=True,
            )
        spark.stop()
    finally:
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
