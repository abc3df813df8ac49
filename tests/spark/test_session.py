"""ensure_python_workers: the library points Python workers at a Python with kproto."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from kproto.spark._session import ensure_python_workers


def _session(
    master: str, conf: dict[str, str], exec_: str = "python3"
) -> SimpleNamespace:
    sc = SimpleNamespace(
        master=master, pythonExec=exec_, getConf=lambda: SimpleNamespace(get=conf.get)
    )
    return SimpleNamespace(sparkContext=sc)


def test_local_master_gets_sys_executable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    spark = _session("local[*]", {})
    assert ensure_python_workers(spark) == sys.executable
    assert spark.sparkContext.pythonExec == sys.executable
    assert ensure_python_workers(spark) is None  # already set: nothing to do


def test_setting_wins_and_cluster_is_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    spark = _session("spark://h:7077", {"spark.pyspark.python": "/opt/py/bin/python"})
    assert ensure_python_workers(spark) == "/opt/py/bin/python"
    assert spark.sparkContext.pythonExec == "/opt/py/bin/python"
    cluster = _session("yarn", {})
    assert ensure_python_workers(cluster) is None
    assert cluster.sparkContext.pythonExec == "python3"


def test_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/python3.12")
    spark = _session("local[2]", {}, exec_="/usr/bin/python3.12")
    assert ensure_python_workers(spark) is None
    assert spark.sparkContext.pythonExec == "/usr/bin/python3.12"


def test_real_session_workers_run_this_python(
    spark: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    sc = spark.sparkContext  # type: ignore[attr-defined]
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.setattr(sc, "pythonExec", "python3")  # PySpark's own default
    assert ensure_python_workers(spark) == sys.executable
    rdd = sc.parallelize([0], 1)
    assert rdd.map(lambda _: __import__("sys").executable).collect() == [sys.executable]
