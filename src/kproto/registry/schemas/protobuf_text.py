"""``.proto`` text printed from a ``FileDescriptorProto`` in the layout of Confluent's
``ProtobufSchemaUtils.toString`` (the canonical text of ``ProtobufSchema``) and, with
``normalize``, of ``ProtobufSchemaUtils.toNormalizedString``.

Layout: ``syntax``, ``package``; a blank line and the imports (public ones last); a
blank line and the file options; a blank line and every message, then every enum; a
blank line and the ``extend`` blocks; a blank line and the services. Inside a message,
each non-empty section (``reserved``, options, fields, oneofs, ``extensions``, nested
messages then enums) follows a blank line; two-space indents. A field with several
options lists them one per line. Type names are fully qualified with a leading dot, as
the normalized form writes them.

Normalized: imports, options and option-message keys sorted, one ``reserved`` value per
line in order, fields and oneofs by number, enum values by number.

Where a descriptor cannot be printed as Confluent prints it and still compile, the text
stays compilable: map fields print as ``map<K, V>`` (their entry messages are not
printed), and bytes defaults are quoted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf import descriptor_pb2

__all__ = ["print_proto", "SCALAR_TYPES"]

FDP = descriptor_pb2.FieldDescriptorProto

SCALAR_TYPES = {
    FDP.TYPE_DOUBLE: "double",
    FDP.TYPE_FLOAT: "float",
    FDP.TYPE_INT64: "int64",
    FDP.TYPE_UINT64: "uint64",
    FDP.TYPE_INT32: "int32",
    FDP.TYPE_FIXED64: "fixed64",
    FDP.TYPE_FIXED32: "fixed32",
    FDP.TYPE_BOOL: "bool",
    FDP.TYPE_STRING: "string",
    FDP.TYPE_BYTES: "bytes",
    FDP.TYPE_UINT32: "uint32",
    FDP.TYPE_SFIXED32: "sfixed32",
    FDP.TYPE_SFIXED64: "sfixed64",
    FDP.TYPE_SINT32: "sint32",
    FDP.TYPE_SINT64: "sint64",
}
"""Scalar field types by ``FieldDescriptorProto.Type``."""

_MAX_FIELD_NUMBER = 536870911
_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    "'": "\\'",
    '"': '\\"',
}


def _quote(value: str) -> str:
    """A string literal as Confluent's ``escapeChars`` writes it (other control
    characters in octal, so that protoc reads the text back)."""
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _indent(text: str) -> str:
    """Confluent's ``appendIndented``: every line of ``text`` two spaces in."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return "".join(f"  {line}\n" for line in lines)


def _is_repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)
    if repeated is not None:
        return bool(repeated)
    return bool(field.label == field.LABEL_REPEATED)


def _json_name(name: str) -> str:
    """protoc's default ``json_name``: lowerCamelCase of the field name."""
    out, upper = [], False
    for ch in name:
        if ch == "_":
            upper = True
        elif upper:
            out.append(ch.upper())
            upper = False
        else:
            out.append(ch)
    return "".join(out)


class _Printer:
    def __init__(
        self, file: descriptor_pb2.FileDescriptorProto, normalize: bool
    ) -> None:
        self.file = file
        self.normalize = normalize
        self.proto3 = file.syntax == "proto3"
        self.maps: dict[str, Any] = {}
        scope = "." + file.package if file.package else ""
        for message in file.message_type:
            self.collect_maps(message, scope)

    def collect_maps(self, message: Any, scope: str) -> None:
        full = f"{scope}.{message.name}"
        if message.options.map_entry:
            self.maps[full] = message
        for nested in message.nested_type:
            self.collect_maps(nested, full)

    # ------------------------------------------------------------------ options

    def option_value(self, field: Any, value: Any) -> str:
        """A value in Confluent's option layout: strings quoted, message values as
        ``{\\n  key: value,\\n}`` maps, repeated values as ``[...]`` lists."""
        if field.type == field.TYPE_MESSAGE:
            return self.option_map(value)
        if field.type == field.TYPE_ENUM:
            return str(field.enum_type.values_by_number[value].name)
        if field.type == field.TYPE_BOOL:
            return "true" if value else "false"
        if field.type == field.TYPE_STRING:
            return _quote(value)
        if field.type == field.TYPE_BYTES:
            return _quote(value.decode("latin-1"))
        return str(value)

    def option_map(self, message: Any) -> str:
        entries = []
        for field, value in message.ListFields():
            key = f"[{field.full_name}]" if field.is_extension else field.name
            if _is_repeated(field):
                items = [self.option_value(field, v) for v in value]
                rendered = (
                    "[\n"
                    + "".join(
                        _indent(item + ("," if i < len(items) - 1 else ""))
                        for i, item in enumerate(items)
                    )
                    + "]"
                )
            else:
                rendered = self.option_value(field, value)
            entries.append((key, rendered))
        if self.normalize:
            entries.sort(key=lambda e: e[0])
        body = "".join(
            _indent(f"{key}: {rendered}" + ("," if i < len(entries) - 1 else ""))
            for i, (key, rendered) in enumerate(entries)
        )
        return "{\n" + body + "}"

    def options(self, options: Any) -> list[str]:
        """``name = value`` for each option set (custom ones as ``(full.name)``)."""
        out: list[tuple[str, str]] = []
        for field, value in options.ListFields():
            name = f"({field.full_name})" if field.is_extension else field.name
            values = value if _is_repeated(field) else [value]
            out.extend(
                (name, f"{name} = {self.option_value(field, v)}") for v in values
            )
        if self.normalize:
            out.sort(key=lambda o: o[0])
        return [text for _, text in out]

    def option_lines(self, options: Any) -> str:
        return "".join(_indent(f"option {text};") for text in self.options(options))

    @staticmethod
    def bracketed(options: Sequence[str]) -> str:
        """Confluent's ``appendOptions``: ``[a = 1]``, or one per line for several."""
        if len(options) == 1:
            return f"[{options[0]}]"
        return (
            "[\n"
            + "".join(
                _indent(o + ("," if i < len(options) - 1 else ""))
                for i, o in enumerate(options)
            )
            + "]"
        )

    # ------------------------------------------------------------------ the file

    def text(self) -> str:
        f = self.file
        out = ""
        if f.syntax == "editions":
            out += f"edition = {_quote(descriptor_pb2.Edition.Name(f.edition)[8:])};\n"
        else:
            # protoc leaves ``syntax`` empty for proto2; the text says so explicitly.
            out += f'syntax = "{f.syntax or "proto2"}";\n'
        if f.package:
            out += f"package {f.package};\n"
        public, weak = set(f.public_dependency), set(f.weak_dependency)
        imports = [
            (dep, i in weak) for i, dep in enumerate(f.dependency) if i not in public
        ]
        publics = [dep for i, dep in enumerate(f.dependency) if i in public]
        if self.normalize:
            imports, publics = sorted(set(imports)), sorted(set(publics))
        if imports or publics:
            out += "\n"
            out += "".join(
                f"import {'weak ' if is_weak else ''}{_quote(dep)};\n"
                for dep, is_weak in imports
            )
            out += "".join(f"import public {_quote(dep)};\n" for dep in publics)
        file_options = self.options(f.options)
        if file_options:
            out += "\n" + "".join(f"option {o};\n" for o in file_options)
        scope = "." + f.package if f.package else ""
        if f.message_type or f.enum_type:
            out += "\n"
            out += "".join(self.message(m, scope) for m in f.message_type)
            out += "".join(self.enum(e) for e in f.enum_type)
        if f.extension:
            out += "\n" + "".join(self.extends(f.extension))
        if f.service:
            out += "\n" + "".join(self.service(s) for s in f.service)
        return out

    # ------------------------------------------------------------------ messages

    def type_name(self, field: Any) -> str:
        return SCALAR_TYPES.get(field.type) or str(field.type_name)

    def field(self, field: Any, in_oneof: bool) -> str:
        entry = None
        if field.type == FDP.TYPE_MESSAGE and field.label == FDP.LABEL_REPEATED:
            entry = self.maps.get(field.type_name)
        if entry is not None:
            key, value = entry.field[0], entry.field[1]
            label, type_ = "", f"map<{self.type_name(key)}, {self.type_name(value)}>"
        else:
            type_ = self.type_name(field)
            label = ""
            if field.label == FDP.LABEL_REPEATED:
                label = "repeated "
            elif field.label == FDP.LABEL_REQUIRED:
                label = "required "
            elif not in_oneof and self.file.syntax != "editions":
                if field.proto3_optional or not self.proto3:
                    label = "optional "
        options = self.options(field.options)
        if field.HasField("default_value"):
            default = field.default_value
            if field.type == FDP.TYPE_STRING:
                default = _quote(default)
            elif field.type == FDP.TYPE_BYTES:
                # protoc keeps a bytes default C-escaped already.
                default = f'"{default}"'
            options.append(f"default = {default}")
        if field.HasField("json_name") and field.json_name != _json_name(field.name):
            options.append(f"json_name = {_quote(field.json_name)}")
        if self.normalize:
            options.sort(key=lambda o: o.split(" = ", 1)[0])
        suffix = f" {self.bracketed(options)}" if options else ""
        return f"{label}{type_} {field.name} = {field.number}{suffix};\n"

    def reserved(
        self, ranges: Sequence[Any], names: Sequence[str], exclusive: bool
    ) -> str:
        values: list[tuple[float, str, str]] = []
        for r in ranges:
            end = r.end - 1 if exclusive else r.end
            text = str(r.start) if end == r.start else f"{r.start} to {end}"
            values.append((r.start, text, text))
        values += [(float("inf"), name, _quote(name)) for name in names]
        if self.normalize:
            values.sort(key=lambda v: (v[0], v[1]))
        return "".join(_indent(f"reserved {text};") for _, _, text in values)

    def message(self, message: Any, scope: str) -> str:
        full = f"{scope}.{message.name}"
        out = f"message {message.name} {{"
        sections = []
        sections.append(
            self.reserved(message.reserved_range, message.reserved_name, True)
        )
        sections.append(self.option_lines(message.options))
        real = {
            f.oneof_index
            for f in message.field
            if f.HasField("oneof_index") and not f.proto3_optional
        }
        plain = [
            f
            for f in message.field
            if not (f.HasField("oneof_index") and f.oneof_index in real)
        ]
        if self.normalize:
            plain.sort(key=lambda f: f.number)
        sections.append("".join(_indent(self.field(f, False)) for f in plain))
        oneofs = []
        for index, decl in enumerate(message.oneof_decl):
            members = [
                f
                for f in message.field
                if f.HasField("oneof_index") and f.oneof_index == index
            ]
            if index not in real or not members:
                continue
            if self.normalize:
                members.sort(key=lambda f: f.number)
            oneofs.append((members[0].number, self.oneof(decl, members)))
        if self.normalize:
            oneofs.sort(key=lambda o: o[0])
        sections.append("".join(_indent(text) for _, text in oneofs))
        if message.extension_range:
            ranges = []
            for r in message.extension_range:
                end = r.end - 1
                if end >= _MAX_FIELD_NUMBER:
                    ranges.append(f"{r.start} to max")
                else:
                    ranges.append(
                        str(r.start) if end == r.start else f"{r.start} to {end}"
                    )
            sections.append(_indent(f"extensions {', '.join(ranges)};"))
        nested = "".join(
            _indent(self.message(m, full))
            for m in message.nested_type
            if f"{full}.{m.name}" not in self.maps
        )
        nested += "".join(_indent(self.enum(e)) for e in message.enum_type)
        nested += "".join(_indent(text) for text in self.extends(message.extension))
        sections.append(nested)
        for section in sections:
            if section:
                out += "\n" + section
        return out + "}\n"

    def oneof(self, decl: Any, members: Sequence[Any]) -> str:
        out = f"oneof {decl.name} {{"
        options = self.option_lines(decl.options)
        if options:
            out += "\n" + options
        out += "\n" + "".join(_indent(self.field(f, True)) for f in members)
        return out + "}\n"

    def enum(self, enum: Any) -> str:
        out = f"enum {enum.name} {{"
        options = self.option_lines(enum.options)
        values = list(enum.value)
        if self.normalize:
            values.sort(key=lambda v: (v.number, v.name))
        if options or values:
            out += "\n"
        out += options
        for value in values:
            value_options = self.options(value.options)
            suffix = f" {self.bracketed(value_options)}" if value_options else ""
            out += _indent(f"{value.name} = {value.number}{suffix};")
        return out + "}\n"

    def extends(self, fields: Sequence[Any]) -> list[str]:
        groups: dict[str, list[Any]] = {}
        for field in fields:
            groups.setdefault(field.extendee, []).append(field)
        return [
            f"extend {extendee} {{\n"
            + "".join(_indent(self.field(f, False)) for f in members)
            + "}\n"
            for extendee, members in groups.items()
        ]

    def service(self, service: Any) -> str:
        out = f"service {service.name} {{"
        options = self.option_lines(service.options)
        if options:
            out += "\n" + options
        if service.method:
            out += "\n"
            for m in service.method:
                request = ("stream " if m.client_streaming else "") + m.input_type
                response = ("stream " if m.server_streaming else "") + m.output_type
                rpc = f"rpc {m.name} ({request}) returns ({response})"
                rpc_options = self.option_lines(m.options)
                if rpc_options:
                    rpc += " {\n" + rpc_options + "}"
                out += _indent(rpc + ";")
        return out + "}\n"


def print_proto(
    file: descriptor_pb2.FileDescriptorProto, normalize: bool = False
) -> str:
    """``.proto`` text for a file descriptor in Confluent's canonical layout; with
    ``normalize``, Confluent's normalized layout (imports, options, fields, oneofs,
    reserved values and enum values in order)."""
    return _Printer(file, normalize).text()
