"""The list-based reference of :func:`kproto.spark._columns.arrow_columns_to_batch`:
one Arrow batch in :data:`~kproto.spark._columns.SEGMENT_ARROW_SCHEMA` from
:func:`kproto.records.decode_columns` lists (one Python object per value). The
tests check the zero-copy builder against it; nothing in ``src`` uses it."""

from __future__ import annotations

from typing import Any, Final

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from kproto.spark._columns import SEGMENT_ARROW_SCHEMA, spark_timestamps

__all__ = ["Runs", "columns_to_batch"]

_TYPES: Final = {f.name: f.type for f in SEGMENT_ARROW_SCHEMA}
# Batch-level decode_columns columns (one value repeated per record) converted
# directly, besides base_offset and compression.
_BATCH_LEVEL: Final = (
    "timestamp_type",
    "partition_leader_epoch",
    "magic",
    "is_transactional",
    "is_control",
    "producer_id",
    "producer_epoch",
    "base_sequence",
)
_HEADERS_ARROW: Final = _TYPES["headers"]
_HEADER_FIELDS: Final = (
    _HEADERS_ARROW.value_type.field(0),
    _HEADERS_ARROW.value_type.field(1),
)
_COMPRESSION_LABELS: Final = ("none", "gzip", "snappy", "lz4", "zstd")


def _headers(headers: list[Any]) -> pa.Array:
    """``array<struct<key, value>>`` from one list of ``(key, value)`` pairs per
    record (a plain loop: most records have none, and it beats numpy here)."""
    offsets = [0]
    keys: list[str] = []
    values: list[bytes | None] = []
    n = 0
    add_offset = offsets.append
    for hs in headers:
        if hs:
            for k, v in hs:
                keys.append(k)
                values.append(v)
            n += len(hs)
        add_offset(n)
    child = pa.StructArray.from_arrays(
        [pa.array(keys, pa.string()), pa.array(values, pa.binary())],
        fields=[_HEADER_FIELDS[0], _HEADER_FIELDS[1]],
    )
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), child, type=_HEADERS_ARROW
    )


def _compression(values: list[Any]) -> pa.Array:
    """Codec labels; accepts labels, :class:`Compression` members or codec ids."""
    if not values or isinstance(values[0], str):
        return pa.array(values, pa.string())
    labels = _COMPRESSION_LABELS
    out: list[str] = []
    for v in values:
        label = getattr(v, "label", None)
        if label is None:
            i = int(v)
            label = labels[i] if 0 <= i < len(labels) else f"unknown({i})"
        out.append(label)
    return pa.array(out, pa.string())


class Runs:
    """Runs of equal ``base_offset``: the decoded batches (two adjacent batches with
    the same base offset make one run; :meth:`column` then checks every value)."""

    def __init__(self, base_offsets: pa.Array) -> None:
        ree = pc.run_end_encode(base_offsets, run_end_type=pa.int32())
        self.ends: list[int] = ree.run_ends.to_pylist()
        self.starts: list[int] = [0, *self.ends[:-1]] if self.ends else []
        # Row -> run index (0 0 0 1 1 ...), for take().
        self.take = pc.run_end_decode(
            pa.RunEndEncodedArray.from_arrays(
                ree.run_ends, pa.array(range(len(self.ends)), pa.int32())
            )
        )

    def firsts(self, values: list[Any]) -> list[Any] | None:
        """The value of each run, or None if some run holds more than one value."""
        firsts = [values[s] for s in self.starts]
        for v, s, e in zip(firsts, self.starts, self.ends, strict=True):
            if values[s:e].count(v) != e - s:
                return None
        return firsts

    def column(self, values: list[Any], t: pa.DataType) -> pa.Array:
        """``pa.array(values, t)``, converting one value per run when runs are
        uniform (batch-level columns repeat one value per record)."""
        firsts = self.firsts(values)
        if firsts is None:
            return pa.array(values, t)
        return pa.array(firsts, t).take(self.take)


def columns_to_batch(
    columns: dict[str, list[Any]], topic: str | None, partition: int | None, path: str
) -> pa.RecordBatch:
    """One Arrow batch in :data:`SEGMENT_ARROW_SCHEMA` from ``decode_columns`` lists.

    ``columns`` maps each of :data:`kproto.records.COLUMN_NAMES` to one list of equal
    length (timestamps in ms, compression as codec id or ``Compression``).

    Batch-level columns (``base_offset`` ... ``base_sequence``, ``timestamp_type``,
    ``compression``) are converted one value per batch and expanded in Arrow; the
    result is the same as converting every element.
    """
    n = len(columns["offset"])
    base_offset = pa.array(columns["base_offset"], pa.int64())
    runs = Runs(base_offset)
    codecs = runs.firsts(columns["compression"])
    arrays: dict[str, pa.Array] = {
        "topic": pa.repeat(pa.scalar(topic, pa.string()), n),
        "partition": pa.repeat(pa.scalar(partition, pa.int32()), n),
        "offset": pa.array(columns["offset"], pa.int64()),
        "timestamp": spark_timestamps(columns["timestamp"]),
        "key": pa.array(columns["key"], pa.binary()),
        "value": pa.array(columns["value"], pa.binary()),
        "headers": _headers(columns["headers"]),
        "base_offset": base_offset,
        "compression": (
            _compression(columns["compression"])
            if codecs is None
            else _compression(codecs).take(runs.take)
        ),
        "file": pa.repeat(pa.scalar(path, pa.string()), n),
        "error": pa.nulls(n, pa.string()),
    }
    for name in _BATCH_LEVEL:
        arrays[name] = runs.column(columns[name], _TYPES[name])
    return pa.RecordBatch.from_arrays(
        [arrays[f.name] for f in SEGMENT_ARROW_SCHEMA], schema=SEGMENT_ARROW_SCHEMA
    )
