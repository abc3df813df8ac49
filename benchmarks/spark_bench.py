"""Benchmark ``kproto.spark.read_log_segments`` against naive and floor Spark jobs.

    python -m benchmarks.spark_bench [--size-mb 1024] [--files 200] [--keep]

Generates a data set of Kafka segment files (``<topic>-<partition>/000...0.log``,
magic 2, codecs rotating none/gzip/snappy/lz4/zstd per file) of about ``--size-mb``
MB on disk, then runs, in one embedded Spark session (``local[*]``):

* ``kproto``: ``read_log_segments`` -> Parquet with Spark's writer and
  :data:`kproto.spark.cli.PARQUET_OPTIONS`;
* ``nodict``: the same with ``key``/``value`` dictionaries off too (the settings
  before they were turned back on: what they cost in CPU and save in size);
* ``arrow``: the same decoding in Spark tasks that write Parquet themselves with
  pyarrow (``kproto spark segments --writer arrow``);
* ``naive``: ``binaryFile`` + kafka-python's ``MemoryRecords`` in an RDD
  ``flatMap`` -> Parquet (the job people write first);
* ``floor``: ``binaryFile`` through ``mapInArrow`` untouched -> ``noop`` sink (the
  cost of moving the bytes JVM -> Python -> JVM; reported in MB/s);
* ``single``: kproto's own decoder in this process, no Spark, -> Parquet with
  pyarrow's default settings: the size reference of the ``x pyarrow`` column.

CPU seconds are user+system time of the driver, the JVM and every Python worker
(psutil over the process tree, including reaped children), measured around each job
(the read-back that counts a Spark writer job's rows is not measured).
``--breakdown`` prints each job's CPU per JVM thread group (task threads, JIT
compilers, GC) and Python process kind.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import struct
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # noqa: E402

from benchmarks._spark_harness import tree_cpu

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
WORDS = [
    "order",
    "created",
    "paid",
    "shipped",
    "customer",
    "item",
    "price",
    "EUR",
    "USD",
    "warehouse",
    "north",
    "south",
    "priority",
    "standard",
    "express",
]


# --- data set ------------------------------------------------------------------------


def _templates(
    codec: str, seed: int, n_batches: int = 8, per_batch: int = 500
) -> list[bytes]:
    """A few distinct batches of one codec; files repeat them with new base offsets."""
    from kproto.records import Compression, encode_batch

    rnd = random.Random(seed)
    out = []
    t0 = 1_700_000_000_000
    for b in range(n_batches):
        recs = []
        for i in range(per_batch):
            words = " ".join(rnd.choice(WORDS) for _ in range(rnd.randrange(10, 40)))
            value = f'{{"id":{rnd.randrange(10**9)},"n":{i},"text":"{words}"}}'.encode()
            key = f"customer-{rnd.randrange(100000)}".encode()
            headers = [("source", b"bench")] if i % 4 == 0 else []
            recs.append((key, value, headers, t0 + b * 1000 + i))
        out.append(encode_batch(recs, compression=Compression[codec.upper()]))
    return out


def generate(root: Path, size_mb: float, files: int) -> tuple[int, int]:
    """Write the data set; returns (bytes, records)."""
    per_file = int(size_mb * 1e6 / files)
    templates = {c: _templates(c, i) for i, c in enumerate(CODECS)}
    total_bytes = total_records = 0
    for f in range(files):
        codec = CODECS[f % len(CODECS)]
        d = root / f"bench-{f % 50}-{f}"
        d.mkdir(parents=True)
        offset = 0
        written = 0
        with open(d / "00000000000000000000.log", "wb") as out:
            i = 0
            while written < per_file:
                batch = bytearray(templates[codec][i % len(templates[codec])])
                struct.pack_into(">q", batch, 0, offset)  # base offset: not in the CRC
                out.write(batch)
                written += len(batch)
                offset += 500
                i += 1
        total_bytes += written
        total_records += offset
    return total_bytes, total_records


# --- measurement ---------------------------------------------------------------------


def _cpu_groups() -> dict[str, float]:
    """CPU seconds per group of this process tree: the JVM's threads by name
    (``jvm: Executor task launch worker``, ``jvm: GC Thread``, ``jvm: C2
    CompilerThread``..., numbers stripped) and every other process by kind (``python
    workers``, ``driver``). Reaped children count under their parent's kind."""
    me = psutil.Process()
    groups: dict[str, float] = {}

    def add(name: str, seconds: float) -> None:
        groups[name] = groups.get(name, 0.0) + seconds

    for p in [me] + me.children(recursive=True):
        try:
            t = p.cpu_times()
            is_jvm = p.name() == "java"
        except psutil.Error:
            continue
        reaped = t.children_user + t.children_system
        if not is_jvm:
            kind = "driver" if p.pid == me.pid else "python workers"
            add(kind, t.user + t.system + (0.0 if p.pid == me.pid else reaped))
            continue
        add("jvm: reaped children", reaped)
        for task in Path(f"/proc/{p.pid}/task").iterdir():
            try:
                comm = (task / "comm").read_text().strip()
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks = int(fields[11]) + int(fields[12])  # utime, stime
            name = comm.rstrip("0123456789#").rstrip(" -#") or comm
            add(f"jvm: {name}", ticks / os.sysconf("SC_CLK_TCK"))
    return groups


def measure(
    fn: Callable[[], int], *, in_process: bool = False
) -> tuple[float, float, int]:
    """(wall s, CPU s, records) of one job. ``in_process``: count this process only
    (a job without Spark; idle Python workers that Spark retires meanwhile would
    otherwise take their earlier CPU time out of the tree total)."""
    cpu = time.process_time if in_process else tree_cpu
    cpu0, t0 = cpu(), time.perf_counter()
    records = fn()
    return time.perf_counter() - t0, cpu() - cpu0, records


def _parquet_mb(folder: Path) -> float:
    """Total size of the ``*.parquet`` files under ``folder`` in MB (0 if none)."""
    return sum(p.stat().st_size for p in folder.rglob("*.parquet")) / 1e6


# --- jobs ----------------------------------------------------------------------------


def job_kproto(spark: Any, data: Path, out: Path) -> int:
    from kproto.spark import read_log_segments
    from kproto.spark.cli import PARQUET_OPTIONS

    df = read_log_segments(spark, data)
    df.write.mode("overwrite").options(**PARQUET_OPTIONS).parquet(str(out))
    return -1  # counted by reading back, outside the measurement


def job_nodict(spark: Any, data: Path, out: Path) -> int:
    from kproto.spark import read_log_segments
    from kproto.spark.cli import PARQUET_OPTIONS

    options = {
        **PARQUET_OPTIONS,
        "parquet.enable.dictionary#key": "false",
        "parquet.enable.dictionary#value": "false",
    }
    df = read_log_segments(spark, data)
    df.write.mode("overwrite").options(**options).parquet(str(out))
    return -1


def job_arrow(spark: Any, data: Path, out: Path) -> int:
    from kproto.spark.cli import write_segments_arrow

    records, _ = write_segments_arrow(
        spark, [str(data)], str(out), split_bytes=None, check_crc=True
    )
    return records


def _naive_decode(row: Any) -> Iterator[tuple[Any, ...]]:
    from kafka.record.memory_records import (  # type: ignore[import-untyped]
        MemoryRecords,
    )

    parts = row.path.rsplit("/", 2)
    topic, _, partition = parts[-2].rpartition("-")
    mr = MemoryRecords(bytes(row.content))
    while mr.has_next():
        batch = mr.next_batch()
        for r in batch:
            yield (
                topic,
                int(partition),
                r.offset,
                r.timestamp,
                r.key,
                r.value,
                [(k, v) for k, v in r.headers],
                batch.base_offset,
            )


def job_naive(spark: Any, data: Path, out: Path) -> int:
    schema = (
        "topic string, partition int, offset bigint, timestamp bigint, key binary, "
        "value binary, headers array<struct<key:string,value:binary>>, base_offset bigint"
    )
    files = (
        spark.read.format("binaryFile")
        .option("pathGlobFilter", "*.log")
        .option("recursiveFileLookup", "true")
        .load(str(data))
    )
    rdd = files.select("path", "content").rdd.flatMap(_naive_decode)
    from kproto.spark.cli import PARQUET_OPTIONS  # same writer settings as kproto's

    df = spark.createDataFrame(rdd, schema)
    df.write.mode("overwrite").options(**PARQUET_OPTIONS).parquet(str(out))
    return -1


def job_floor(spark: Any, data: Path, out: Path) -> int:
    files = (
        spark.read.format("binaryFile")
        .option("pathGlobFilter", "*.log")
        .option("recursiveFileLookup", "true")
        .load(str(data))
    )

    def untouched(batches: Any) -> Any:
        yield from batches

    files.mapInArrow(untouched, files.schema).write.format("noop").mode(
        "overwrite"
    ).save()
    return 0


def job_single(data: Path, out: Path) -> int:
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    from kproto.spark._columns import SEGMENT_ARROW_SCHEMA
    from kproto.spark._framing import ByteRange, find_segment_files
    from kproto.spark._segments import read_range

    out.mkdir(parents=True, exist_ok=True)
    n = 0
    with pq.ParquetWriter(str(out / "part-0.parquet"), SEGMENT_ARROW_SCHEMA) as w:
        for seg in find_segment_files([data]):
            r = ByteRange(seg.path, 0, seg.size, seg.topic, seg.partition)
            for batch in read_range(r):
                w.write_batch(batch)
                n += batch.num_rows
    return n


# --- main ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--size-mb", type=float, default=1024.0, help="data set size on disk"
    )
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument(
        "--dir", type=Path, default=None, help="work folder (default: temp)"
    )
    ap.add_argument(
        "--jobs",
        default="kproto,nodict,kproto,nodict,kproto,nodict,arrow,naive,floor,single",
        help="comma-separated; a job named again runs again (interleaved rounds, "
        "median reported)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the data set")
    ap.add_argument(
        "--breakdown",
        action="store_true",
        help="print each job's CPU per JVM thread group and Python process kind",
    )
    ap.add_argument("--warm-mb", type=float, default=20.0, help="warm-up data set size")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark setting (repeatable), e.g. "
        "spark.sql.parquet.compression.codec=zstd",
    )
    args = ap.parse_args(argv)
    if any("=" not in c for c in args.conf):
        ap.error("--conf expects KEY=VALUE")

    work = args.dir or Path(tempfile.mkdtemp(prefix="kproto-spark-bench-"))
    data, outs = work / "data", work / "out"
    if data.exists():
        shutil.rmtree(data)
    t = time.perf_counter()
    size, records = generate(data, args.size_mb, args.files)
    print(
        f"data set: {args.files} files, {size / 1e6:,.0f} MB, {records:,} records "
        f"(~{size / records:.0f} B/record on disk), codecs {'/'.join(CODECS)} by file, "
        f"500 records/batch; generated in {time.perf_counter() - t:.1f} s",
        flush=True,
    )

    from pyspark.sql import SparkSession

    from kproto.spark.cli import SESSION_CONF

    builder = (
        SparkSession.builder.master(args.master)
        .appName("kproto spark bench")
        .config("spark.driver.memory", "3g")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.validateSchema.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    # The CLI's settings (Parquet timestamps as TIMESTAMP_MICROS, not INT96); they
    # change nothing for the naive job, whose timestamp is a bigint. --conf wins.
    for key, value in [*SESSION_CONF.items(), *(c.split("=", 1) for c in args.conf)]:
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    cores = spark.sparkContext.defaultParallelism
    spark.range(10).count()  # warm up the JVM
    # Warm up Python workers and code paths of every job on a one-file data set, so
    # the measurements below are steady-state throughput, not start-up.
    warm = work / "warm"
    if warm.exists():
        shutil.rmtree(warm)
    generate(warm, args.warm_mb, 4)
    names = set(args.jobs.split(",")) - {"single"}
    for warm_job in (job_kproto, job_nodict, job_arrow, job_naive, job_floor):
        if warm_job.__name__.removeprefix("job_") in names:
            warm_job(spark, warm, work / "warm-out" / warm_job.__name__)

    jobs: dict[str, Callable[[], int]] = {
        "kproto": lambda: job_kproto(spark, data, outs / "kproto"),
        "nodict": lambda: job_nodict(spark, data, outs / "nodict"),
        "arrow": lambda: job_arrow(spark, data, outs / "arrow"),
        "naive": lambda: job_naive(spark, data, outs / "naive"),
        "floor": lambda: job_floor(spark, data, outs / "floor"),
        "single": lambda: job_single(data, outs / "single"),
    }
    # A job named more than once (e.g. kproto,nodict,kproto,nodict,...) runs in
    # interleaved rounds; the table shows its median wall and CPU time.
    runs: dict[str, list[tuple[float, float, int]]] = {}
    out_mb: dict[str, float] = {}
    for name in args.jobs.split(","):
        before = _cpu_groups() if args.breakdown else {}
        wall, cpu, n = measure(jobs[name], in_process=name == "single")
        if n < 0:  # a Spark writer job: count its record rows, not measured
            back = spark.read.parquet(str(outs / name))
            n = int(
                back.where("error is null").count() if name != "naive" else back.count()
            )
        if args.breakdown:
            after = _cpu_groups()
            spent = {k: v - before.get(k, 0.0) for k, v in after.items()}
            for group, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
                if seconds >= 0.05:
                    print(f"    {group}: {seconds:.2f} CPU-s", flush=True)
        runs.setdefault(name, []).append((wall, cpu, n))
        out_mb[name] = _parquet_mb(outs / name)
        print(
            f"  {name}: {wall:.1f} s wall, {cpu:.1f} CPU-s, {n:,} records", flush=True
        )
    spark.stop()
    results = {
        name: (
            statistics.median(r[0] for r in rs),
            statistics.median(r[1] for r in rs),
            rs[-1][2],
        )
        for name, rs in runs.items()
    }

    print()
    print(f"{cores} cores; input {size / 1e6:,.0f} MB, {records:,} records")
    reference = out_mb.get("single") or 0.0  # pyarrow's default write
    print(
        "| job | wall s | records/s | MB/s (input) | CPU-s | CPU-s per 1M records "
        "| Parquet MB | x pyarrow |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (wall, cpu, n) in results.items():
        rps = f"{records / wall:,.0f}" if name != "floor" else "-"
        per_m = f"{cpu / records * 1e6:.2f}" if name != "floor" else "-"
        mb = f"{out_mb[name]:,.0f}" if out_mb.get(name) else "-"
        ratio = (
            f"{out_mb[name] / reference:.2f}" if out_mb.get(name) and reference else "-"
        )
        rounds = f" (median of {len(runs[name])})" if len(runs[name]) > 1 else ""
        print(
            f"| {name}{rounds} | {wall:.1f} | {rps} | {size / 1e6 / wall:,.1f} "
            f"| {cpu:.1f} | {per_m} | {mb} | {ratio} |"
        )
        if name not in ("floor",) and n != records:
            print(f"  WARNING: {name} produced {n:,} records, expected {records:,}")
    for name in ("kproto", "arrow"):
        if name in results and "naive" in results:
            ratio = results["naive"][0] / results[name][0]
            print(f"{name} vs naive: {ratio:.1f}x records/s")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"kept {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
