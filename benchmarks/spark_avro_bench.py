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

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_SRC = Path(__file__).resolve().parents[1] / "src"
if str(_SRC) not in sys.path:  # src layout, maybe not installed
    sys.path.insert(0, str(_SRC))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(_SRC)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import psutil  # type: ignore[import-untyped]  # noqa: E402

from benchmarks.avro_bench import SCHEMA, make_values  # noqa: E402

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


def _cpu(excluded: set[int]) -> float:
    """CPU seconds of this process tree, leaving out ``excluded`` pids."""
    me = psutil.Process()
    total = 0.0
    for p in [me] + me.children(recursive=True):
        if p.pid in excluded:
            continue
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


class PeakWorkerRss:
    """Samples the RSS of this tree's Python workers (``pyspark.daemon`` and its
    forks; with ``own``, of this process) every 50 ms; ``peak`` is the largest of
    one worker, bytes."""

    def __init__(self, own: bool = False) -> None:
        self.own = own
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakWorkerRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.05):
            if self.own:
                self.peak = max(self.peak, me.memory_info().rss)
                continue
            for p in me.children(recursive=True):
                try:
                    if "pyspark.daemon" in " ".join(p.cmdline()):
                        self.peak = max(self.peak, p.memory_info().rss)
                except psutil.Error:
                    continue


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
    import pyarrow.parquet as pq  # type: ignore[import-untyped]
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
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 8 << 20,
            "max.partition.fetch.bytes": 8 << 20,
            "log_level": 2,
            "value.deserializer": AvroDeserializer(
                SchemaRegistryClient({"url": registry})
            ),
        }
    )
    consumer.assign([ck.TopicPartition(TOPIC, p, 0) for p in range(parts)])
    out.mkdir(parents=True, exist_ok=True)
    writer = pq.ParquetWriter(str(out / "part-0.parquet"), schema)
    cols: list[list[Any]] = [[] for _ in schema]
    got = 0
    deadline = time.monotonic() + 600

    def flush() -> None:
        arrays = [pa.array(c, f.type) for c, f in zip(cols, schema, strict=True)]
        writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
        for c in cols:
            c.clear()

    while got < n and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None or msg.error() is not None:
            continue
        cols[0].append(msg.value())
        cols[1].append(msg.topic())
        cols[2].append(msg.partition())
        cols[3].append(msg.offset())
        got += 1
        if len(cols[0]) >= 100_000:
            flush()
    if cols[0]:
        flush()
    writer.close()
    consumer.close()
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--master", default="local[*]")
    args = ap.parse_args(argv)
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
        from pyspark.sql import SparkSession

        from kproto.spark import KafkaDataSource

        spark = (
            SparkSession.builder.master(args.master)
            .appName("kproto typed source bench")
            .config("spark.driver.memory", "2g")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
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
            cpu0, t0 = _cpu({broker.pid}), time.perf_counter()
            with PeakWorkerRss(own=name == "consumer") as rss:
                records = fn()
            wall = time.perf_counter() - t0
            cpu = _cpu({broker.pid}) - cpu0
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
