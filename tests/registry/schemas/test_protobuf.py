"""Protobuf: .proto text and base64 descriptors, the canonical text printed from the
descriptor, normalization, imports as references, the message-index path helpers,
confluent-kafka's ProtobufSerializer's registered form, and the compatibility table
from Confluent's Protobuf rules (``io.confluent.kafka.schemaregistry.protobuf.diff``).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.common.protobuf import (
    _create_index_array,
    _schema_to_str,
)
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto.registry.schemas import (
    InvalidSchemaError,
    ParsedSchema,
    SchemaReference,
    check_compatibility,
    compile_proto,
    message_index_path,
    message_name_at,
    parse_schema,
)
from kproto.registry.schemas.protobuf import ProtobufModel

from .compat import error_types, table_test


def proto(text: str, **kwargs: Any) -> ParsedSchema:
    return parse_schema("PROTOBUF", text, **kwargs)


def file_of(parsed: ParsedSchema) -> descriptor_pb2.FileDescriptorProto:
    assert isinstance(parsed.model, ProtobufModel)
    return parsed.model.file


ORDERS = """\
syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";

option java_package = "com.example.shop";
option java_multiple_files = true;

// An order.
message Order {
  string id = 1;
  google.protobuf.Timestamp placed_at = 2;
  repeated Line lines = 3;
  map<string, string> tags = 4;
  Status status = 5;
  optional string note = 6 [json_name = "remark"];
  oneof payment {
    string card = 7;
    int64 voucher = 8;
  }
  reserved 9, 12 to 15;
  reserved "legacy";

  message Line {
    string sku = 1;
    uint32 quantity = 2 [deprecated = true];
  }
}

enum Status {
  STATUS_UNSPECIFIED = 0;
  STATUS_PLACED = 1;
}
"""

ORDERS_CANONICAL = """\
syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";

option java_package = "com.example.shop";
option java_multiple_files = true;

message Order {
  reserved 9;
  reserved 12 to 15;
  reserved "legacy";

  string id = 1;
  .google.protobuf.Timestamp placed_at = 2;
  repeated .shop.v1.Order.Line lines = 3;
  map<string, string> tags = 4;
  .shop.v1.Status status = 5;
  optional string note = 6 [json_name = "remark"];

  oneof payment {
    string card = 7;
    int64 voucher = 8;
  }

  message Line {
    string sku = 1;
    uint32 quantity = 2 [deprecated = true];
  }
}
enum Status {
  STATUS_UNSPECIFIED = 0;
  STATUS_PLACED = 1;
}
"""


def test_canonical_text_is_printed_from_the_descriptor() -> None:
    parsed = proto(ORDERS)
    assert parsed.canonical == ORDERS_CANONICAL
    assert proto(parsed.canonical) == parsed
    assert parsed.record_names() == ("shop.v1.Order",)


def test_proto2_labels_defaults_extensions_and_services() -> None:
    text = """\
syntax = "proto2";
package p;

message M {
  required int32 a = 1 [default = 7];
  optional string b = 2 [default = "x\\"y"];
  repeated int64 c = 3 [packed = true];
  extensions 100 to max;
}

extend M {
  optional int32 ext = 100;
}

service S {
  rpc Get (M) returns (stream M);
}
"""
    parsed = proto(text)
    assert parsed.canonical == """\
syntax = "proto2";
package p;

message M {
  required int32 a = 1 [default = 7];
  optional string b = 2 [default = "x\\"y"];
  repeated int64 c = 3 [packed = true];

  extensions 100 to max;
}

extend .p.M {
  optional int32 ext = 100;
}

service S {
  rpc Get (.p.M) returns (stream .p.M);
}
"""
    assert proto(parsed.canonical) == parsed


def test_base64_descriptor_equals_text() -> None:
    text = proto(ORDERS)
    serialized = text.formatted("serialized")
    assert base64.b64decode(serialized) == file_of(text).SerializeToString()
    descriptor = proto(serialized)
    assert descriptor == text
    assert descriptor.formatted("serialized") == serialized
    assert descriptor.record_names() == text.record_names()


def test_normalize_sorts_imports_options_and_fields_and_is_idempotent() -> None:
    a = proto(
        'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
        'import "google/protobuf/duration.proto";\noption java_package = "x";\n'
        'option go_package = "y";\nmessage M { google.protobuf.Duration d = 2; '
        "google.protobuf.Timestamp t = 1; }\n"
    )
    b = proto(
        'syntax = "proto3";\nimport "google/protobuf/duration.proto";\n'
        'import "google/protobuf/timestamp.proto";\noption go_package = "y";\n'
        'option java_package = "x";\nmessage M { google.protobuf.Timestamp t = 1; '
        "google.protobuf.Duration d = 2; }\n"
    )
    assert a != b
    assert a.normalize() == b.normalize()
    assert a.normalize().normalize() == a.normalize()
    assert proto(a.normalize().canonical).normalize() == a.normalize()


def test_builtin_imports_need_no_reference() -> None:
    parsed = proto(
        'syntax = "proto3";\nimport "google/type/date.proto";\nimport "confluent/meta.proto";\n'
        'message M { google.type.Date d = 1 [(confluent.field_meta).doc = "when"]; }\n'
    )
    assert '[(confluent.field_meta) = {\n    doc: "when"\n  }]' in parsed.canonical
    assert proto(parsed.formatted("serialized")) == parsed


# ----------------------------------------------------------------------------- references

CUSTOMER = 'syntax = "proto3";\npackage crm;\nmessage Customer { string name = 1; }\n'
ACCOUNT = (
    'syntax = "proto3";\npackage crm;\nimport "crm/customer.proto";\n'
    "message Account { Customer owner = 1; }\n"
)
INVOICE = (
    'syntax = "proto3";\npackage billing;\nimport "crm/account.proto";\n'
    "message Invoice { crm.Account account = 1; }\n"
)
REFS = [SchemaReference("crm/account.proto", "account-value", 1)]


def test_imports_are_references_by_path_in_either_form() -> None:
    resolved = {"crm/account.proto": ACCOUNT, "crm/customer.proto": CUSTOMER}
    parsed = proto(INVOICE, references=REFS, resolved=resolved)
    assert parsed.references == tuple(REFS)
    assert 'import "crm/account.proto";' in parsed.canonical
    assert ".crm.Account account = 1;" in parsed.canonical
    as_descriptors = {
        name: proto(text, resolved=resolved).formatted("serialized")
        for name, text in resolved.items()
    }
    assert (
        proto(parsed.formatted("serialized"), references=REFS, resolved=as_descriptors)
        == parsed
    )
    assert proto(INVOICE, references=REFS, resolved=as_descriptors) == parsed


def test_missing_import_is_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match="crm/account.proto"):
        proto(INVOICE)
    with pytest.raises(InvalidSchemaError, match="crm/account.proto"):
        proto(
            proto(
                INVOICE,
                references=REFS,
                resolved={"crm/account.proto": ACCOUNT, "crm/customer.proto": CUSTOMER},
            ).formatted("serialized")
        )


def test_compatibility_follows_imported_messages() -> None:
    resolved = {"crm/account.proto": ACCOUNT, "crm/customer.proto": CUSTOMER}
    old = proto(INVOICE, references=REFS, resolved=resolved)
    changed = dict(
        resolved,
        **{"crm/customer.proto": CUSTOMER.replace("string name", "int32 name")},
    )
    new = proto(INVOICE, references=REFS, resolved=changed)
    errors = check_compatibility(new, [old], "BACKWARD")
    assert error_types(errors) == [
        "FIELD_SCALAR_KIND_CHANGED",
        "FIELD_NAMED_TYPE_CHANGED",
        "FIELD_NAMED_TYPE_CHANGED",
    ]


# ----------------------------------------------------------------------------- confluent-kafka


def _message_class(fds: descriptor_pb2.FileDescriptorSet, name: str) -> Any:
    pool = descriptor_pool.DescriptorPool()
    for file in fds.file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def test_confluent_protobuf_serializer_registers_a_form_we_parse() -> None:
    order = _message_class(compile_proto("shop/orders.proto", ORDERS), "shop.v1.Order")
    client = SchemaRegistryClient.new_client({"url": "mock://kproto-schemas"})
    serializer = ProtobufSerializer(order, client, {})
    serializer(order(id="o-1"), SerializationContext("orders", MessageField.VALUE))
    registered = client.get_latest_version("orders-value").schema
    assert registered.schema_type == "PROTOBUF"
    assert registered.schema_str == _schema_to_str(order.DESCRIPTOR.file)
    parsed = proto(registered.schema_str)
    assert parsed == proto(ORDERS)
    line = order.DESCRIPTOR.nested_types_by_name["Line"]
    # [0, 0] is the map entry Order.TagsEntry, which Confluent's paths count too.
    assert (
        message_index_path(file_of(parsed), "shop.v1.Order.Line")
        == _create_index_array(line)
        == [0, 1]
    )


def test_confluent_serializer_with_a_dependency() -> None:
    fds = compile_proto(
        "billing/invoice.proto",
        INVOICE,
        {"crm/account.proto": ACCOUNT, "crm/customer.proto": CUSTOMER},
    )
    invoice = _message_class(fds, "billing.Invoice")
    client = SchemaRegistryClient.new_client({"url": "mock://kproto-schemas-deps"})
    serializer = ProtobufSerializer(invoice, client, {})
    serializer(invoice(), SerializationContext("invoices", MessageField.VALUE))
    registered = client.get_latest_version("invoices-value").schema
    resolved: dict[str, str] = {}
    todo = list(registered.references)
    while todo:
        ref = todo.pop()
        dep = client.get_version(ref.subject, ref.version).schema
        resolved[ref.name] = dep.schema_str
        todo += dep.references
    refs = [
        SchemaReference(r.name, r.subject, r.version) for r in registered.references
    ]
    parsed = proto(registered.schema_str, references=refs, resolved=resolved)
    assert parsed.record_names() == ("billing.Invoice",)
    assert ".crm.Account account = 1;" in parsed.canonical


# ----------------------------------------------------------------------------- message indexes

NESTED = """\
syntax = "proto3";
package a.b;
message First { message Inner { message Deep {} } message Other {} }
message Second { map<string, int32> m = 1; message X {} }
"""


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("a.b.First", [0]),
        ("a.b.Second", [1]),
        ("a.b.First.Inner", [0, 0]),
        ("a.b.First.Other", [0, 1]),
        ("a.b.First.Inner.Deep", [0, 0, 0]),
        (".a.b.Second.X", [1, 1]),
    ],
)
def test_message_index_paths(name: str, path: list[int]) -> None:
    file = file_of(proto(NESTED))
    assert message_index_path(file, name) == path
    assert message_name_at(file, path) == name.lstrip(".")


def test_message_index_path_errors() -> None:
    file = file_of(proto(NESTED))
    assert message_name_at(file, []) == "a.b.First"
    with pytest.raises(KeyError):
        message_index_path(file, "a.b.Missing")
    with pytest.raises(KeyError):
        message_index_path(file, "other.First")
    with pytest.raises(IndexError):
        message_name_at(file, [2])


# ----------------------------------------------------------------------------- invalid schemas

INVALID = [
    ("message {", "Expected"),
    (
        'syntax = "proto3";\nmessage M { int32 a = 1; int32 b = 1; }',
        "has already been used",
    ),
    ('syntax = "proto3";\nmessage M { Missing m = 1; }', "not defined"),
    (
        'syntax = "proto3";\nimport "../etc/passwd";\nmessage M {}',
        "are not allowed",
    ),
    (
        base64.b64encode(b"\x0a\x03a.p\x12\x01q\x1a\x05x.pro").decode(),
        "neither a reference",
    ),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_invalid_schemas_raise_with_a_clear_message(text: str, message: str) -> None:
    with pytest.raises(InvalidSchemaError, match=message):
        proto(text)


def test_compile_proto_returns_the_file_and_its_imports() -> None:
    fds = compile_proto(
        "x/y.proto",
        'syntax = "proto3";\nimport "google/protobuf/any.proto";\nmessage Y { google.protobuf.Any a = 1; }\n',
    )
    assert [f.name for f in fds.file] == ["google/protobuf/any.proto", "x/y.proto"]
    with pytest.raises(InvalidSchemaError):
        compile_proto("x/y.proto", "message {")


# ----------------------------------------------------------------------------- compatibility


def msg(body: str, package: str = "p", syntax: str = "proto3", extra: str = "") -> str:
    return (
        f'syntax = "{syntax}";\npackage {package};\nmessage M {{\n{body}\n}}\n{extra}'
    )


def p2(body: str, extra: str = "") -> str:
    return msg(body, syntax="proto2", extra=extra)


OTHER = "message Other { string s = 1; }\n"
OTHER2 = "message Other { int32 s = 1; }\n"
ENUM = "enum E { A = 0; B = 1; }\n"

# (old, new, level, expected incompatible difference types)
TABLE = [
    ("identical", msg("string a = 1;"), msg("string a = 1;"), "FULL", []),
    (
        "field-added",
        msg("string a = 1;"),
        msg("string a = 1; int32 b = 2;"),
        "FULL",
        [],
    ),
    (
        "field-removed",
        msg("string a = 1; int32 b = 2;"),
        msg("string a = 1;"),
        "FULL",
        [],
    ),
    ("field-renamed", msg("string a = 1;"), msg("string b = 1;"), "FULL", []),
    ("field-renumbered", msg("string a = 1;"), msg("string a = 2;"), "FULL", []),
    ("int32-to-int64", msg("int32 a = 1;"), msg("int64 a = 1;"), "FULL", []),
    ("int32-to-uint64", msg("int32 a = 1;"), msg("uint64 a = 1;"), "FULL", []),
    ("bool-to-int32", msg("bool a = 1;"), msg("int32 a = 1;"), "FULL", []),
    (
        "enum-to-int32",
        msg("E a = 1;", extra=ENUM),
        msg("int32 a = 1;", extra=ENUM),
        "FULL",
        [],
    ),
    (
        "int32-to-sint32",
        msg("int32 a = 1;"),
        msg("sint32 a = 1;"),
        "BACKWARD",
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    ("sint32-to-sint64", msg("sint32 a = 1;"), msg("sint64 a = 1;"), "FULL", []),
    ("string-to-bytes", msg("string a = 1;"), msg("bytes a = 1;"), "FULL", []),
    (
        "int32-to-string",
        msg("int32 a = 1;"),
        msg("string a = 1;"),
        "BACKWARD",
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    ("fixed32-to-sfixed32", msg("fixed32 a = 1;"), msg("sfixed32 a = 1;"), "FULL", []),
    (
        "fixed32-to-fixed64",
        msg("fixed32 a = 1;"),
        msg("fixed64 a = 1;"),
        "BACKWARD",
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    (
        "float-to-double",
        msg("float a = 1;"),
        msg("double a = 1;"),
        "BACKWARD",
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    (
        "message-to-scalar",
        msg("Other a = 1;", extra=OTHER),
        msg("string a = 1;", extra=OTHER),
        "BACKWARD",
        ["FIELD_KIND_CHANGED"],
    ),
    (
        "message-type-renamed",
        msg("Other a = 1;", extra=OTHER),
        msg("Another a = 1;", extra="message Another { string s = 1; }\n"),
        "BACKWARD",
        ["FIELD_NAMED_TYPE_CHANGED", "MESSAGE_REMOVED"],
    ),
    (
        "referenced-message-changed",
        msg("Other a = 1;", extra=OTHER),
        msg("Other a = 1;", extra=OTHER2),
        "BACKWARD",
        [
            "FIELD_SCALAR_KIND_CHANGED",
            "FIELD_NAMED_TYPE_CHANGED",
        ],
    ),
    (
        "message-removed",
        msg("string a = 1;", extra=OTHER),
        msg("string a = 1;"),
        "BACKWARD",
        ["MESSAGE_REMOVED"],
    ),
    (
        "message-added-forward",
        msg("string a = 1;"),
        msg("string a = 1;", extra=OTHER),
        "FORWARD",
        ["MESSAGE_REMOVED"],
    ),
    (
        "message-added",
        msg("string a = 1;"),
        msg("string a = 1;", extra=OTHER),
        "BACKWARD",
        [],
    ),
    (
        "messages-reordered",
        'syntax = "proto3";\nmessage A {}\nmessage B {}\n',
        'syntax = "proto3";\nmessage B {}\nmessage A {}\n',
        "FULL",
        [],
    ),
    (
        "package-changed",
        msg("string a = 1;", package="p"),
        msg("string a = 1;", package="q"),
        "BACKWARD",
        ["PACKAGE_CHANGED"],
    ),
    (
        "field-moved-into-new-oneof",
        msg("string a = 1; int32 b = 2;"),
        msg("string a = 1; oneof o { int32 b = 2; }"),
        "FULL",
        [],
    ),
    (
        "fields-moved-into-one-oneof",
        msg("string a = 1; int32 b = 2;"),
        msg("oneof o { string a = 1; int32 b = 2; }"),
        "BACKWARD",
        ["MULTIPLE_FIELDS_MOVED_TO_ONEOF"],
    ),
    (
        "field-moved-into-existing-oneof",
        msg("string a = 1; oneof o { int32 b = 2; }"),
        msg("oneof o { string a = 1; int32 b = 2; }"),
        "BACKWARD",
        ["FIELD_MOVED_TO_EXISTING_ONEOF"],
    ),
    (
        "oneof-field-added",
        msg("oneof o { string a = 1; }"),
        msg("oneof o { string a = 1; int32 b = 2; }"),
        "BACKWARD",
        [],
    ),
    (
        "oneof-field-removed",
        msg("oneof o { string a = 1; int32 b = 2; }"),
        msg("oneof o { string a = 1; }"),
        "BACKWARD",
        ["ONEOF_FIELD_REMOVED"],
    ),
    (
        "oneof-field-moved-out",
        msg("oneof o { string a = 1; int32 b = 2; }"),
        msg("int32 b = 2; oneof o { string a = 1; }"),
        "BACKWARD",
        [],
    ),
    (
        "oneof-field-type-changed",
        msg("oneof o { string a = 1; }"),
        msg("oneof o { int32 a = 1; }"),
        "BACKWARD",
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    (
        "oneof-renamed-type-changed",
        msg("oneof o { string a = 1; }"),
        msg("oneof p { int32 a = 1; }"),
        "BACKWARD",
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    (
        "oneof-added",
        msg("string a = 1;"),
        msg("string a = 1; oneof o { int32 b = 2; }"),
        "FULL",
        [],
    ),
    (
        "proto3-optional-added",
        msg("string a = 1;"),
        msg("optional string a = 1;"),
        "FULL",
        [],
    ),
    (
        "enum-value-added",
        msg("E e = 1;", extra=ENUM),
        msg("E e = 1;", extra="enum E { A = 0; B = 1; C = 2; }\n"),
        "FULL",
        [],
    ),
    (
        "enum-value-removed",
        msg("E e = 1;", extra=ENUM),
        msg("E e = 1;", extra="enum E { A = 0; }\n"),
        "FULL",
        [],
    ),
    (
        "enum-value-renamed",
        msg("E e = 1;", extra=ENUM),
        msg("E e = 1;", extra="enum E { A = 0; BEE = 1; }\n"),
        "FULL",
        [],
    ),
    (
        "enum-removed",
        msg("string a = 1;", extra=ENUM),
        msg("string a = 1;"),
        "FULL",
        [],
    ),
    (
        "required-field-added",
        p2("optional string a = 1;"),
        p2("optional string a = 1; required int32 b = 2;"),
        "BACKWARD",
        ["REQUIRED_FIELD_ADDED"],
    ),
    (
        "required-field-removed",
        p2("optional string a = 1; required int32 b = 2;"),
        p2("optional string a = 1;"),
        "BACKWARD",
        ["REQUIRED_FIELD_REMOVED"],
    ),
    (
        "optional-field-added-proto2",
        p2("optional string a = 1;"),
        p2("optional string a = 1; optional int32 b = 2;"),
        "FULL",
        [],
    ),
    (
        "numeric-made-repeated",
        p2("optional int32 a = 1;"),
        p2("repeated int32 a = 1;"),
        "BACKWARD",
        ["FIELD_NUMERIC_LABEL_CHANGED"],
    ),
    # Wire gives a proto3 field without a label no label, so Confluent sees no change.
    (
        "proto3-numeric-made-repeated",
        msg("int32 a = 1;"),
        msg("repeated int32 a = 1;"),
        "FULL",
        [],
    ),
    (
        "proto3-optional-made-repeated",
        msg("optional int32 a = 1;"),
        msg("repeated int32 a = 1;"),
        "BACKWARD",
        ["FIELD_NUMERIC_LABEL_CHANGED"],
    ),
    (
        "optional-made-required",
        p2("optional int64 a = 1;"),
        p2("required int64 a = 1;"),
        "BACKWARD",
        ["FIELD_NUMERIC_LABEL_CHANGED"],
    ),
    (
        "string-made-repeated",
        p2("optional string a = 1;"),
        p2("repeated string a = 1;"),
        "FULL",
        [],
    ),
    (
        "map-value-widened",
        msg("map<string, int32> m = 1;"),
        msg("map<string, int64> m = 1;"),
        "FULL",
        [],
    ),
    (
        "map-value-changed",
        msg("map<string, int32> m = 1;"),
        msg("map<string, string> m = 1;"),
        "BACKWARD",
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    (
        "map-to-message",
        msg("map<string, int32> m = 1;", extra=OTHER),
        msg("Other m = 1;", extra=OTHER),
        "BACKWARD",
        ["FIELD_KIND_CHANGED"],
    ),
    (
        "nested-message-field-changed",
        msg("N n = 1; message N { int32 x = 1; }"),
        msg("N n = 1; message N { string x = 1; }"),
        "BACKWARD",
        [
            "FIELD_SCALAR_KIND_CHANGED",
            "FIELD_NAMED_TYPE_CHANGED",
        ],
    ),
    (
        "nested-message-removed",
        msg("message N { int32 x = 1; }"),
        msg(""),
        "BACKWARD",
        ["MESSAGE_REMOVED"],
    ),
    (
        "recursive-message",
        msg("M next = 1; int32 v = 2;"),
        msg("M next = 1; int32 v = 2; string w = 3;"),
        "FULL",
        [],
    ),
    (
        "forward-type-change",
        msg("int64 a = 1;"),
        msg("double a = 1;"),
        "FORWARD",
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    (
        "none-accepts-anything",
        msg("int64 a = 1;"),
        msg("double a = 1;", package="z"),
        "NONE",
        [],
    ),
]


test_compatibility_table = table_test(TABLE, proto)


def test_messages_are_confluents() -> None:
    errors = check_compatibility(
        proto(msg("string a = 1;")), [proto(msg("int32 a = 1;"))], "BACKWARD"
    )
    assert errors[0] == (
        '{errorType:"FIELD_SCALAR_KIND_CHANGED", description:"The kind of a SCALAR field at '
        "path '#/M/1' in the new schema does not match its kind in the old schema\"}"
    )
    errors = check_compatibility(
        proto(msg("")), [proto(msg("", extra=OTHER))], "BACKWARD"
    )
    assert errors[0] == (
        '{errorType:"MESSAGE_REMOVED", description:"The new schema is missing a MESSAGE type '
        "at path '#/Other' in the old schema\"}"
    )


# ----------------------------------------------------------------------------- hypothesis

_SCALARS = [
    "double",
    "float",
    "int32",
    "int64",
    "uint32",
    "uint64",
    "sint32",
    "sint64",
    "fixed32",
    "fixed64",
    "sfixed32",
    "sfixed64",
    "bool",
    "string",
    "bytes",
]


@st.composite
def proto_files(draw: st.DrawFn) -> str:
    fields = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["", "repeated ", "optional "]),
                st.sampled_from([*_SCALARS, "E", "N", "map<string, E>"]),
            ),
            max_size=6,
        )
    )
    body = []
    for number, (label, type_) in enumerate(fields, start=1):
        if type_.startswith("map"):
            label = ""
        body.append(f"  {label}{type_} f{number} = {number};")
    return (
        'syntax = "proto3";\npackage gen;\n\nmessage M {\n'
        + "\n".join(body)
        + "\n  message N { string s = 1; }\n}\n\nenum E { E0 = 0; E1 = 1; }\n"
    ).replace(" N ", " M.N ", 0)


@settings(max_examples=10, deadline=None)
@given(proto_files())
def test_canonical_text_parses_to_the_same_schema(text: str) -> None:
    parsed = proto(text.replace("  N f", "  M.N f"))
    assert proto(parsed.canonical) == parsed
    assert proto(parsed.formatted("serialized")) == parsed
    assert parsed.normalize().normalize() == parsed.normalize()
    assert (
        check_compatibility(parsed, [proto(parsed.canonical)], "FULL_TRANSITIVE") == []
    )


# ----------------------------------------------------------------------------- protoc's bound


def test_a_compile_past_the_time_bound_fails_and_the_next_one_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kproto.registry.schemas import protobuf

    monkeypatch.setattr(protobuf, "PROTOC_TIMEOUT_S", 0.0)
    with pytest.raises(InvalidSchemaError, match="protoc took longer than"):
        compile_proto(
            "slow.proto", 'syntax = "proto3";\nmessage Slow { int32 a = 1; }\n'
        )
    monkeypatch.undo()
    fds = compile_proto(
        "slow.proto", 'syntax = "proto3";\nmessage Slow { int32 a = 1; }\n'
    )
    assert [m.name for m in fds.file[0].message_type] == ["Slow"]


def test_the_protoc_worker_is_replaced_when_it_dies() -> None:
    from kproto.registry.schemas.protobuf import stop_protoc

    stop_protoc()
    fds = compile_proto("again.proto", 'syntax = "proto3";\nmessage Again {}\n')
    assert fds.file[0].message_type[0].name == "Again"


def test_paths_name_nested_messages_and_oneofs() -> None:
    old = proto(
        msg(
            "N n = 1; message N { int32 x = 1; oneof o { string a = 2; int32 b = 3; } }"
        )
    )
    new = proto(msg("N n = 1; message N { string x = 1; oneof o { string a = 2; } }"))
    errors = check_compatibility(new, [old], "BACKWARD")
    paths = [
        e.split("path '")[1].split("'")[0] for e in errors if e.startswith("{errorType")
    ]
    # The nested message is reached as the field's type (then FIELD_NAMED_TYPE_CHANGED at
    # the field) and as a nested type; its differences are listed once.
    assert paths == ["#/M/N/o/3", "#/M/N/1", "#/M/1"]


def test_deeply_nested_messages_compare_in_linear_time() -> None:
    def nested(depth: int, leaf: str) -> str:
        body = f"{leaf} x = 1;"
        for i in range(depth):
            body = f"message M{i} {{ {body} }} M{i} m{i} = 1;"
        return 'syntax = "proto3";\nmessage Top { ' + body + " }\n"

    old, new = proto(nested(30, "int32")), proto(nested(30, "string"))
    errors = check_compatibility(new, [old], "BACKWARD")
    types = error_types(errors)
    assert types.count("FIELD_SCALAR_KIND_CHANGED") == 1
    assert types.count("FIELD_NAMED_TYPE_CHANGED") == 30


def test_descriptor_pool_builds_message_classes() -> None:
    from google.protobuf import message_factory

    resolved = {"crm/account.proto": ACCOUNT, "crm/customer.proto": CUSTOMER}
    parsed = proto(INVOICE, references=REFS, resolved=resolved)
    assert isinstance(parsed.model, ProtobufModel)
    pool = parsed.model.descriptor_pool()
    invoice = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("billing.Invoice")
    )
    message = invoice()
    message.account.owner.name = "Ada"
    assert invoice.FromString(message.SerializeToString()).account.owner.name == "Ada"
    descriptor = proto(
        parsed.formatted("serialized"), references=REFS, resolved=resolved
    )
    assert isinstance(descriptor.model, ProtobufModel)
    assert descriptor.model.descriptor_pool().FindMessageTypeByName("crm.Customer")


ROUNDTRIPS = {
    "group": 'syntax = "proto2";\nmessage M { optional group G = 1 { optional int32 g = 1; } }',
    "edition": 'edition = "2023";\nmessage M { int32 x = 1; }',
    "nested-extend": (
        'syntax = "proto2";\nmessage M { extensions 100 to 200; }\n'
        "message N { extend M { optional int32 e = 101; } }"
    ),
    "service-options": (
        'syntax = "proto3";\nmessage M {}\nservice S { option deprecated = true; '
        "rpc F (M) returns (stream M) { option deprecated = true; } }"
    ),
    "defaults": (
        'syntax = "proto2";\nenum E { A = 0; B = 1; }\nmessage M { '
        'optional bytes b = 1 [default = "\\001x"]; optional E e = 2 [default = B]; '
        "optional double d = 3 [default = inf]; optional float f = 4 [default = -nan]; "
        'optional string s = 5 [default = "it\'s"]; }'
    ),
    "public-import": (
        'syntax = "proto3";\nimport public "google/protobuf/any.proto";\n'
        "message M { google.protobuf.Any a = 1; }"
    ),
    "enum-alias": (
        'syntax = "proto3";\nenum E { option allow_alias = true; A = 0; B = 0; '
        "C = 1 [deprecated = true]; }"
    ),
    "repeated-custom-option": (
        'syntax = "proto3";\nimport "google/protobuf/descriptor.proto";\n'
        "extend google.protobuf.FieldOptions { repeated string tags = 50000; }\n"
        'message M { int32 x = 1 [(tags) = "a", (tags) = "b", deprecated = true]; }'
    ),
    "weak-import": 'syntax = "proto2";\nimport weak "google/protobuf/any.proto";\nmessage M { }',
    "escaped-option": 'syntax = "proto3";\noption java_package = "é\\n\\t";\nmessage M {}',
}


@pytest.mark.parametrize("text", ROUNDTRIPS.values(), ids=ROUNDTRIPS.keys())
def test_canonical_and_normalized_texts_compile_to_the_same_schema(text: str) -> None:
    parsed = proto(text)
    assert proto(parsed.canonical) == parsed
    assert proto(parsed.formatted("serialized")) == parsed
    normalized = parsed.normalize()
    assert proto(normalized.canonical).normalize() == normalized
