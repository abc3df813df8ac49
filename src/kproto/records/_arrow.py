"""Record batches straight into Arrow-ready buffers: :func:`decode_arrow_columns`.

The buffers follow Arrow's columnar format (``arrow/format/Columnar.rst``) so that
``pyarrow.Array.from_buffers`` wraps them without a copy; this module does not import
pyarrow (:mod:`kproto.spark` does the wrapping). Native byte order: int64 and int32
values as the machine stores them (little-endian on every platform Arrow runs on).

Two builders fill the buffers, batch by batch: ``kproto._speedups.ArrowBuilder``
(``src/kproto/_arrow_columns.h``), which walks the records region of a plain magic 2
batch in C and writes each field into growing buffers with no per-record Python
object, and :class:`PyArrowBuilder` here, the reference, which reads the batch with
the Python loop of :mod:`~kproto.records._v2_loop` and packs its lists. Both accept
exactly the same batches and finish into byte-equal buffers
(``tests/records/test_records_arrow.py``). A batch either loop rejects is re-read by
the careful Python reader, so a :class:`~kproto.exceptions.DecodeError` is the one
:func:`~kproto.records.decode_columns` raises for the same input, on both paths.
Control batches, log-append-time batches and legacy (magic 0/1) messages go through
the column lists (:meth:`PyArrowBuilder.add_lists`); they are rare.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import accumulate
from typing import Any, Final

import attrs

from . import _native
from ._decode import DEFAULT_MAX_DECOMPRESSED_SIZE, DEFAULT_MAX_RECORDS, _Scan
from ._header import BatchHead
from ._v2_loop import Header, v2_columns_fast

__all__ = ["ArrowColumns", "PyArrowBuilder", "arrow_builder", "decode_arrow_columns"]

#: A finished buffer: bytes (Python builder) or a bytearray (C builder).
Buffer = bytes | bytearray

_INT32_MAX: Final = 2**31 - 1
#: OverflowError messages of both builders (the C ones are the same strings).
OVF_INT64: Final = "record offset or timestamp outside int64"
OVF_DATA: Final = "more than 2**31 - 1 bytes in one column (Arrow's int32 offsets)"

assert array("i").itemsize == 4 and array("q").itemsize == 8


@attrs.frozen
class ArrowColumns:
    """The records of a run of batches as Arrow buffers (:func:`decode_arrow_columns`).

    Per record (``records`` of them): ``offset`` and ``timestamp`` (ms, the batch's
    ``max_timestamp`` for log-append-time batches, -1 for magic 0) as int64 buffers;
    ``key`` and ``value`` as Arrow binary: int32 ``*_offsets`` (``records + 1`` of
    them, from 0), ``*_validity`` (bit ``i``, least significant first, set when
    record ``i`` has one; ``None`` when none is null) and ``*_data`` (the bytes, one
    after the other). ``headers`` as Arrow ``list<struct<key: string, value:
    binary>>``: ``header_offsets`` (int32, ``records + 1``; never null), then the
    ``header_count`` headers' names (``header_key_offsets``, ``header_key_data``,
    UTF-8, never null) and values (``header_value_offsets``,
    ``header_value_validity``, ``header_value_data``). ``*_nulls`` count the nulls.

    Batch level: ``batches`` holds each decoded batch's :class:`BatchHead` and
    ``batch_ends`` the record count after it (``records`` rows of batch ``i`` are
    ``batch_ends[i - 1]:batch_ends[i]``). ``corrupt``, ``partial_tail_bytes`` and
    ``partial_tail_position`` are as in :class:`~kproto.records.ColumnarResult`.
    """

    records: int
    header_count: int
    key_nulls: int
    value_nulls: int
    header_value_nulls: int
    offset: Buffer
    timestamp: Buffer
    key_offsets: Buffer
    key_validity: Buffer | None
    key_data: Buffer
    value_offsets: Buffer
    value_validity: Buffer | None
    value_data: Buffer
    header_offsets: Buffer
    header_key_offsets: Buffer
    header_key_data: Buffer
    header_value_offsets: Buffer
    header_value_validity: Buffer | None
    header_value_data: Buffer
    batches: tuple[BatchHead, ...] = attrs.field(default=(), kw_only=True)
    batch_ends: tuple[int, ...] = attrs.field(default=(), kw_only=True)
    corrupt: tuple[tuple[int, int, str], ...] = attrs.field(default=(), kw_only=True)
    partial_tail_bytes: int = attrs.field(default=0, kw_only=True)
    partial_tail_position: int | None = attrs.field(default=None, kw_only=True)


def _offsets(items: Sequence[bytes | None]) -> bytes:
    """int32 Arrow offsets of ``items`` (None takes no bytes)."""
    return array(
        "i", accumulate((0 if b is None else len(b) for b in items), initial=0)
    ).tobytes()


def _validity(items: list[bytes | None]) -> bytes | None:
    """Arrow's validity bitmap of ``items`` (LSB first), or None when none is None."""
    if None not in items:
        return None
    # One ASCII digit per item, last item first, read as a base-2 integer.
    digits = bytes(48 if b is None else 49 for b in reversed(items))
    return int(digits, 2).to_bytes((len(items) + 7) // 8, "little")


class PyArrowBuilder:
    """The reference builder: the pure-Python twin of ``kproto._speedups.ArrowBuilder``.

    :meth:`add_v2` and :meth:`add_lists` append one batch's records, or nothing when
    they raise; :meth:`finish` returns the buffers (see :class:`ArrowColumns`, whose
    first 19 fields they are, in order) and starts again empty.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.offset = array("q")
        self.timestamp = array("q")
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.header_counts: list[int] = []
        self.names: list[bytes] = []
        self.header_values: list[bytes | None] = []
        self.sizes = [0, 0, 0, 0]  # key, value, name, header value bytes

    def add_v2(
        self,
        data: bytes,
        pos: int,
        end: int,
        count: int,
        base_offset: int,
        base_ts: int,
        log_append_time: int | None,
    ) -> None:
        """Append the records region ``data[pos:end]`` of a plain magic 2 batch.

        Raises:
            Bad, IndexError, VarintError, UnicodeDecodeError: as
                :func:`~kproto.records._v2_loop.v2_columns_fast`.
            OverflowError: an offset or timestamp leaves int64, or a column's data
                would pass 2**31 - 1 bytes.
        """
        cols = v2_columns_fast(data, pos, end, count, base_offset, base_ts)
        timestamps = cols[1] if log_append_time is None else [log_append_time] * count
        self.add_lists(cols[0], timestamps, cols[2], cols[3], cols[4])

    def add_lists(
        self,
        offsets: list[int],
        timestamps: list[int],
        keys: list[bytes | None],
        values: list[bytes | None],
        headers: list[list[Header]],
    ) -> None:
        """Append decode_columns-shaped lists of one batch.

        Raises:
            OverflowError: as :meth:`add_v2`.
        """
        try:
            off = array("q", offsets)
            ts = array("q", timestamps)
        except OverflowError:
            raise OverflowError(OVF_INT64) from None
        names: list[bytes] = []
        header_values: list[bytes | None] = []
        for hs in headers:
            for name, value in hs:
                names.append(name.encode())
                header_values.append(value)
        sizes = [
            sum(len(b) for b in items if b is not None)
            for items in (keys, values, names, header_values)
        ]
        total = [a + b for a, b in zip(self.sizes, sizes, strict=True)]
        if max(total) > _INT32_MAX or len(self.names) + len(names) > _INT32_MAX:
            raise OverflowError(OVF_DATA)
        self.offset += off
        self.timestamp += ts
        self.keys += keys
        self.values += values
        self.header_counts += [len(hs) for hs in headers]
        self.names += names
        self.header_values += header_values
        self.sizes = total

    def finish(self) -> tuple[Any, ...]:
        """``(records, header_count, key_nulls, value_nulls, header_value_nulls,
        offset, timestamp, key_offsets, key_validity, key_data, value_offsets,
        value_validity, value_data, header_offsets, header_key_offsets,
        header_key_data, header_value_offsets, header_value_validity,
        header_value_data)``."""
        keys, values, names, hvalues = (
            self.keys,
            self.values,
            self.names,
            self.header_values,
        )
        out = (
            len(keys),
            len(names),
            keys.count(None),
            values.count(None),
            hvalues.count(None),
            self.offset.tobytes(),
            self.timestamp.tobytes(),
            _offsets(keys),
            _validity(keys),
            b"".join([b for b in keys if b is not None]),
            _offsets(values),
            _validity(values),
            b"".join([b for b in values if b is not None]),
            array("i", accumulate(self.header_counts, initial=0)).tobytes(),
            _offsets(names),
            b"".join(names),
            _offsets(hvalues),
            _validity(hvalues),
            b"".join([b for b in hvalues if b is not None]),
        )
        self._reset()
        return out


def arrow_builder() -> Any:
    """A new builder: ``kproto._speedups.ArrowBuilder`` when the C extension is in
    use (:mod:`kproto.speedups`), else :class:`PyArrowBuilder`."""
    builder = _native.arrow_builder()
    return PyArrowBuilder() if builder is None else builder


def decode_arrow_columns(
    data: bytes | bytearray | memoryview,
    *,
    check_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_records: int = DEFAULT_MAX_RECORDS,
    skip_corrupt: bool = False,
) -> ArrowColumns:
    """Decode ``data`` into Arrow-ready column buffers (see :class:`ArrowColumns`).

    The records are those of :func:`~kproto.records.decode_columns` for the same
    input, in the same order, with the same checks: record-level columns as buffers,
    batch-level ones as one :class:`BatchHead` per batch. Magic 2 batches are read
    in C when the extension is in use (compressed ones decompressed once, with
    cramjam, then read by the same loop); legacy messages, control and
    log-append-time batches through the column lists.

    Args:
        data, check_crc, max_decompressed_size, max_records, skip_corrupt: as
            :func:`~kproto.records.decode_columns`.

    Raises:
        DecodeError: as :func:`~kproto.records.decode_columns` (the same reason,
            path and offset), unless ``skip_corrupt``; also for a batch whose
            offsets or timestamps leave int64, or that would put more than
            2**31 - 1 bytes in one column (Arrow's int32 offsets), which
            ``decode_columns`` returns as Python ints / lists.
    """
    scan = _Scan(data, check_crc, max_decompressed_size, max_records, skip_corrupt)
    builder = arrow_builder()
    heads: list[BatchHead] = []
    ends: list[int] = []
    n = 0
    for head, count in scan.batches(False, builder):
        n += count
        heads.append(head)
        ends.append(n)
    return ArrowColumns(
        *builder.finish(),
        batches=tuple(heads),
        batch_ends=tuple(ends),
        corrupt=tuple(scan.corrupt),
        partial_tail_bytes=scan.partial_tail_bytes,
        partial_tail_position=scan.partial_tail_position,
    )
