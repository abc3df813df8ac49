"""Which Python executable Spark's Python workers run: set up by the library."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["ensure_python_workers"]


def ensure_python_workers(spark: Any) -> str | None:
    """Make the session's Python workers run a Python that can import kproto.

    PySpark starts its workers with ``SparkContext.pythonExec``, which it reads once
    from ``PYSPARK_PYTHON`` (default ``python3``, often a Python without kproto).
    Unless ``PYSPARK_PYTHON`` was set, this sets it to the ``spark.pyspark.python``
    setting when there is one, else, on a local master (``local[...]``), to
    ``sys.executable``: the driver's own Python, the one that imported kproto. On a
    cluster without either setting nothing changes: set ``spark.pyspark.python``
    to the executors' Python that has kproto installed. Under Spark Connect (no
    SparkContext) the server's settings apply and this does nothing.

    Returns the executable it chose, or ``None`` when it left the session as is.
    """
    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect: no SparkContext here
        return None
    if os.environ.get("PYSPARK_PYTHON"):
        return None
    configured = sc.getConf().get("spark.pyspark.python")
    if configured:
        chosen: str = configured
    elif str(sc.master).startswith("local"):
        chosen = sys.executable
    else:
        return None
    if sc.pythonExec == chosen:
        return None
    sc.pythonExec = chosen
    return chosen
