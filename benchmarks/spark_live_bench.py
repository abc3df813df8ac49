"""Benchmark the ``kproto-kafka`` Spark source reading a live topic, beside a plain
confluent-kafka consumer loop writing the same Parquet.

    python -m benchmarks.spark_live_bench [--records 1000000] [--partitions 4]

Starts kproto's broker as a subprocess (``python -m kproto broker``), produces
``--records`` records (16-byte keys, ~100-byte values, lz4, confluent-kafka), then
reads the whole topic twice, each time to Parquet (``key``, ``value``, ``topic``,
``partition``, ``offset``, ``timestamp``, ``timestampType``):

* ``source``: ``kproto.spark.read_kafka`` -> ``df.write.parquet`` in a ``local[*]``
  session (Fetch of 8 MiB per request, one task per partition);
* ``consumer``: one confluent-kafka ``Consumer`` assigned every partition from
  the start, ``consume(10000)`` in a loop, columns into pyarrow, written with
  ``pyarrow.parquet.ParquetWriter`` every 100,000 rows (no Spark).

Reported per job: wall seconds, records/s, CPU seconds per 1M records of the
reader (this process tree without the broker: driver, JVM and Python workers for
``source``; this process for ``consumer``) and of the broker serving the fetches.
Not a test: nothing is asserted.
"""

from __future__ import annotations

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
    live_topic_arguments,
    process_cpu,
    spark_session,
    tree_cpu,
)

TOPIC = "bench"


def produce(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    import confluent_kafka as ck

    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": "lz4",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "log_level": 2,
        }
    )
    pad = b"x" * 60
    for i in range(n):
        value = b'{"id":%d,"status":"paid","amount":%d,"pad":"%s"}' % (i, i % 997, pad)
        while True:
            try:
                producer.produce(
                    topic,
                    value,
                    key=b"customer-%07d" % (i % 5000),
                    partition=i % partitions,
                )
                break
            except BufferError:
                producer.poll(0.1)
        if i % 10000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("produce did not finish")


def job_source(spark: Any, bootstrap: str, out: Path) -> int:
    from kproto.spark import read_kafka

    read_kafka(spark, bootstrap, TOPIC).write.mode("overwrite").parquet(str(out))
    return -1  # counted after the measurement


def job_consumer(bootstrap: str, n: int, partitions: int, out: Path) -> int:
    import confluent_kafka as ck
    import pyarrow as pa  # type: ignore[import-untyped]

    schema = pa.schema(
        [
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
            ("timestampType", pa.int32()),
        ]
    )
    consumer = ck.Consumer({**CONSUMER_CONFIG, "bootstrap.servers": bootstrap})
    consumer.assign([ck.TopicPartition(TOPIC, p, 0) for p in range(partitions)])

    def arrays(cols: list[list[Any]]) -> list[Any]:
        out = [pa.array(c, f.type) for c, f in zip(cols, schema, strict=True)]
        ms = pa.array(cols[5], pa.int64())  # librdkafka gives ms since the epoch
        out[5] = pa.compute.multiply(ms, 1000).cast(schema.field(5).type)
        return out

    parquet = ParquetColumns(schema, out, arrays)
    keys, values, topics, parts, offsets, stamps, stamp_types = parquet.cols
    got = 0
    deadline = time.monotonic() + 600
    while got < n and time.monotonic() < deadline:
        for msg in consumer.consume(10000, 1.0):
            if msg.error() is not None:
                continue
            ts_type, ts = msg.timestamp()
            keys.append(msg.key())
            values.append(msg.value())
            topics.append(msg.topic())
            parts.append(msg.partition())
            offsets.append(msg.offset())
            stamps.append(ts)
            stamp_types.append(ts_type - 1)  # librdkafka: 1 create time, 2 log append
            got += 1
        parquet.write_if_full()
    parquet.close()
    consumer.close()
    return got


def main(argv: list[str] | None = None) -> int:
    args = live_topic_arguments(__doc__.splitlines()[0]).parse_args(argv)
    n, parts = args.records, args.partitions
    work = Path(tempfile.mkdtemp(prefix="kproto-live-bench-"))
    broker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kproto",
            "broker",
            "--partitions",
            str(parts),
            "--data-dir",
            str(work / "broker"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert broker.stdout is not None
        bootstrap = broker.stdout.readline().strip()
        t = time.perf_counter()
        produce(bootstrap, TOPIC, n, parts)
        print(
            f"topic: {n:,} records in {parts} partitions (lz4, ~120 B values), "
            f"produced in {time.perf_counter() - t:.1f} s",
            flush=True,
        )
        produce(bootstrap, "warm", 1000, 1)

        spark = spark_session(args.master, "kproto live source bench")
        from kproto.spark import read_kafka

        read_kafka(spark, bootstrap, "warm").write.mode("overwrite").parquet(
            str(work / "warm")
        )  # JVM and Python workers up

        jobs: dict[str, Callable[[], int]] = {
            "source": lambda: job_source(spark, bootstrap, work / "source"),
            "consumer": lambda: job_consumer(bootstrap, n, parts, work / "consumer"),
        }
        print(
            f"{'job':<10}{'wall s':>8}{'records/s':>12}{'CPU s/1M':>10}"
            f"{'broker CPU s/1M':>17}{'Parquet MB':>12}",
            flush=True,
        )
        for name, fn in jobs.items():
            excluded = {broker.pid}
            cpu0, b0, t0 = (
                tree_cpu(excluded),
                process_cpu(broker.pid),
                time.perf_counter(),
            )
            records = fn()
            wall = time.perf_counter() - t0
            cpu, bcpu = tree_cpu(excluded) - cpu0, process_cpu(broker.pid) - b0
            mb = sum(p.stat().st_size for p in (work / name).rglob("*.parquet")) / 1e6
            if records < 0:
                records = int(spark.read.parquet(str(work / name)).count())
            if records != n:
                print(f"{name}: read {records:,} of {n:,} records")
            print(
                f"{name:<10}{wall:>8.1f}{records / wall:>12,.0f}"
                f"{cpu / records * 1e6:>10.1f}{bcpu / records * 1e6:>17.1f}{mb:>12.1f}",
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
