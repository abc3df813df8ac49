"""Protobuf schemas: ``.proto`` text compiled by grpcio-tools' protoc, or the base64 of a
serialized ``FileDescriptorProto`` (what confluent-kafka's ``ProtobufSerializer``
registers); canonical ``.proto`` text printed from the descriptor; the message-index
paths of Confluent's wire format; and compatibility after Confluent's
``io.confluent.kafka.schemaregistry.protobuf.diff``.

- Canonical text: the file printed from its descriptor in the layout of Confluent's
  ``ProtobufSchema.canonicalString()`` (Wire's ``toSchema``: ``syntax``, ``package``,
  imports, options, then each type after a blank line; two-space indents). Type names
  are printed fully qualified with a leading dot, as Confluent prints a schema it built
  from a descriptor.
- Normalized text: the same with imports and options sorted and fields in number order.
- ``compile_proto`` runs protoc in a child process bounded by
  :data:`PROTOC_TIMEOUT_S`; the well-known types (``google/protobuf/*.proto``) are
  always importable. Results are cached (LRU) by the text.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import functools
import importlib
import json
import os
import re
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import grpc_tools  # type: ignore[import-untyped]
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError

from kproto.registry.schemas._types import (
    InvalidSchemaError,
    ParsedSchema,
    SchemaReference,
    SchemaType,
    sorted_references,
)
from kproto.registry.schemas.protobuf_text import SCALAR_TYPES, print_proto

__all__ = [
    "PROTOC_TIMEOUT_S",
    "compile_proto",
    "stop_protoc",
    "parse_protobuf",
    "print_proto",
    "message_index_path",
    "message_name_at",
    "protobuf_compatibility_errors",
    "ProtobufModel",
]

PROTOC_TIMEOUT_S = 10.0
"""The longest one protoc compile may take (seconds)."""

FileDescriptorProto = descriptor_pb2.FileDescriptorProto
FileDescriptorSet = descriptor_pb2.FileDescriptorSet
FDP = descriptor_pb2.FieldDescriptorProto

_WELL_KNOWN = os.path.join(os.path.dirname(grpc_tools.__file__ or ""), "_proto")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+\Z")
_SAFE_PATH = re.compile(r"[A-Za-z0-9_.\-/]+\Z")


def _check_path(name: str) -> None:
    parts = name.split("/")
    if (
        not _SAFE_PATH.match(name)
        or name.startswith("/")
        or ".." in parts
        or "" in parts
    ):
        raise InvalidSchemaError(
            f"Invalid Protobuf schema: import path {name!r} is not a relative file path"
        )


class _ProtocWorker:
    """One long-lived protoc process (``_protoc_worker.py``) serving compile requests in
    turn; a request that runs past :data:`PROTOC_TIMEOUT_S` (or a worker that dies)
    costs the worker, which the next request replaces."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._owner = 0

    def _start(self) -> subprocess.Popen[bytes]:
        process = self._process
        if (
            process is not None
            and process.poll() is None
            and self._owner == os.getpid()
        ):
            return process
        self._process = subprocess.Popen(
            [sys.executable, _WORKER, _WELL_KNOWN],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        self._owner = os.getpid()
        return self._process

    def stop(self) -> None:
        """End the worker process (it is started again when needed)."""
        process, self._process = self._process, None
        if process is not None and self._owner == os.getpid():
            process.kill()
            process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()

    def compile(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        with self._lock:
            process = self._start()
            assert process.stdin is not None and process.stdout is not None
            body = json.dumps(request).encode("utf-8")
            try:
                process.stdin.write(struct.pack(">I", len(body)) + body)
                process.stdin.flush()
                reply = self._read(
                    process.stdout.fileno(), time.monotonic() + timeout_s
                )
            except (OSError, ValueError, _Timeout) as exc:
                self.stop()
                if isinstance(exc, _Timeout):
                    raise InvalidSchemaError(
                        f"Invalid Protobuf schema: protoc took longer than {timeout_s:g} s"
                    ) from None
                raise InvalidSchemaError(
                    "Invalid Protobuf schema: protoc failed"
                ) from None
            result: dict[str, Any] = json.loads(reply)
            return result

    @staticmethod
    def _read(fd: int, deadline: float) -> bytes:
        data = b""
        size = None
        while size is None or len(data) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise _Timeout()
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise OSError("protoc worker ended")
            data += chunk
            if size is None and len(data) >= 4:
                size = 4 + struct.unpack(">I", data[:4])[0]
        return data[4:size]


class _Timeout(Exception):
    pass


_WORKER = os.path.join(os.path.dirname(__file__), "_protoc_worker.py")
_PROTOC = _ProtocWorker()
atexit.register(_PROTOC.stop)


def stop_protoc() -> None:
    """End the protoc worker process that :func:`compile_proto` keeps (a later compile
    starts a new one). Registered with ``atexit``."""
    _PROTOC.stop()


@functools.lru_cache(maxsize=256)
def _compile_cached(
    name: str, text: str, dependencies: tuple[tuple[str, str], ...]
) -> bytes:
    for path, _ in ((name, text), *dependencies):
        _check_path(path)
    files = dict(dependencies)
    files[name] = text
    reply = _PROTOC.compile({"name": name, "files": files}, PROTOC_TIMEOUT_S)
    if not reply.get("ok"):
        raise InvalidSchemaError(
            f"Invalid Protobuf schema: {reply.get('error') or 'protoc failed'}"
        )
    return base64.b64decode(reply["descriptor_set"])


def compile_proto(
    name: str, text: str, dependencies: Mapping[str, str] = {}
) -> descriptor_pb2.FileDescriptorSet:
    """Compile ``.proto`` text to descriptors with grpcio-tools' protoc.

    ``name`` is the file's import path (``"orders.proto"``), ``dependencies`` maps each
    import path it needs (transitively) to its ``.proto`` text; ``google/protobuf/*.proto``
    need not be given. Returns a ``FileDescriptorSet`` holding the file and everything it
    imports, dependencies first. Raises :class:`InvalidSchemaError` with protoc's message
    (or when protoc runs past :data:`PROTOC_TIMEOUT_S`). Cached by the texts.
    """
    blob = _compile_cached(name, text, tuple(sorted(dependencies.items())))
    result = descriptor_pb2.FileDescriptorSet()
    result.ParseFromString(blob)
    return result


# ----------------------------------------------------------------------------- message indexes


def message_index_path(
    file: descriptor_pb2.FileDescriptorProto, full_name: str
) -> list[int]:
    """The message-index path of Confluent's Protobuf wire format for a message:
    ``[i]`` for the file's i-th top-level message, ``[i, j]`` for the j-th message nested
    in it, and so on. ``full_name`` is the message's full name (``"pkg.Outer.Inner"``,
    a leading dot allowed). Raises ``KeyError`` when the file has no such message."""
    name = full_name.lstrip(".")
    prefix = file.package + "." if file.package else ""
    if not name.startswith(prefix):
        raise KeyError(full_name)
    parts = name[len(prefix) :].split(".")
    path: list[int] = []
    messages: Sequence[Any] = file.message_type
    for part in parts:
        for index, message in enumerate(messages):
            if message.name == part:
                path.append(index)
                messages = message.nested_type
                break
        else:
            raise KeyError(full_name)
    return path


def message_name_at(
    file: descriptor_pb2.FileDescriptorProto, path: Sequence[int]
) -> str:
    """The full name (no leading dot) of the message at a message-index path; an empty
    path means ``[0]``. Raises ``IndexError`` when the path leads nowhere."""
    indexes = list(path) or [0]
    names = [file.package] if file.package else []
    messages: Sequence[Any] = file.message_type
    for index in indexes:
        if index < 0 or index >= len(messages):
            raise IndexError(f"message index path {list(path)} is not in {file.name}")
        names.append(messages[index].name)
        messages = messages[index].nested_type
    return ".".join(names)


# ----------------------------------------------------------------------------- parsing


def _decode_descriptor(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    stripped = text.strip()
    if not stripped or not _BASE64.match(stripped):
        return None
    try:
        raw = base64.b64decode("".join(stripped.split()), validate=True)
    except (binascii.Error, ValueError):
        return None
    file = descriptor_pb2.FileDescriptorProto()
    try:
        file.ParseFromString(raw)
    except (DecodeError, RuntimeError, ValueError):
        return None
    if not file.name and not file.message_type and not file.enum_type:
        return None
    return file


_BUILTIN_MODULES = (
    *(
        f"google.protobuf.{m}_pb2"
        for m in (
            "any api descriptor duration empty field_mask source_context struct timestamp "
            "type wrappers"
        ).split()
    ),
    *(
        f"google.type.{m}_pb2"
        for m in (
            "calendar_period color date datetime dayofweek decimal expr fraction interval "
            "latlng localized_text money month phone_number postal_address quaternion timeofday"
        ).split()
    ),
    "confluent_kafka.schema_registry.confluent.meta_pb2",
    "confluent_kafka.schema_registry.confluent.type.decimal_pb2",
    "confluent_kafka.schema_registry.confluent.types.decimal_pb2",
)


@functools.cache
def builtin_files() -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """The files a schema may import without a reference, as Confluent's registry and
    serializers treat them: ``google/protobuf/*.proto`` (the well-known types), and where
    their Python modules are installed ``google/type/*.proto`` (googleapis-common-protos)
    and ``confluent/meta.proto``, ``confluent/type/decimal.proto`` (confluent-kafka)."""
    out: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for module_name in _BUILTIN_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        file = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(file)
        out[file.name] = file
    return out


_IMPORT = re.compile(r'\bimport\s+(?:public\s+|weak\s+)?"([^"]+)"')


def _builtin_sources(text: str, given: Mapping[str, str]) -> dict[str, str]:
    """``.proto`` text of the builtin files (outside ``google/protobuf``, which protoc
    finds itself) that ``text`` and ``given`` import, transitively."""
    builtins = builtin_files()
    needed: dict[str, str] = {}
    todo = [m for source in (text, *given.values()) for m in _IMPORT.findall(source)]
    while todo:
        name = todo.pop()
        if name in needed or name in given or name.startswith("google/protobuf/"):
            continue
        file = builtins.get(name)
        if file is None:
            continue
        needed[name] = print_proto(file)
        todo.extend(file.dependency)
    return needed


def _main_name(
    file: descriptor_pb2.FileDescriptorProto | None, taken: Mapping[str, Any]
) -> str:
    if file is not None and file.name and file.name not in taken:
        try:
            _check_path(file.name)
            return str(file.name)
        except InvalidSchemaError:
            pass
    name = "schema.proto"
    counter = 0
    while name in taken:
        counter += 1
        name = f"schema_{counter}.proto"
    return name


def _from_descriptors(
    main: descriptor_pb2.FileDescriptorProto,
    given: Mapping[str, descriptor_pb2.FileDescriptorProto],
) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """Check a file descriptor and its dependencies by building them into a fresh
    ``DescriptorPool``; returns every file by name (the main one under ``main.name``).
    """
    builtins = builtin_files()
    files = {name: _renamed(file, name) for name, file in given.items()}
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(file: descriptor_pb2.FileDescriptorProto, chain: tuple[str, ...]) -> None:
        if file.name in added:
            return
        if file.name in chain:
            raise InvalidSchemaError(
                f"Invalid Protobuf schema: import cycle through {file.name!r}"
            )
        for dep in file.dependency:
            found = files.get(dep) or builtins.get(dep)
            if found is None:
                raise InvalidSchemaError(
                    f"Invalid Protobuf schema: {file.name or 'the schema'} imports {dep!r}, "
                    "which is neither a reference nor a well-known type"
                )
            files.setdefault(dep, found)
            add(found, (*chain, file.name))
        try:
            pool.Add(file)
        except (TypeError, ValueError, KeyError) as exc:
            raise InvalidSchemaError(f"Invalid Protobuf schema: {exc}") from None
        added.add(file.name)

    add(main, ())
    files[main.name] = main
    return files


def _renamed(
    file: descriptor_pb2.FileDescriptorProto, name: str
) -> descriptor_pb2.FileDescriptorProto:
    copy = descriptor_pb2.FileDescriptorProto()
    copy.CopyFrom(file)
    copy.name = name
    return copy


@attrs.frozen(eq=False)
class ProtobufModel:
    """A compiled Protobuf schema: its file descriptor and those of its imports."""

    file: descriptor_pb2.FileDescriptorProto
    files: Mapping[str, descriptor_pb2.FileDescriptorProto]
    references: tuple[SchemaReference, ...]

    def normalized(self) -> ParsedSchema:
        return ParsedSchema(
            SchemaType.PROTOBUF,
            print_proto(self.file, True),
            sorted_references(self.references),
            self,
        )

    def record_names(self) -> tuple[str, ...]:
        prefix = self.file.package + "." if self.file.package else ""
        return tuple(prefix + m.name for m in self.file.message_type)

    def formatted(self, fmt: str) -> str | None:
        if fmt == "serialized":
            return base64.standard_b64encode(self.file.SerializeToString()).decode(
                "ascii"
            )
        return None


def parse_protobuf(
    text: str,
    references: Sequence[SchemaReference] = (),
    resolved: Mapping[str, str] = {},
) -> ParsedSchema:
    """Parse a Protobuf schema: ``.proto`` text or the base64 of a serialized
    ``FileDescriptorProto``. ``resolved`` maps each import path reachable from it (the
    references' names) to its schema text, in either form. Descriptors are checked by a
    ``DescriptorPool``, text by protoc. Raises :class:`InvalidSchemaError`."""
    descriptors = {name: _decode_descriptor(dep) for name, dep in resolved.items()}
    descriptor = _decode_descriptor(text)
    if descriptor is not None and all(d is not None for d in descriptors.values()):
        main = _renamed(descriptor, _main_name(descriptor, resolved))
        given = {name: d for name, d in descriptors.items() if d is not None}
        files = _from_descriptors(main, given)
    else:
        dependencies: dict[str, str] = {}
        for dep_name, dep_text in resolved.items():
            dep_descriptor = descriptors[dep_name]
            dependencies[dep_name] = (
                dep_text if dep_descriptor is None else print_proto(dep_descriptor)
            )
        source = text if descriptor is None else print_proto(descriptor)
        name = _main_name(descriptor, dependencies)
        dependencies.update(_builtin_sources(source, dependencies))
        compiled = compile_proto(name, source, dependencies)
        files = {f.name: f for f in compiled.file}
        main = files[name]
    model = ProtobufModel(main, files, tuple(references))
    return ParsedSchema(
        SchemaType.PROTOBUF, print_proto(main), tuple(references), model
    )


# ----------------------------------------------------------------------------- compatibility

COMPATIBLE_CHANGES = frozenset(
    """MESSAGE_ADDED MESSAGE_MOVED ENUM_ADDED ENUM_REMOVED ENUM_CONST_ADDED ENUM_CONST_CHANGED
    ENUM_CONST_REMOVED FIELD_ADDED FIELD_REMOVED FIELD_NAME_CHANGED
    FIELD_STRING_OR_BYTES_LABEL_CHANGED ONEOF_ADDED ONEOF_REMOVED ONEOF_FIELD_ADDED""".split()
)


@attrs.frozen
class Difference:
    """One of Confluent's Protobuf ``Difference``s: a type and a path (``#/Msg/2``)."""

    type: str
    path: str

    @property
    def compatible(self) -> bool:
        return self.type in COMPATIBLE_CHANGES

    def describe(self, update: str, original: str) -> str:
        """Confluent's ``{errorType:"...", description:"..."}``; ``update``/``original``
        name the roles ("new"/"old")."""
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
        return f'{{errorType:"{self.type}", description:"{texts.get(self.type, "")}"}}'


@attrs.frozen
class _TypeInfo:
    package: str
    element: Any
    is_enum: bool
    is_map: bool


def _types(model: ProtobufModel) -> dict[str, _TypeInfo]:
    out: dict[str, _TypeInfo] = {}

    def walk(
        package: str, scope: str, messages: Sequence[Any], enums: Sequence[Any]
    ) -> None:
        for enum in enums:
            out[f"{scope}.{enum.name}"] = _TypeInfo(package, enum, True, False)
        for message in messages:
            full = f"{scope}.{message.name}"
            out[full] = _TypeInfo(
                package, message, False, bool(message.options.map_entry)
            )
            walk(package, full, message.nested_type, message.enum_type)

    for file in [*model.files.values(), model.file]:
        scope = "." + file.package if file.package else ""
        walk(file.package, scope, file.message_type, file.enum_type)
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
        self.visiting: set[tuple[str, str]] = set()

    def add(self, type_: str) -> None:
        self.differences.append(Difference(type_, "#/" + "/".join(self.path)))

    def sub(self) -> _Context:
        ctx = _Context(self.types)
        ctx.path = list(self.path)
        ctx.visiting = self.visiting
        return ctx

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
        key = (original, update)
        if key in ctx.visiting:
            return
        ctx.visiting.add(key)
        try:
            sub = ctx.sub()
            sub.path = [local_o]
            _compare_message(sub, io.element, iu.element)
            ctx.differences += sub.differences
            if not sub.compatible:
                ctx.add("FIELD_NAMED_TYPE_CHANGED")
        finally:
            ctx.visiting.discard(key)


def _compare_field(ctx: _Context, original: Any, update: Any) -> None:
    if original.name != update.name:
        ctx.add("FIELD_NAME_CHANGED")
    to, tu = _field_type(original), _field_type(update)
    _compare_types(ctx, to, tu)
    repeated_o = original.label == FDP.LABEL_REPEATED
    repeated_u = update.label == FDP.LABEL_REPEATED
    if repeated_o != repeated_u and _kind(ctx, 0, to) == "SCALAR" == _kind(ctx, 1, tu):
        if _scalar_kind(ctx, 0, to) == "STRING_OR_BYTES":
            ctx.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED")
        else:
            ctx.add("FIELD_NUMERIC_LABEL_CHANGED")


def _real_oneof(message: Any, field: Any) -> str | None:
    if field.HasField("oneof_index") and not field.proto3_optional:
        return str(message.oneof_decl[field.oneof_index].name)
    return None


def _compare_message(ctx: _Context, original: Any, update: Any) -> None:
    by_tag_o = {f.number: f for f in original.field if _real_oneof(original, f) is None}
    by_tag_u = {f.number: f for f in update.field if _real_oneof(update, f) is None}
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
                            ctx.add("ONEOF_FIELD_REMOVED")
                        elif tag not in tags_o:
                            ctx.add("ONEOF_FIELD_ADDED")
                        else:
                            _compare_field(ctx, tags_o[tag], tags_u[tag])
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
                _compare_field(ctx, fo, fu)
    for tag in sorted(set(all_o) & set(all_u)):
        top_both = tag not in oneof_of_o and tag not in oneof_of_u
        same = tag in oneof_of_o and oneof_of_o.get(tag) == oneof_of_u.get(tag)
        if top_both or same:
            continue
        with _At(ctx, str(tag)):
            _compare_field(ctx, all_o[tag], all_u[tag])
    _compare_types_elements(
        ctx,
        original.nested_type,
        original.enum_type,
        update.nested_type,
        update.enum_type,
    )


def _compare_types_elements(
    ctx: _Context,
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
    base = list(ctx.path[:1]) if ctx.path else []
    for name in list(by_o) + [n for n in by_u if n not in by_o]:
        saved = ctx.path
        ctx.path = [".".join([*base, name])] if base else [name]
        try:
            if name not in by_u:
                ctx.add("MESSAGE_REMOVED")
            elif name not in by_o:
                ctx.add("MESSAGE_ADDED")
            else:
                _compare_message(ctx, by_o[name], by_u[name])
                if index_o[name] != index_u[name]:
                    ctx.add("MESSAGE_MOVED")
        finally:
            ctx.path = saved
    enums_by_o = {e.name: e for e in enums_o}
    enums_by_u = {e.name: e for e in enums_u}
    for name in list(enums_by_o) + [n for n in enums_by_u if n not in enums_by_o]:
        saved = ctx.path
        ctx.path = [".".join([*base, name])] if base else [name]
        try:
            if name not in enums_by_u:
                ctx.add("ENUM_REMOVED")
            elif name not in enums_by_o:
                ctx.add("ENUM_ADDED")
            else:
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
        finally:
            ctx.path = saved


def protobuf_differences(
    original: ParsedSchema, update: ParsedSchema
) -> list[Difference]:
    """Every difference from ``original`` (the writer) to ``update`` (the reader)."""
    o, u = original.model, update.model
    assert isinstance(o, ProtobufModel) and isinstance(u, ProtobufModel)
    ctx = _Context((_types(o), _types(u)))
    if o.file.package != u.file.package:
        ctx.add("PACKAGE_CHANGED")
    _compare_types_elements(
        ctx,
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
