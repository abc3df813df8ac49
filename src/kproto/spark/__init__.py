"""Raw Kafka data in, typed Spark DataFrames out (install with ``kproto[spark]``).

* :func:`spark_schema` - the Spark ``StructType`` of a generated entity class.
* :func:`read_kafka` - live Kafka topics as a DataFrame through the
  ``kproto-kafka`` Python Data Source (:class:`KafkaDataSource`, batch and
  streaming reads and writes over :mod:`kproto.client`; no JVM connector).
* :func:`read_log_segments` - Kafka ``.log`` segment files as a DataFrame, one row
  per record, through the ``kproto-segments`` Python Data Source (bounded memory,
  files split at batch boundaries, corrupt batches reported as rows).
* :func:`decode_column` - a binary column decoded into a typed struct column.
* :func:`decode_internal_topic` - ``__consumer_offsets`` / ``__transaction_state``
  records decoded by their version prefixes.
* :func:`demo_table` - a small per-partition summary for demos.

Nothing else in kproto imports this package; it needs pyspark >= 4.0 and pyarrow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the real imports happen lazily in __getattr__ (see below)
    from kproto.spark._columns import SEGMENT_SCHEMA
    from kproto.spark._decode import (
        INTERNAL_TOPICS,
        decode_column,
        decode_internal_topic,
        merged_schema,
    )
    from kproto.spark._kafka_source import KAFKA_SCHEMA, KafkaDataSource
    from kproto.spark._read import (
        demo_table,
        read_kafka,
        read_log_segments,
        records_only,
        register,
        segment_errors,
    )
    from kproto.spark._schema import UNKNOWN_TAGS_TYPE, WIRE_SPARK_TYPES, spark_schema
    from kproto.spark._segments import SegmentDataSource

# Public name -> defining module. Importing kproto.spark (e.g. for the CLI parser in
# kproto.spark.cli) does not import pyspark; the first use of a name below does.
_EXPORTS = {
    "INTERNAL_TOPICS": "_decode",
    "decode_column": "_decode",
    "decode_internal_topic": "_decode",
    "merged_schema": "_decode",
    "KAFKA_SCHEMA": "_kafka_source",
    "KafkaDataSource": "_kafka_source",
    "demo_table": "_read",
    "read_kafka": "_read",
    "read_log_segments": "_read",
    "records_only": "_read",
    "register": "_read",
    "segment_errors": "_read",
    "UNKNOWN_TAGS_TYPE": "_schema",
    "WIRE_SPARK_TYPES": "_schema",
    "spark_schema": "_schema",
    "SEGMENT_SCHEMA": "_columns",
    "SegmentDataSource": "_segments",
}

__all__ = [
    "INTERNAL_TOPICS",
    "KAFKA_SCHEMA",
    "KafkaDataSource",
    "SEGMENT_SCHEMA",
    "UNKNOWN_TAGS_TYPE",
    "WIRE_SPARK_TYPES",
    "SegmentDataSource",
    "decode_column",
    "decode_internal_topic",
    "demo_table",
    "merged_schema",
    "read_kafka",
    "read_log_segments",
    "records_only",
    "register",
    "segment_errors",
    "spark_schema",
]
assert sorted(__all__) == sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kproto.spark' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kproto.spark.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
