"""``valueFormat=protobuf``: Protobuf messages as typed columns.

:func:`message_class` compiles the reader schema (``.proto`` text, or the base64
``FileDescriptorProto`` confluent-kafka registers, with its imports) with
:func:`kproto.registry.schemas.protobuf.parse_protobuf`; :func:`proto_arrow_type`
maps the message to Arrow as spark-protobuf's ``SchemaConverters`` maps it to Spark
(with ``upcast.unsigned.ints`` and ``unwrap.primitive.wrapper.types`` on):

* message -> struct (every field nullable; oneof members are fields of their own),
  repeated -> list, map -> map, enum -> string (the value's name);
* int32, sint32, sfixed32 -> int32; uint32, fixed32, int64, sint64, sfixed64 ->
  int64; uint64, fixed64 -> decimal(20, 0); float, double, bool, string, bytes as
  themselves;
* ``google.protobuf.Timestamp`` -> timestamp, ``Duration`` -> day-time interval,
  the wrappers (``Int32Value`` ...) -> their nullable primitive;
* a recursive message is an error (spark-protobuf's default,
  ``recursive.fields.max.depth`` -1).

:func:`proto_value` shapes one parsed message to that type: a field that is not
set is null (spark-protobuf's ``emit.default.values`` false), an empty repeated
field an empty list. Values are parsed with the protobuf runtime, one message
object per record; records written with older schemas parse by field number.
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping
from typing import Any, Final

import pyarrow as pa  # type: ignore[import-untyped]
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

__all__ = [
    "ProtobufShapeError",
    "message_class",
    "proto_arrow_type",
    "proto_message",
    "proto_value",
]

_FD = FieldDescriptor
_SCALARS: Final = {
    _FD.TYPE_INT32: pa.int32(),
    _FD.TYPE_SINT32: pa.int32(),
    _FD.TYPE_SFIXED32: pa.int32(),
    _FD.TYPE_UINT32: pa.int64(),
    _FD.TYPE_FIXED32: pa.int64(),
    _FD.TYPE_INT64: pa.int64(),
    _FD.TYPE_SINT64: pa.int64(),
    _FD.TYPE_SFIXED64: pa.int64(),
    _FD.TYPE_UINT64: pa.decimal128(20, 0),
    _FD.TYPE_FIXED64: pa.decimal128(20, 0),
    _FD.TYPE_FLOAT: pa.float32(),
    _FD.TYPE_DOUBLE: pa.float64(),
    _FD.TYPE_BOOL: pa.bool_(),
    _FD.TYPE_STRING: pa.string(),
    _FD.TYPE_BYTES: pa.binary(),
    _FD.TYPE_ENUM: pa.string(),
}
_WRAPPERS: Final = {
    f"google.protobuf.{name}"
    for name in (
        "DoubleValue",
        "FloatValue",
        "Int64Value",
        "UInt64Value",
        "Int32Value",
        "UInt32Value",
        "BoolValue",
        "StringValue",
        "BytesValue",
    )
}
_TIMESTAMP: Final = "google.protobuf.Timestamp"
_DURATION: Final = "google.protobuf.Duration"


class ProtobufShapeError(ValueError):
    """A Protobuf schema kproto cannot type (a recursive message), named."""


def message_class(
    text: str, message_name: str | None, dependencies: Mapping[str, str] = {}
) -> type[Any]:
    """The message class of ``message_name`` (full name; may be left out when the
    file has one top-level message) in the schema ``text`` whose imports are ``dependencies`` (import
    path -> schema text).

    Raises:
        kproto.registry.schemas.InvalidSchemaError: the schema does not compile.
        ProtobufShapeError: no such message, or no name and not one message.
    """
    from kproto.registry.schemas.protobuf import parse_protobuf

    model = parse_protobuf(text, dependencies)
    pool = model.descriptor_pool()
    names = model.record_names()
    if message_name is None:
        if len(names) != 1:
            raise ProtobufShapeError(
                "the Protobuf schema has "
                + (f"messages {', '.join(names)}" if names else "no message")
                + ": name the one to read with the option valueMessageName"
                " (or keyMessageName)"
            )
        message_name = names[0]
    try:
        descriptor = pool.FindMessageTypeByName(message_name)
    except KeyError:
        raise ProtobufShapeError(
            f"no message {message_name!r} in the schema (it has {', '.join(names)})"
        ) from None
    cls: type[Any] = message_factory.GetMessageClass(descriptor)
    return cls


def _msg(field: FieldDescriptor) -> Descriptor:
    assert field.message_type is not None
    return field.message_type


def _enum(field: FieldDescriptor) -> Any:
    assert field.enum_type is not None
    return field.enum_type


def _field_type(field: FieldDescriptor, seen: tuple[str, ...]) -> pa.DataType:
    if field.type in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP):
        return _message_type(_msg(field), seen)
    return _SCALARS[field.type]


def _message_type(d: Descriptor, seen: tuple[str, ...]) -> pa.DataType:
    name = d.full_name
    if name == _TIMESTAMP:
        return pa.timestamp("us", tz="UTC")
    if name == _DURATION:
        return pa.duration("us")
    if name in _WRAPPERS:
        return _field_type(d.fields_by_name["value"], seen)
    if name in seen:
        raise ProtobufShapeError(
            f"recursive message {name} ({' -> '.join((*seen, name))}): "
            "not supported, as spark-protobuf by default"
        )
    seen = (*seen, name)
    fields = []
    for f in d.fields:
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            entry = f.message_type
            t = pa.map_(
                _field_type(entry.fields_by_name["key"], seen),
                _field_type(entry.fields_by_name["value"], seen),
            )
        elif f.is_repeated:
            t = pa.list_(pa.field("element", _field_type(f, seen)))
        else:
            t = _field_type(f, seen)
        fields.append(pa.field(f.name, t))
    return pa.struct(fields)


def proto_arrow_type(descriptor: Descriptor) -> pa.DataType:
    """The Arrow type of messages of ``descriptor`` (see the module's mapping).

    Raises:
        ProtobufShapeError: a recursive message.
    """
    return _message_type(descriptor, ())


def _scalar(field: FieldDescriptor, value: Any) -> Any:
    if field.type == _FD.TYPE_ENUM:
        named = _enum(field).values_by_number.get(value)
        return str(value) if named is None else named.name
    if field.type in (_FD.TYPE_UINT64, _FD.TYPE_FIXED64):
        return decimal.Decimal(value)
    return value


def _single(field: FieldDescriptor, value: Any) -> Any:
    if field.type not in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP):
        return _scalar(field, value)
    name = _msg(field).full_name
    if name == _TIMESTAMP:
        return value.seconds * 1_000_000 + value.nanos // 1000
    if name == _DURATION:
        return value.seconds * 1_000_000 + int(value.nanos / 1000)
    if name in _WRAPPERS:
        return _scalar(_msg(field).fields_by_name["value"], value.value)
    return proto_value(value)


def proto_value(message: Any) -> dict[str, Any]:
    """``message`` as the Python value of :func:`proto_arrow_type`'s struct
    (timestamps and durations as microseconds)."""
    out: dict[str, Any] = {}
    for f in message.DESCRIPTOR.fields:
        value = getattr(message, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            kf = f.message_type.fields_by_name["key"]
            out[f.name] = [(_scalar(kf, k), _single(vf, value[k])) for k in value]
        elif f.is_repeated:
            out[f.name] = [_single(f, v) for v in value]
        elif f.has_presence and not message.HasField(f.name):
            out[f.name] = None
        elif not f.has_presence and value == f.default_value:
            out[f.name] = None  # proto3 default: not on the wire
        else:
            out[f.name] = _single(f, value)
    return out


def _assign_single(field: FieldDescriptor, value: Any) -> Any:
    """A Python value (Arrow's ``to_pylist``) as what the field's setter takes."""
    if field.type == _FD.TYPE_ENUM:
        if isinstance(value, str):
            named = _enum(field).values_by_name.get(value)
            if named is None:
                raise ProtobufShapeError(
                    f"{field.full_name}: {value!r} is not a {_enum(field).full_name}"
                )
            return named.number
        return int(value)
    if field.type in (_FD.TYPE_UINT64, _FD.TYPE_FIXED64):
        return int(value)
    return value


def _fill(message: Any, value: Mapping[str, Any]) -> None:
    for f in message.DESCRIPTOR.fields:
        v = value.get(f.name)
        if v is None:
            continue
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            kf = f.message_type.fields_by_name["key"]
            vf = f.message_type.fields_by_name["value"]
            target = getattr(message, f.name)
            pairs = v.items() if isinstance(v, Mapping) else v
            for k, item in pairs:
                key = _assign_single(kf, k)
                if vf.message_type is not None:
                    _set_message(target[key], vf, item)
                else:
                    target[key] = _assign_single(vf, item)
        elif f.is_repeated:
            target = getattr(message, f.name)
            for item in v:
                if f.message_type is not None:
                    _set_message(target.add(), f, item)
                else:
                    target.append(_assign_single(f, item))
        elif f.message_type is not None:
            _set_message(getattr(message, f.name), f, v)
        else:
            setattr(message, f.name, _assign_single(f, v))


def _set_message(target: Any, field: FieldDescriptor, value: Any) -> None:
    name = _msg(field).full_name
    if name == _TIMESTAMP:
        target.FromDatetime(value)
    elif name == _DURATION:
        target.FromTimedelta(value)
    elif name in _WRAPPERS:
        target.value = _assign_single(_msg(field).fields_by_name["value"], value)
    else:
        _fill(target, value)


def proto_message(cls: type[Any], value: Mapping[str, Any]) -> Any:
    """A message of ``cls`` from a struct row (the inverse of :func:`proto_value`
    on Arrow's ``to_pylist`` values: datetimes, timedeltas, map pairs).

    Raises:
        ProtobufShapeError: an enum name the enum lacks.
        TypeError, ValueError: a value of the wrong type for its field (protobuf's).
    """
    message = cls()
    _fill(message, value)
    return message
