"""The last step: the Spark pipeline (:mod:`kproto.spark`) on the demo's segments."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from .tables import Printer

UTC = {"spark.sql.session.timeZone": "UTC", "spark.ui.showConsoleProgress": False}
CONF: dict[str, Any] = {"spark.ui.enabled": False, **UTC}


def spark_step(segments: Path, *, master: str = "local[*]") -> None:
    """Read ``segments`` with :func:`kproto.spark.read_log_segments`; print tables."""
    p = Printer(sys.stdout)
    p.section(f"Spark: read_log_segments({segments}) on {master}")
    try:
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        import kproto.spark
    except ImportError as exc:
        p.line(f"skipped: {exc}; install the extra with pip install -e '.[spark]'")
        return
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers import kproto
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
    finally:
        spark.stop()
