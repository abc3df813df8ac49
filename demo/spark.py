"""The last step: the Spark pipeline (:mod:`kproto.spark`) on the demo's segments."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from .tables import Printer

UTC = {"spark.sql.session.timeZone": "UTC", "spark.ui.showConsoleProgress": False}
CONF: dict[str, Any] = {"spark.ui.enabled": False, **UTC}


def spark_step(
    segments: Path, broker_data: Path | None = None, *, master: str = "local[*]"
) -> None:
    """Read ``segments`` with :func:`kproto.spark.read_log_segments`; print tables.
    With ``broker_data`` (a kproto broker's data directory), also decode its
    ``__consumer_offsets`` with :func:`kproto.spark.decode_internal_topic`."""
    p = Printer(sys.stdout)
    p.section(f"Spark: read_log_segments({segments}) on {master}")
    try:
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        import kproto.spark
    except ImportError as exc:
        p.line(f"skipped: {exc}; install the extra with pip install -e '.[spark]'")
        return
    started = time.monotonic()
    builder = SparkSession.builder.master(master).appName("kproto-demo")
    spark = builder.config(map=CONF).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rows: list[Any] = [
            (r.topic, r.partition, r.records, f"{r.first_offset}-{r.last_offset}")
            + (r.codecs, r.value_bytes, r.corrupt_batches)
            for r in kproto.spark.demo_table(spark, segments).collect()
        ]
        p.table("topic|partition|records|offsets|codecs|value bytes|corrupt", rows)
        records = kproto.spark.read_log_segments(spark, segments)
        records = kproto.spark.records_only(records)
        ts = F.date_format("timestamp", "yyyy-MM-dd HH:mm:ss.SSS").alias("timestamp")
        text = [F.col(c).cast("string").alias(c) for c in ("key", "value")]
        first = records.select("topic", "partition", "offset", ts, *text)
        p.line()
        rows = first.orderBy("topic", "partition", "offset").limit(8).collect()
        p.table("topic|partition|offset|timestamp (UTC)|key|value", rows)
        seconds = time.monotonic() - started
        p.line(f"\n{records.count()} records decoded by Spark in {seconds:.1f} s")
        if broker_data is not None:
            _committed_offsets(p, spark, broker_data)
    finally:
        spark.stop()


def _committed_offsets(p: Printer, spark: Any, broker_data: Path) -> None:
    """The broker's committed offsets, decoded from its ``__consumer_offsets`` logs."""
    from pyspark.sql import functions as F

    import kproto.spark

    path = sorted(broker_data.glob("__consumer_offsets-*"))
    df = kproto.spark.read_log_segments(spark, [str(d) for d in path])
    decoded = kproto.spark.decode_internal_topic(df, "__consumer_offsets")
    commits = decoded.where(F.col("record_type") == "OffsetCommitKey").select(
        F.col("offset_commit_key.group").alias("group"),
        F.col("offset_commit_key.topic").alias("topic"),
        F.col("offset_commit_key.partition").alias("partition"),
        F.col("offset_commit_value.offset").alias("committed"),
    )
    p.section(f"Spark: decode_internal_topic(__consumer_offsets) of {broker_data}")
    p.table(
        "group|topic|partition|committed offset", commits.orderBy("partition").collect()
    )
