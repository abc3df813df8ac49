"""Protobuf schemas: ``.proto`` text compiled by grpcio-tools' protoc, or the base64 of a
serialized ``FileDescriptorProto`` (what confluent-kafka's ``ProtobufSerializer``
registers); the canonical text printed from the descriptor
(:mod:`kproto.registry.schemas.protobuf_text`); the message-index paths of Confluent's
wire format. Compatibility is :mod:`kproto.registry.schemas.protobuf_compatibility`.

- ``compile_proto`` runs protoc in one long-lived worker process
  (``_protoc_worker.py``), each compile bounded by :data:`PROTOC_TIMEOUT_S` (a compile
  past it fails and the worker is replaced); the well-known types
  (``google/protobuf/*.proto``) are always importable, and ``google/type/*.proto`` and
  Confluent's ``confluent/*.proto`` where their Python modules are installed. Results
  are cached (LRU) by the texts.
- A base64 descriptor is checked by building it into a ``DescriptorPool`` (no protoc).
- The schema's file name: the descriptor's own, else ``schema.proto`` (renamed when a
  reference takes that name); references' files are named by the reference names.
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
)
from kproto.registry.schemas.protobuf_text import print_proto

__all__ = [
    "PROTOC_TIMEOUT_S",
    "compile_proto",
    "stop_protoc",
    "parse_protobuf",
    "print_proto",
    "message_index_path",
    "message_name_at",
    "ProtobufModel",
]

PROTOC_TIMEOUT_S = 10.0
"""The longest one protoc compile may take (seconds)."""

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
    """A compiled Protobuf schema (``ParsedSchema.model`` of a PROTOBUF schema): ``file``
    its ``FileDescriptorProto``, ``files`` every file by import path (``file`` and what
    it imports, transitively)."""

    file: descriptor_pb2.FileDescriptorProto
    files: Mapping[str, descriptor_pb2.FileDescriptorProto]

    def descriptor_pool(self) -> descriptor_pool.DescriptorPool:
        """A new ``DescriptorPool`` holding ``file`` and its imports, dependencies first
        (find messages with ``pool.FindMessageTypeByName(full_name)``)."""
        pool = descriptor_pool.DescriptorPool()
        added: set[str] = set()

        def add(name: str) -> None:
            if name in added:
                return
            added.add(name)
            file = self.files[name]
            for dep in file.dependency:
                add(dep)
            pool.Add(file)

        add(self.file.name)
        return pool

    def text(self, normalize: bool = False) -> str:
        return print_proto(self.file, normalize)

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
    text: str, resolved: Mapping[str, str], *, new: bool = True
) -> ProtobufModel:
    """Parse a Protobuf schema: ``.proto`` text or the base64 of a serialized
    ``FileDescriptorProto``. ``resolved`` maps each import path reachable from it (the
    references' names) to its schema text, in either form. Descriptors are checked by a
    ``DescriptorPool``, text by protoc (``new`` changes nothing: a schema is compiled
    either way). Raises :class:`InvalidSchemaError`."""
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
    return ProtobufModel(main, files)
