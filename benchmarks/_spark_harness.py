"""What the Spark benchmarks share: the source tree on the path of Spark's Python
workers, CPU and RSS of this process tree, the session, and the plain
confluent-kafka consumer loop that writes Parquet with pyarrow (the baseline the
``kproto-kafka`` source is measured beside).

Importing this module puts ``src/`` first on ``sys.path`` and ``PYTHONPATH`` (a
source checkout may not be installed) and sets ``PYSPARK_PYTHON`` to this
interpreter, so import it before kproto and pyspark.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable, Iterable
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

#: The consumer settings of the baseline loops: Fetch of 8 MiB, as the source's.
CONSUMER_CONFIG = {
    "group.id": "bench",
    "enable.auto.commit": False,
    "fetch.max.bytes": 8 << 20,
    "max.partition.fetch.bytes": 8 << 20,
    "log_level": 2,
}

#: Rows buffered before the loops write a Parquet row group.
ROWS_PER_WRITE = 100_000


def tree_cpu(excluded: Iterable[int] = ()) -> float:
    """CPU seconds (user + system, reaped children included) of this process tree,
    leaving out the pids ``excluded``."""
    skip = set(excluded)
    me = psutil.Process()
    total = 0.0
    for p in [me] + me.children(recursive=True):
        if p.pid in skip:
            continue
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid``."""
    t = psutil.Process(pid).cpu_times()
    return float(t.user + t.system)


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


def live_topic_arguments(description: str) -> argparse.ArgumentParser:
    """The options of the benchmarks over a live topic: ``--records`` (1,000,000),
    ``--partitions`` (4) and ``--master`` (Spark's, ``local[*]``)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--master", default="local[*]")
    return ap


def spark_session(master: str, app_name: str) -> Any:
    """A local session as the benchmarks run it: 2 GB of driver memory, UTC,
    Parquet timestamps in microseconds, errors only in the log."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.memory", "2g")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class ParquetColumns:
    """Columns a baseline loop appends to, written to ``out/part-0.parquet`` with
    pyarrow's ParquetWriter every :data:`ROWS_PER_WRITE` rows (the loops append
    field by field themselves: a row object per message would slow the baseline
    they measure). ``arrays`` turns the columns into pyarrow arrays where a plain
    ``pa.array(column, type)`` will not do."""

    def __init__(
        self,
        schema: Any,
        out: Path,
        arrays: Callable[[list[list[Any]]], list[Any]] | None = None,
    ) -> None:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        self._pa = pa
        self.schema = schema
        out.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(str(out / "part-0.parquet"), schema)
        #: one list per field of ``schema``
        self.cols: list[list[Any]] = [[] for _ in schema]
        self._arrays = arrays or (
            lambda cs: [pa.array(c, f.type) for c, f in zip(cs, schema, strict=True)]
        )

    def write_if_full(self) -> None:
        """Write a row group once :data:`ROWS_PER_WRITE` rows are buffered."""
        if len(self.cols[0]) >= ROWS_PER_WRITE:
            self._write()

    def close(self) -> None:
        """Write what is buffered and close the file."""
        if self.cols[0]:
            self._write()
        self._writer.close()

    def _write(self) -> None:
        batch = self._pa.RecordBatch.from_arrays(
            self._arrays(self.cols), schema=self.schema
        )
        self._writer.write_batch(batch)
        for c in self.cols:
            c.clear()
