"""The zero-width array bound: which schemas need it, the walk agreeing with fastavro
on every generated schema's values, and a record claiming 2**62 nulls refused at once.
"""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings

from kproto.serde import AvroDeserializer, AvroSerializer, ValueDeserializationError
from kproto.serde.avro_bounds import (
    MAX_ZERO_WIDTH_ITEMS,
    check_counts,
    zero_width_arrays,
)

from .conftest import Registry
from .test_avro import VALUE, schema_and_value


@pytest.mark.parametrize(
    "schema, expected",
    [
        ({"type": "array", "items": "null"}, True),
        ({"type": "array", "items": "long"}, False),
        ({"type": "array", "items": {"type": "fixed", "name": "Z", "size": 0}}, True),
        ({"type": "array", "items": {"type": "fixed", "name": "O", "size": 1}}, False),
        ({"type": "array", "items": ["null"]}, False),  # a union index takes a byte
        ({"type": "map", "values": "null"}, False),  # a map key takes a byte
        (
            {
                "type": "record",
                "name": "Outer",
                "fields": [
                    {
                        "name": "e",
                        "type": {"type": "record", "name": "Empty", "fields": []},
                    },
                    {"name": "a", "type": {"type": "array", "items": "Empty"}},
                ],
            },
            True,
        ),
        (
            {
                "type": "record",
                "name": "Node",
                "fields": [
                    {"name": "next", "type": ["null", "Node"]},
                    {"name": "a", "type": {"type": "array", "items": "int"}},
                ],
            },
            False,
        ),
    ],
)
def test_which_schemas_need_the_bound(schema: Any, expected: bool) -> None:
    assert zero_width_arrays(fastavro.parse_schema(schema)) is expected


@settings(max_examples=150, deadline=None)
@given(schema_and_value())
def test_walk_agrees_with_fastavro(case: tuple[Any, Any]) -> None:
    schema, value = case
    parsed = fastavro.parse_schema(schema)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed, value)
    assert check_counts(parsed, out.getvalue()) == len(out.getvalue())


def test_a_huge_count_of_nulls_is_refused(registry: Registry) -> None:
    schema = json.dumps({"type": "array", "items": "null"})
    ok = AvroSerializer(registry.client, schema)([None] * 1000, VALUE)
    de = AvroDeserializer(registry.client)
    assert de(ok, VALUE) == [None] * 1000
    huge = ok[:5] + b"\xfe\xff\xff\xff\xff\xff\xff\xff\x7f\x00"  # 2**62 - 1 items
    with pytest.raises(
        ValueDeserializationError, match="zero-width items claims"
    ) as info:
        de(huge, VALUE)
    assert info.value.schema_id == 1
    blocks = ok[:5] + (b"\xfe\xff\x3f" * 3) + b"\x00"  # three blocks of 524287
    with pytest.raises(
        ValueDeserializationError, match=f"more than {MAX_ZERO_WIDTH_ITEMS}"
    ):
        de(blocks, VALUE)
