"""Kafka record batches: decoding and encoding, pure Python.

Covers the three on-disk/wire formats of Kafka's ``records`` fields:

* magic 2 record batches (KIP-98; ``DefaultRecordBatch.java``), with
  varint-encoded records, headers, producer state and control batches;
* magic 1 messages (KIP-32 timestamps, KIP-31 relative inner offsets) and
  magic 0 messages (``LegacyRecord.java``), including nested compressed
  wrappers.

Codecs: gzip, snappy (raw and xerial-framed), lz4 (frame; the KAFKA-3160
header checksum of magic 0 is accepted and written), zstd. Decompression is
bounded by ``max_decompressed_size``.

Entry points: :func:`decode_batches`, :func:`decode_records`,
:func:`decode_columns` (columnar, for bulk pipelines), :func:`decode_arrow_columns`
(Arrow-ready buffers), :func:`encode_batch`,
:func:`encode_control_batch`, :func:`encode_legacy`. Errors are
:class:`kproto.exceptions.DecodeError` / ``EncodeError``.
"""

from __future__ import annotations

from ._arrow import ArrowColumns, decode_arrow_columns
from ._decode import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    DEFAULT_MAX_RECORDS,
    BatchIterator,
    ColumnarResult,
    decode_batches,
    decode_columns,
    decode_records,
)
from ._encode import RecordInput, encode_batch, encode_control_batch, encode_legacy
from ._types import (
    COLUMN_NAMES,
    Compression,
    ControlRecord,
    ControlRecordType,
    Record,
    RecordBatch,
    TimestampType,
)

__all__ = [
    "COLUMN_NAMES",
    "ArrowColumns",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "DEFAULT_MAX_RECORDS",
    "BatchIterator",
    "ColumnarResult",
    "Compression",
    "ControlRecord",
    "ControlRecordType",
    "Record",
    "RecordBatch",
    "RecordInput",
    "TimestampType",
    "decode_arrow_columns",
    "decode_batches",
    "decode_columns",
    "decode_records",
    "encode_batch",
    "encode_control_batch",
    "encode_legacy",
]
