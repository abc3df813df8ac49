"""Protobuf descriptors -> Arrow types (spark-protobuf's mapping) and messages to
and from row values."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa  # type: ignore[import-untyped]
import pytest

from kproto.spark._protobuf_format import (
    ProtobufShapeError,
    message_class,
    proto_arrow_type,
    proto_message,
    proto_value,
)

ORDER = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
enum Status { UNKNOWN = 0; PAID = 1; }
message Line { string sku = 1; int32 qty = 2; }
message Order {
  int64 id = 1;
  Status status = 2;
  repeated Line lines = 3;
  map<string, double> attrs = 4;
  google.protobuf.Timestamp at = 5;
  google.protobuf.Int32Value maybe = 6;
  uint64 big = 7;
  oneof pay { string card = 8; int32 cash = 9; }
  optional string note = 10;
  bytes blob = 11;
  google.protobuf.Duration took = 12;
  uint32 small = 13;
}
"""


def test_types_follow_spark_protobuf() -> None:
    t = proto_arrow_type(message_class(ORDER, "shop.Order").DESCRIPTOR)
    line = pa.struct([pa.field("sku", pa.string()), pa.field("qty", pa.int32())])
    assert t == pa.struct(
        [
            pa.field("id", pa.int64()),
            pa.field("status", pa.string()),
            pa.field("lines", pa.list_(pa.field("element", line))),
            pa.field("attrs", pa.map_(pa.string(), pa.float64())),
            pa.field("at", pa.timestamp("us", tz="UTC")),
            pa.field("maybe", pa.int32()),
            pa.field("big", pa.decimal128(20, 0)),
            pa.field("card", pa.string()),
            pa.field("cash", pa.int32()),
            pa.field("note", pa.string()),
            pa.field("blob", pa.binary()),
            pa.field("took", pa.duration("us")),
            pa.field("small", pa.int64()),
        ]
    )
    # without a name: the one message of the file, else an error naming them
    one = 'syntax = "proto3"; package p; message M { int32 x = 1; }'
    assert message_class(one, None).DESCRIPTOR.full_name == "p.M"
    with pytest.raises(ProtobufShapeError, match="messages shop.Line, shop.Order"):
        message_class(ORDER, None)


def test_row_to_message_to_row() -> None:
    cls = message_class(ORDER, "shop.Order")
    t = proto_arrow_type(cls.DESCRIPTOR)
    row = {
        "id": 5,
        "status": "PAID",
        "lines": [{"sku": "a", "qty": 2}],
        "attrs": [("w", 1.5)],
        "at": datetime.datetime(2026, 1, 1, 0, 0, 1, 5, tzinfo=datetime.UTC),
        "maybe": 0,  # a wrapper holding its default is still set
        "big": decimal.Decimal(2**64 - 1),
        "card": None,
        "cash": 3,
        "note": "",  # optional: present even when empty
        "blob": b"\x00",
        "took": datetime.timedelta(seconds=90, microseconds=7),
        "small": 2**32 - 1,
    }
    message = proto_message(cls, row)
    again = cls.FromString(message.SerializeToString())
    assert again.WhichOneof("pay") == "cash" and again.HasField("maybe")
    got = pa.array([proto_value(again)], t).to_pylist()[0]
    assert got == row
    # proto3 fields at their default are not on the wire: null, as spark-protobuf
    empty = pa.array([proto_value(cls())], t).to_pylist()[0]
    assert empty["id"] is None and empty["status"] is None and empty["lines"] == []
    assert empty["maybe"] is None and empty["note"] is None and empty["attrs"] == []


def test_recursive_messages_and_unknown_names_are_refused() -> None:
    tree = 'syntax = "proto3"; message Node { repeated Node kids = 1; }'
    with pytest.raises(ProtobufShapeError, match="recursive message Node"):
        proto_arrow_type(message_class(tree, "Node").DESCRIPTOR)
    with pytest.raises(ProtobufShapeError, match="no message 'shop.Nope'"):
        message_class(ORDER, "shop.Nope")
    with pytest.raises(ProtobufShapeError, match="is not a shop.Status"):
        proto_message(message_class(ORDER, "shop.Order"), {"status": "LOST"})
