"""Protobuf compatibility after Confluent's
``io.confluent.kafka.schemaregistry.protobuf.diff`` (``SchemaDiff``, ``MessageSchemaDiff``,
``FieldSchemaDiff``): the differences from the writer (original) schema to the reader
(update) schema; a change is compatible when Confluent lists its type in
``COMPATIBLE_CHANGES``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import attrs
from google.protobuf import descriptor_pb2

from kproto.registry.schemas._types import ParsedSchema, SchemaDifference
from kproto.registry.schemas.protobuf import ProtobufModel
from kproto.registry.schemas.protobuf_text import SCALAR_TYPES

__all__ = [
    "COMPATIBLE_CHANGES",
    "Difference",
    "protobuf_differences",
    "protobuf_compatibility_errors",
]

FDP = descriptor_pb2.FieldDescriptorProto

COMPATIBLE_CHANGES = frozenset(
    """MESSAGE_ADDED MESSAGE_MOVED ENUM_ADDED ENUM_REMOVED ENUM_CONST_ADDED ENUM_CONST_CHANGED
    ENUM_CONST_REMOVED FIELD_ADDED FIELD_REMOVED FIELD_NAME_CHANGED
    FIELD_STRING_OR_BYTES_LABEL_CHANGED ONEOF_ADDED ONEOF_REMOVED ONEOF_FIELD_ADDED""".split()
)


@attrs.frozen
class Difference(SchemaDifference):
    """One of Confluent's Protobuf ``Difference``s: a type and a path (``#/Msg/2``)."""

    COMPATIBLE_CHANGES: ClassVar[frozenset[str]] = COMPATIBLE_CHANGES

    def description(self, update: str, original: str) -> str:
        p = self.path
        texts = {
            "PACKAGE_CHANGED": f"The package at '{p}' in the {update} schema does not match the package in the {original} schema",
            "MESSAGE_REMOVED": f"The {update} schema is missing a MESSAGE type at path '{p}' in the {original} schema",
            "FIELD_KIND_CHANGED": f"The type of a field at path '{p}' in the {update} schema does not match the {original} schema",
            "FIELD_SCALAR_KIND_CHANGED": f"The kind of a SCALAR field at path '{p}' in the {update} schema does not match its kind in the {original} schema",
            "FIELD_NAMED_TYPE_CHANGED": f"The type of a MESSAGE field at path '{p}' in the {update} schema does not match its type in the {original} schema",
            "FIELD_NUMERIC_LABEL_CHANGED": f"The label for a NUMERIC field at path '{p}' in the {update} schema does not match its label in the {original} schema",
            "REQUIRED_FIELD_ADDED": f"A required field  at path '{p}' in the {update} schema is missing in the {original} schema",
            "REQUIRED_FIELD_REMOVED": f"The {update} schema is missing a required field at path: '{p}' in the {original} schema",
            "ONEOF_FIELD_REMOVED": f"The {update} schema is missing a oneof field at path '{p}' in the {original} schema",
            "MULTIPLE_FIELDS_MOVED_TO_ONEOF": f"Multiple fields in the oneof at path '{p}' in the {update} schema are outside a oneof in the {original} schema",
            "FIELD_MOVED_TO_EXISTING_ONEOF": f"A field in the oneof at path '{p}' in the {update} schema is outside an existing oneof in the {original} schema",
        }
        return texts.get(self.type, "")


@attrs.frozen
class _TypeInfo:
    package: str
    element: Any
    is_enum: bool
    is_map: bool
    proto3: bool = False


def _types(model: ProtobufModel) -> dict[str, _TypeInfo]:
    out: dict[str, _TypeInfo] = {}

    def walk(
        file: Any, scope: str, messages: Sequence[Any], enums: Sequence[Any]
    ) -> None:
        package, proto3 = file.package, file.syntax == "proto3"
        for enum in enums:
            out[f"{scope}.{enum.name}"] = _TypeInfo(package, enum, True, False, proto3)
        for message in messages:
            full = f"{scope}.{message.name}"
            is_map = bool(message.options.map_entry)
            out[full] = _TypeInfo(package, message, False, is_map, proto3)
            walk(file, full, message.nested_type, message.enum_type)

    for file in [*model.files.values(), model.file]:
        scope = "." + file.package if file.package else ""
        walk(file, scope, file.message_type, file.enum_type)
    return out


_SCALAR_KIND = {
    "int32": "GENERAL_NUMBER",
    "int64": "GENERAL_NUMBER",
    "uint32": "GENERAL_NUMBER",
    "uint64": "GENERAL_NUMBER",
    "bool": "GENERAL_NUMBER",
    "sint32": "SIGNED_NUMBER",
    "sint64": "SIGNED_NUMBER",
    "string": "STRING_OR_BYTES",
    "bytes": "STRING_OR_BYTES",
    "fixed32": "FIXED32",
    "sfixed32": "FIXED32",
    "fixed64": "FIXED64",
    "sfixed64": "FIXED64",
    "float": "FLOAT",
    "double": "DOUBLE",
}


class _Context:
    def __init__(
        self, types: tuple[dict[str, _TypeInfo], dict[str, _TypeInfo]]
    ) -> None:
        self.types = types
        self.path: list[str] = []
        self.differences: list[Difference] = []
        self.listed: set[Difference] = set()
        # Messages compared once per (original, update) full-name pair: a message is
        # reached both as a field's type and as a nested type, and nesting would
        # otherwise double the work at every level.
        self.memo: dict[tuple[str, str], list[Difference]] = {}
        self.visiting: set[tuple[str, str]] = set()

    def add(self, type_: str) -> None:
        self.extend([Difference(type_, "#/" + "/".join(self.path))])

    def extend(self, differences: Sequence[Difference]) -> None:
        """Add differences not yet listed (a message reached twice reports once)."""
        for difference in differences:
            if difference not in self.listed:
                self.listed.add(difference)
                self.differences.append(difference)

    def sub(self) -> _Context:
        ctx = _Context(self.types)
        ctx.path = list(self.path)
        ctx.memo = self.memo
        ctx.visiting = self.visiting
        return ctx

    def message_differences(
        self, key: tuple[str, str], path: list[str], original: Any, update: Any
    ) -> list[Difference] | None:
        """The differences between two messages (full names ``key``) at ``path``,
        computed once; None while the pair is already being compared (a cycle)."""
        if key in self.memo:
            return self.memo[key]
        if key in self.visiting:
            return None
        self.visiting.add(key)
        try:
            sub = self.sub()
            sub.path = list(path)
            _compare_message(sub, original, update, key)
            self.memo[key] = sub.differences
            return sub.differences
        finally:
            self.visiting.discard(key)

    @property
    def compatible(self) -> bool:
        return all(d.compatible for d in self.differences)


class _At:
    def __init__(self, ctx: _Context, part: str) -> None:
        self.ctx, self.part = ctx, part

    def __enter__(self) -> None:
        self.ctx.path.append(self.part)

    def __exit__(self, *exc: object) -> None:
        self.ctx.path.pop()


def _in_both(
    ctx: _Context, by_o: Mapping[str, Any], by_u: Mapping[str, Any], kind: str
) -> Iterator[str]:
    """The names of either side (the original's order, then the update's new ones),
    each with ``ctx.path`` at it: ``{kind}_REMOVED`` / ``{kind}_ADDED`` added for a
    name on one side only, the names on both sides yielded to compare."""
    for name in list(by_o) + [n for n in by_u if n not in by_o]:
        with _At(ctx, name):
            if name not in by_u:
                ctx.add(f"{kind}_REMOVED")
            elif name not in by_o:
                ctx.add(f"{kind}_ADDED")
            else:
                yield name


def _field_type(field: Any) -> str:
    return SCALAR_TYPES.get(field.type) or str(field.type_name)


def _kind(ctx: _Context, side: int, type_: str) -> str:
    if type_ in _SCALAR_KIND:
        return "SCALAR"
    info = ctx.types[side].get(type_)
    if info is not None and info.is_enum:
        return "SCALAR"
    if info is not None and info.is_map:
        return "MAP"
    return "MESSAGE"


def _scalar_kind(ctx: _Context, side: int, type_: str) -> str:
    info = ctx.types[side].get(type_)
    if info is not None and info.is_enum:
        return "GENERAL_NUMBER"
    return _SCALAR_KIND.get(type_, "ANY")


def _compare_types(ctx: _Context, original: str, update: str) -> None:
    ko, ku = _kind(ctx, 0, original), _kind(ctx, 1, update)
    if ko != ku:
        ctx.add("FIELD_KIND_CHANGED")
    elif ko == "SCALAR":
        if _scalar_kind(ctx, 0, original) != _scalar_kind(ctx, 1, update):
            ctx.add("FIELD_SCALAR_KIND_CHANGED")
    elif ko == "MAP":
        mo, mu = ctx.types[0][original].element, ctx.types[1][update].element
        for fo, fu in zip(mo.field, mu.field, strict=False):
            _compare_types(ctx, _field_type(fo), _field_type(fu))
    else:
        io, iu = ctx.types[0].get(original), ctx.types[1].get(update)
        if io is None or iu is None:
            if original != update:
                ctx.add("FIELD_NAMED_TYPE_CHANGED")
            return
        local_o = original[len(io.package) + 2 :] if io.package else original[1:]
        local_u = update[len(iu.package) + 2 :] if iu.package else update[1:]
        if local_o != local_u:
            ctx.add("FIELD_NAMED_TYPE_CHANGED")
            return
        found = ctx.message_differences(
            (original, update), local_o.split("."), io.element, iu.element
        )
        if found:
            ctx.extend(found)
            if not all(d.compatible for d in found):
                ctx.add("FIELD_NAMED_TYPE_CHANGED")


def _label(field: Any, in_oneof: bool, proto3: bool) -> str | None:
    """The label Wire's parser gives a field: none for a proto3 field without one and
    for a oneof member."""
    if field.label == FDP.LABEL_REPEATED:
        return "repeated"
    if field.label == FDP.LABEL_REQUIRED:
        return "required"
    if in_oneof or (proto3 and not field.proto3_optional):
        return None
    return "optional"


def _compare_field(
    ctx: _Context, original: Any, update: Any, labels: tuple[str | None, str | None]
) -> None:
    """Confluent's ``FieldSchemaDiff``: name, kind, scalar group, and for scalars of
    one group a changed label (numeric: incompatible; string/bytes: compatible)."""
    if original.name != update.name:
        ctx.add("FIELD_NAME_CHANGED")
    to, tu = _field_type(original), _field_type(update)
    _compare_types(ctx, to, tu)
    label_o, label_u = labels
    if (
        label_o is not None
        and label_u is not None
        and label_o != label_u
        and _kind(ctx, 0, to) == "SCALAR" == _kind(ctx, 1, tu)
        and _scalar_kind(ctx, 0, to) == _scalar_kind(ctx, 1, tu)
    ):
        if _scalar_kind(ctx, 0, to) == "STRING_OR_BYTES":
            ctx.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED")
        else:
            ctx.add("FIELD_NUMERIC_LABEL_CHANGED")


def _real_oneof(message: Any, field: Any) -> str | None:
    if field.HasField("oneof_index") and not field.proto3_optional:
        return str(message.oneof_decl[field.oneof_index].name)
    return None


def _compare_message(
    ctx: _Context, original: Any, update: Any, names: tuple[str, str]
) -> None:
    by_tag_o = {f.number: f for f in original.field if _real_oneof(original, f) is None}
    by_tag_u = {f.number: f for f in update.field if _real_oneof(update, f) is None}
    info_o, info_u = ctx.types[0].get(names[0]), ctx.types[1].get(names[1])
    proto3 = (
        info_o is not None and info_o.proto3,
        info_u is not None and info_u.proto3,
    )

    def labels(fo: Any, fu: Any) -> tuple[str | None, str | None]:
        return (
            _label(fo, _real_oneof(original, fo) is not None, proto3[0]),
            _label(fu, _real_oneof(update, fu) is not None, proto3[1]),
        )

    all_o = {f.number: f for f in original.field}
    all_u = {f.number: f for f in update.field}
    oneof_of_o = {
        f.number: _real_oneof(original, f)
        for f in original.field
        if _real_oneof(original, f)
    }
    oneof_of_u = {
        f.number: _real_oneof(update, f) for f in update.field if _real_oneof(update, f)
    }
    oneofs_o: dict[str, list[Any]] = {}
    for f in original.field:
        if (name := _real_oneof(original, f)) is not None:
            oneofs_o.setdefault(name, []).append(f)
    oneofs_u: dict[str, list[Any]] = {}
    for f in update.field:
        if (name := _real_oneof(update, f)) is not None:
            oneofs_u.setdefault(name, []).append(f)
    for name, members in oneofs_u.items():
        with _At(ctx, name):
            moved = existing = 0
            for f in members:
                if by_tag_o.pop(f.number, None) is not None:
                    moved += 1
                elif f.number in oneof_of_o:
                    existing += 1
            if moved > 1:
                ctx.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF")
            elif moved == 1 and existing > 0:
                ctx.add("FIELD_MOVED_TO_EXISTING_ONEOF")
    for name in list(oneofs_o) + [n for n in oneofs_u if n not in oneofs_o]:
        with _At(ctx, name):
            if name not in oneofs_u:
                ctx.add("ONEOF_REMOVED")
            elif name not in oneofs_o:
                ctx.add("ONEOF_ADDED")
            else:
                tags_o = {f.number: f for f in oneofs_o[name]}
                tags_u = {f.number: f for f in oneofs_u[name]}
                for tag in sorted(set(tags_o) | set(tags_u)):
                    with _At(ctx, str(tag)):
                        if tag not in tags_u:
                            # Moved out of the oneof (still in the message) is no
                            # removal (Confluent's OneOfDiff).
                            if tag not in all_u:
                                ctx.add("ONEOF_FIELD_REMOVED")
                        elif tag not in tags_o:
                            ctx.add("ONEOF_FIELD_ADDED")
                        else:
                            _compare_field(
                                ctx,
                                tags_o[tag],
                                tags_u[tag],
                                labels(tags_o[tag], tags_u[tag]),
                            )
    for tag in sorted(set(by_tag_o) | set(by_tag_u)):
        with _At(ctx, str(tag)):
            fo, fu = by_tag_o.get(tag), by_tag_u.get(tag)
            if fu is None:
                assert fo is not None
                ctx.add(
                    "REQUIRED_FIELD_REMOVED"
                    if fo.label == FDP.LABEL_REQUIRED
                    else "FIELD_REMOVED"
                )
            elif fo is None:
                ctx.add(
                    "REQUIRED_FIELD_ADDED"
                    if fu.label == FDP.LABEL_REQUIRED
                    else "FIELD_ADDED"
                )
            else:
                _compare_field(ctx, fo, fu, labels(fo, fu))
    for tag in sorted(set(all_o) & set(all_u)):
        top_both = tag not in oneof_of_o and tag not in oneof_of_u
        same = tag in oneof_of_o and oneof_of_o.get(tag) == oneof_of_u.get(tag)
        if top_both or same:
            continue
        with _At(ctx, str(tag)):
            _compare_field(ctx, all_o[tag], all_u[tag], labels(all_o[tag], all_u[tag]))
    _compare_types_elements(
        ctx,
        names,
        original.nested_type,
        original.enum_type,
        update.nested_type,
        update.enum_type,
    )


def _compare_types_elements(
    ctx: _Context,
    scopes: tuple[str, str],
    messages_o: Sequence[Any],
    enums_o: Sequence[Any],
    messages_u: Sequence[Any],
    enums_u: Sequence[Any],
) -> None:
    index_o = {
        m.name: i
        for i, m in enumerate(m for m in messages_o if not m.options.map_entry)
    }
    index_u = {
        m.name: i
        for i, m in enumerate(m for m in messages_u if not m.options.map_entry)
    }
    by_o = {m.name: m for m in messages_o if not m.options.map_entry}
    by_u = {m.name: m for m in messages_u if not m.options.map_entry}
    for name in _in_both(ctx, by_o, by_u, "MESSAGE"):
        key = (f"{scopes[0]}.{name}", f"{scopes[1]}.{name}")
        found = ctx.message_differences(key, ctx.path, by_o[name], by_u[name])
        ctx.extend(found or [])
        if index_o[name] != index_u[name]:
            ctx.add("MESSAGE_MOVED")
    enums_by_o = {e.name: e for e in enums_o}
    enums_by_u = {e.name: e for e in enums_u}
    for name in _in_both(ctx, enums_by_o, enums_by_u, "ENUM"):
        values_o = {v.number: v.name for v in enums_by_o[name].value}
        values_u = {v.number: v.name for v in enums_by_u[name].value}
        for number in sorted(set(values_o) | set(values_u)):
            with _At(ctx, str(number)):
                if number not in values_u:
                    ctx.add("ENUM_CONST_REMOVED")
                elif number not in values_o:
                    ctx.add("ENUM_CONST_ADDED")
                elif values_o[number] != values_u[number]:
                    ctx.add("ENUM_CONST_CHANGED")


def protobuf_differences(
    original: ParsedSchema, update: ParsedSchema
) -> list[Difference]:
    """Every difference from ``original`` (the writer) to ``update`` (the reader)."""
    o, u = original.model, update.model
    assert isinstance(o, ProtobufModel) and isinstance(u, ProtobufModel)
    ctx = _Context((_types(o), _types(u)))
    if o.file.package != u.file.package:
        ctx.add("PACKAGE_CHANGED")
    scopes = (
        "." + o.file.package if o.file.package else "",
        "." + u.file.package if u.file.package else "",
    )
    _compare_types_elements(
        ctx,
        scopes,
        o.file.message_type,
        o.file.enum_type,
        u.file.message_type,
        u.file.enum_type,
    )
    return ctx.differences


def protobuf_compatibility_errors(
    reader: ParsedSchema, writer: ParsedSchema, reader_role: str, writer_role: str
) -> list[str]:
    """Confluent's messages for the incompatible differences when ``reader`` reads data
    written with ``writer``; the roles ("new", "old") fill the descriptions."""
    return [
        d.describe(reader_role, writer_role)
        for d in protobuf_differences(writer, reader)
        if not d.compatible
    ]
