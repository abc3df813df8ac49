"""Decode a column of Avro values into Arrow buffers: :func:`decode_avro`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from ._decode import MESSAGES, decode_py
from ._native import avro_module, compile_plan
from ._plan import AvroPlan, Column

__all__ = ["AvroColumns", "AvroDecodeError", "decode_avro", "decode_avro_values"]

MODES: Final = ("FAILFAST", "PERMISSIVE")


class AvroDecodeError(ValueError):
    """A value that does not decode (FAILFAST): ``index`` (the record's index in the
    column), ``schema_id`` (None without Confluent's framing), ``position`` (the
    byte offset in the value, framing included, where the bad item starts),
    ``code`` and ``reason`` (what was wrong; :data:`kproto.avro.MESSAGES`)."""

    def __init__(
        self, index: int, schema_id: int | None, code: int, position: int
    ) -> None:
        self.index = index
        self.schema_id = schema_id
        self.code = code
        self.position = position
        self.reason = MESSAGES[code]
        super().__init__(describe(index, schema_id, code, position))


def describe(index: int, schema_id: int | None, code: int, position: int) -> str:
    """``record 3 (schema id 7), byte 12: value ends early``."""
    sid = "" if schema_id is None else f" (schema id {schema_id})"
    return f"record {index}{sid}, byte {position}: {MESSAGES[code]}"


@attrs.frozen
class AvroColumns:
    """Decoded values as Arrow buffers.

    ``column`` is the output tree (the reader schema's Arrow types, see
    :class:`~kproto.avro.Column`); ``buffers[i]`` holds column ``i``'s
    ``(length, null_count, validity, buffer1, buffer2)`` (see
    :func:`kproto.avro._decode.finish`); ``records`` is the row count. ``errors``
    (PERMISSIVE) names each bad record as ``(index, schema id, code, byte
    position)``; its row is null. :func:`kproto.avro.arrow.to_arrow` wraps the
    buffers with pyarrow.
    """

    column: Column
    records: int
    buffers: tuple[tuple[Any, ...], ...]
    errors: tuple[tuple[int, int | None, int, int], ...] = ()

    def error_messages(self) -> dict[int, str]:
        """Record index -> error text (for Spark's ``_value_error`` column)."""
        return {e[0]: describe(*e) for e in self.errors}


def decode_avro(
    plans: AvroPlan | Mapping[int, AvroPlan],
    count: int,
    offsets: Any,
    validity: Any,
    data: Any,
    *,
    mode: Literal["FAILFAST", "PERMISSIVE"] = "FAILFAST",
) -> AvroColumns:
    """Decode the ``count`` Avro values of an Arrow binary column into Arrow buffers.

    The column is what :func:`kproto.records.decode_arrow_columns` gives for
    ``value``: ``offsets`` (``count + 1`` int32, native order), ``validity`` (bit
    ``i`` set when value ``i`` is not null; None when none is) and ``data`` (any
    buffer). A null value is a null row.

    Args:
        plans: one :func:`~kproto.avro.avro_plan` for bare Avro values, or a mapping
            of schema id to plan for values in Confluent's wire format (magic byte
            0, big-endian int32 schema id, then the Avro bytes); every plan of a
            mapping must have the same reader schema's columns.
        mode: ``FAILFAST`` raises on the first bad value; ``PERMISSIVE`` makes its
            row null and lists it in :attr:`AvroColumns.errors` (Spark's
            ``from_avro`` modes).

    Raises:
        AvroDecodeError: FAILFAST and a value that does not decode (truncated,
            a bad varint, branch or enum index, bad UTF-8, a block count past the
            value's end, trailing bytes, bad magic byte, an id without a plan).
        ValueError: a bad mode, an empty mapping, plans of different readers,
            or offsets shorter than ``count + 1``.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be FAILFAST or PERMISSIVE, not {mode!r}")
    if isinstance(plans, Mapping):
        if not plans:
            raise ValueError("no plans")
        first = next(iter(plans.values()))
        if any(p.columns != first.columns for p in plans.values()):
            raise ValueError("the plans decode into different reader schemas")
    else:
        first = plans
    if len(memoryview(offsets).cast("B")) < 4 * (count + 1) or count < 0:
        raise ValueError(f"offsets hold fewer than {count} + 1 int32 values")
    if validity is not None and len(memoryview(validity).cast("B")) < (count + 7) // 8:
        raise ValueError(f"validity holds fewer than {count} bits")
    permissive = mode == "PERMISSIVE"
    module = avro_module()
    programs: Any = None
    if module is not None:
        if isinstance(plans, Mapping):
            programs = {int(k): compile_plan(p) for k, p in plans.items()}
            if None in programs.values():
                programs = None
        else:
            programs = compile_plan(plans)
    if programs is None:  # no C decoder, or a plan it does not take
        buffers, errors = decode_py(plans, count, offsets, validity, data, permissive)
    else:
        assert module is not None
        buffers, errors = module.decode(
            programs, count, offsets, validity, data, permissive
        )
    if errors and not permissive:
        raise AvroDecodeError(*errors[0])
    return AvroColumns(first.column, count, tuple(buffers), tuple(errors))


def decode_avro_values(
    columns: Any,
    plans: AvroPlan | Mapping[int, AvroPlan],
    *,
    field: Literal["key", "value"] = "value",
    mode: Literal["FAILFAST", "PERMISSIVE"] = "FAILFAST",
) -> AvroColumns:
    """:func:`decode_avro` of the ``value`` (or ``key``) column of a
    :class:`kproto.records.ArrowColumns` (what
    :func:`kproto.records.decode_arrow_columns` returns); raises as it does."""
    return decode_avro(
        plans,
        columns.records,
        getattr(columns, f"{field}_offsets"),
        getattr(columns, f"{field}_validity"),
        getattr(columns, f"{field}_data"),
        mode=mode,
    )
