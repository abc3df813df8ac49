"""Shared fixtures of the kproto.spark tests: one local SparkSession per run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
_SRC = _HERE.parents[1] / "src"


def _python_path() -> None:
    # Spark's Python workers are separate processes: they must find kproto (src
    # layout, maybe not installed) and this folder's helper modules (test entities).
    parts = [str(_SRC), str(_HERE)]
    old = os.environ.get("PYTHONPATH")
    if old:
        parts.append(old)
    os.environ["PYTHONPATH"] = os.pathsep.join(parts)
    for p in (str(_HERE), str(_SRC)):
        if p not in sys.path:
            sys.path.insert(0, p)


_python_path()
pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.spark)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: starts a local SparkSession")


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A ``local[2]`` SparkSession with Arrow schema validation on, shared by all tests."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kproto-spark-tests")
        .config("spark.sql.execution.arrow.pyspark.validateSchema.enabled", "true")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
