"""Avro values straight into Arrow buffers, on one core at millions of records/s.

* :func:`avro_plan` resolves a writer schema against a reader schema (Avro's schema
  resolution) once per pair into an :class:`AvroPlan`.
* :func:`decode_avro` decodes a column of Avro values (bare, or in Confluent's wire
  format with one plan per schema id), as :func:`kproto.records.decode_arrow_columns`
  gives the ``value`` column, into :class:`AvroColumns`: Arrow buffers typed as
  spark-avro's ``SchemaConverters`` types the reader schema, with no per-record
  Python object.
* :func:`kproto.avro.arrow.to_arrow` wraps them with pyarrow (only that module imports
  it).

The C decoder (``src/kproto/_avro.c``) and the Python reference
(:mod:`kproto.avro._decode`) give byte-equal buffers and the same errors; the C one
runs when kproto's extensions do (:mod:`kproto.speedups`). See
``docs/guide/avro-arrow.md``.
"""

from __future__ import annotations

from ._decode import MESSAGES
from ._plan import AvroPlan, Column, avro_plan, reader_columns
from ._schema import AvroSchemaError, Schema, parse_schema
from ._values import AvroColumns, AvroDecodeError, decode_avro, decode_avro_values

__all__ = [
    "MESSAGES",
    "AvroColumns",
    "AvroDecodeError",
    "AvroPlan",
    "AvroSchemaError",
    "Column",
    "Schema",
    "avro_plan",
    "decode_avro",
    "decode_avro_values",
    "parse_schema",
    "reader_columns",
]
