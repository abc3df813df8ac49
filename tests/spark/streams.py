"""The kproto-kafka streaming source as the Spark tests open it."""

from __future__ import annotations

from typing import Any


def read_stream(spark: Any, servers: str, **options: str) -> Any:
    """A streaming DataFrame of the kproto-kafka source on ``servers`` from the
    earliest offsets, with ``options`` (the source's names: ``subscribe``,
    ``subscribePattern``, ``valueFormat``, ``includeHeaders``, ...)."""
    return (
        spark.readStream.format("kproto-kafka")
        .option("kafka.bootstrap.servers", servers)
        .option("startingOffsets", "earliest")
        .options(**options)
        .load()
    )
