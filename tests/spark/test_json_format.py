"""JSON Schema -> Arrow types and the shaping of parsed JSON values to them."""

from __future__ import annotations

import pyarrow as pa  # type: ignore[import-untyped]
import pytest

from kproto.spark._json_format import JsonShapeError, json_arrow_type, json_value

ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "price": {"type": "number"},
        "paid": {"type": "boolean"},
        "note": {"type": ["string", "null"]},
        "lines": {"type": "array", "items": {"$ref": "#/definitions/Line"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
        "any": {},
        "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
    },
    "definitions": {
        "Line": {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
        },
        "Node": {
            "type": "object",
            "properties": {"next": {"$ref": "#/definitions/Node"}},
        },
    },
}


def test_types_follow_the_schema() -> None:
    t = json_arrow_type(ORDER)
    line = pa.struct([pa.field("sku", pa.string()), pa.field("qty", pa.int64())])
    assert t == pa.struct(
        [
            pa.field("id", pa.int64()),
            pa.field("price", pa.float64()),
            pa.field("paid", pa.bool_()),
            pa.field("note", pa.string()),
            pa.field("lines", pa.list_(pa.field("element", line))),
            pa.field("attrs", pa.map_(pa.string(), pa.int64())),
            pa.field("any", pa.string()),
            pa.field("either", pa.string()),
        ]
    )
    # a recursive reference ends as JSON text, not a loop
    node = json_arrow_type({**ORDER, "$ref": "#/definitions/Node"})
    depth = 0
    while pa.types.is_struct(node):
        node = node.field(0).type
        depth += 1
    assert node == pa.string() and depth > 3


def test_values_are_shaped_by_field_name() -> None:
    t = json_arrow_type(ORDER)
    value = {
        "id": 7,
        "price": 3,
        "lines": [{"sku": "a", "qty": 2, "extra": 1}],
        "attrs": {"x": 1},
        "any": {"k": [1, 2]},
        "either": 5,
        "unknown": True,
    }
    shaped = json_value(value, t)
    assert shaped == {
        "id": 7,
        "price": 3.0,
        "paid": None,
        "note": None,
        "lines": [{"sku": "a", "qty": 2}],
        "attrs": [("x", 1)],
        "any": '{"k": [1, 2]}',
        "either": "5",
    }
    assert pa.array([shaped], t).to_pylist()[0]["attrs"] == [("x", 1)]


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"id": "7"}, "$.id: str"),
        ({"id": True}, "$.id: bool"),
        ({"lines": [{"qty": 1.5}]}, "$.lines[0].qty: float"),
        ({"attrs": []}, "$.attrs: list"),
        ([], "$: list"),
    ],
)
def test_values_of_another_type_are_named(value: object, path: str) -> None:
    with pytest.raises(
        JsonShapeError, match=path.replace("[", r"\[").replace("$", r"\$")
    ):
        json_value(value, json_arrow_type(ORDER))
