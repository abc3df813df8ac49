"""The plainly correct reader and writer: walk the :class:`~kproto.meta.Wire` metadata
field by field.

It is the reference the compiled code (:mod:`kproto.serial.compile`) is tested against,
the path for streams that cannot give a zero-copy view (sockets, pipes), and the
diagnoser: when compiled code fails, the same bytes or entity are run through here to
name the exact field path and byte offset in the error.
"""

from __future__ import annotations

import math
import struct
import uuid
from typing import IO, Any, Protocol

from kproto.exceptions import DecodeError, EncodeError
from kproto.meta import Wire, entity_info, wire_fields
from kproto.serial.primitives import (
    FIXED_FORMATS,
    FIXED_SIZES,
    INT_RANGES,
    write_uvarint,
)

__all__ = ["Source", "BufferSource", "StreamSource", "read_entity", "write_entity"]

#: The first read from a stream for one field, and the cap on any one read. Later
#: reads ask for at most what has arrived so far, so a claimed length is trusted only
#: as far as bytes actually arrive: a lying length costs about the input, never the
#: claimed size.
_FIRST_READ = 4096
_MAX_READ = 1 << 20

#: Counts above this of elements that may encode as zero bytes are refused on streams
#: of unknown length (nothing else bounds them).
_MAX_EMPTY_ELEMENTS = 1 << 20


class Source(Protocol):
    pos: int

    def take(self, n: int, path: str) -> bytes: ...

    def remaining(self) -> int | None: ...


class BufferSource:
    """Reads from an in-memory buffer between ``pos`` and ``end``."""

    def __init__(
        self, buf: bytes | memoryview, pos: int = 0, end: int | None = None
    ) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    def take(self, n: int, path: str) -> bytes:
        if n > self.end - self.pos:
            raise DecodeError(
                f"needs {n} bytes, only {self.end - self.pos} left",
                path=path,
                offset=self.pos,
            )
        data = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return data

    def remaining(self) -> int | None:
        return self.end - self.pos


class StreamSource:
    """Reads exactly what each primitive needs from a stream (no read-ahead).

    ``left``: the bytes the stream holds from ``base`` on, when known (a seekable
    stream); claimed lengths are then checked against it before anything is read.
    Otherwise (a socket, a pipe) a field is read in chunks that start at 4 KiB and
    at most double what has arrived, so a length the input does not back costs
    about the bytes that did arrive.
    """

    def __init__(
        self, stream: IO[bytes], base: int = 0, left: int | None = None
    ) -> None:
        self.stream = stream
        self.pos = base
        self.end = None if left is None else base + left

    def take(self, n: int, path: str) -> bytes:
        if self.end is not None and n > self.end - self.pos:
            raise DecodeError(
                f"needs {n} bytes, only {self.end - self.pos} left",
                path=path,
                offset=self.pos,
            )
        parts = []
        got = 0
        step = _FIRST_READ
        while got < n:
            chunk = self.stream.read(min(n - got, step))
            if not chunk:
                raise DecodeError(
                    f"needs {n} bytes, the stream ended after {got}",
                    path=path,
                    offset=self.pos,
                )
            parts.append(chunk)
            got += len(chunk)
            step = min(max(step, got), _MAX_READ)
        self.pos += n
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def remaining(self) -> int | None:
        return None if self.end is None else self.end - self.pos


def _uvarint(src: Source, path: str, max_bytes: int = 5) -> int:
    start = src.pos
    result = shift = 0
    for _ in range(max_bytes):
        b = src.take(1, path)[0]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if max_bytes == 5 and result > 0xFFFFFFFF:
                raise DecodeError(
                    "unsigned varint larger than 32 bits", path=path, offset=start
                )
            return result
        shift += 7
    raise DecodeError(
        f"unsigned varint longer than {max_bytes} bytes", path=path, offset=start
    )


def _fixed(src: Source, t: str, path: str) -> Any:
    (value,) = struct.unpack(">" + FIXED_FORMATS[t], src.take(FIXED_SIZES[t], path))
    if t == "uuid":
        return uuid.UUID(bytes=value)
    return value


def _length(src: Source, w: Wire, path: str, classic: str) -> int | None:
    """Read a length (or count): ``None`` for null; checks sign and bytes left."""
    start = src.pos
    if w.compact:
        n = _uvarint(src, path) - 1
    else:
        n = _fixed(src, classic, path)
        if n < -1:
            raise DecodeError(f"negative length {n}", path=path, offset=start)
    if n == -1:
        if not w.nullable:
            raise DecodeError("null in a non-nullable field", path=path, offset=start)
        return None
    _check_left(src, "length", n, path, start)
    return n


def _check_left(src: Source, what: str, n: int, path: str, offset: int) -> None:
    """Raise DecodeError if ``n`` (a length, or a count of items of at least one
    byte each) claims more than the bytes left in ``src`` (when it knows them)."""
    left = src.remaining()
    if left is not None and n > left:
        raise DecodeError(
            f"{what} {n} exceeds the {left} bytes left", path=path, offset=offset
        )


def _read_primitive(src: Source, w: Wire, t: str, path: str) -> Any:
    if t in FIXED_FORMATS:
        return _fixed(src, t, path)
    if t == "string":
        n = _length(src, w, path, "int16")
        if n is None:
            return None
        start = src.pos
        raw = src.take(n, path)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(
                f"invalid UTF-8: {exc.reason}", path=path, offset=start
            ) from None
    if t in ("bytes", "records"):
        n = _length(src, w, path, "int32")
        return None if n is None else src.take(n, path)
    raise DecodeError(f"unknown type {t}", path=path, offset=src.pos)


def _may_be_empty(w: Wire) -> bool:
    if w.kind != "struct" or w.entity is None:
        return False
    return not entity_info(w.entity).flexible and all(
        _may_be_empty(fw) for _, fw in wire_fields(w.entity)
    )


def read_value(src: Source, w: Wire, path: str) -> Any:
    """Read one value of field ``w``."""
    if w.kind == "primitive":
        return _read_primitive(src, w, w.type, path)
    if w.kind == "struct":
        assert w.entity is not None
        if w.nullable:
            start = src.pos
            marker = _fixed(src, "int8", path)
            if marker < 0:
                return None
            if marker != 1:
                raise DecodeError(
                    f"bad struct presence byte {marker}", path=path, offset=start
                )
        return read_entity(w.entity, src, path)
    if w.kind == "array":
        count = _length(src, w, path, "int32")
        if count is None:
            return None
        el = w.element
        assert el is not None
        if (
            src.remaining() is None
            and count > _MAX_EMPTY_ELEMENTS
            and _may_be_empty(el)
        ):
            # A stream has no byte count to check against, and elements that encode
            # as zero bytes would let a lying count allocate without reading input.
            raise DecodeError(
                f"array count {count} of empty elements", path=path, offset=src.pos
            )
        items = []
        for i in range(count):
            items.append(read_value(src, el, f"{path}[{i}]"))
        return tuple(items)
    raise DecodeError(f"unknown kind {w.kind}", path=path, offset=src.pos)


def read_entity(cls: type, src: Source, path: str = "") -> Any:
    """Read one entity of ``cls`` from ``src``.

    Raises:
        DecodeError: naming the field path and byte offset of what was wrong.
    """
    info = entity_info(cls)
    path = path or info.name
    values: dict[str, Any] = {}
    tagged: dict[int, tuple[str, Wire]] = {}
    for field, w in wire_fields(cls):
        if w.kind == "unknown_tags":
            continue
        if w.tag is not None:
            tagged[w.tag] = (field.name, w)
            continue
        values[field.name] = read_value(src, w, f"{path}.{field.name}")
    if info.flexible:
        unknown = []
        count_at = src.pos
        count = _uvarint(src, f"{path}.<tagged fields>")
        _check_left(
            src, "tagged field count", count, f"{path}.<tagged fields>", count_at
        )
        last = -1
        for _ in range(count):
            tag_at = src.pos
            tag = _uvarint(src, f"{path}.<tagged fields>")
            if tag <= last:
                raise DecodeError(
                    f"tag {tag} after tag {last}: tags must be ascending",
                    path=f"{path}.<tagged fields>",
                    offset=tag_at,
                )
            last = tag
            size = _uvarint(src, f"{path}.<tag {tag}>")
            _check_left(src, "tagged field size", size, f"{path}.<tag {tag}>", tag_at)
            if tag in tagged:
                name, w = tagged[tag]
                start = src.pos
                raw = src.take(size, f"{path}.{name}")
                sub = BufferSource(raw)
                sub_path = f"{path}.{name}"
                try:
                    values[name] = read_value(sub, w, sub_path)
                except DecodeError as exc:
                    raise DecodeError(
                        exc.reason,
                        path=exc.path,
                        offset=None if exc.offset is None else start + exc.offset,
                    ) from None
                if sub.pos != size:
                    raise DecodeError(
                        f"tagged field holds {size} bytes, its value used {sub.pos}",
                        path=sub_path,
                        offset=start,
                    )
            else:
                unknown.append((tag, src.take(size, f"{path}.<tag {tag}>")))
        values["unknown_tagged_fields"] = tuple(unknown)
    return cls(**values)


# --------------------------------------------------------------------------- writing


def _fail(path: str, reason: str) -> EncodeError:
    return EncodeError(reason, path=path)


def _write_length(
    out: list[bytes], w: Wire, n: int | None, classic: str, path: str
) -> None:
    if n is None:
        out.append(
            b"\x00" if w.compact else struct.pack(">" + FIXED_FORMATS[classic], -1)
        )
        return
    limit = INT_RANGES[classic][1] if not w.compact else 0xFFFFFFFE
    if n > limit:
        raise _fail(
            path,
            f"length {n} does not fit the {classic if not w.compact else 'varint'}",
        )
    out.append(
        write_uvarint(n + 1)
        if w.compact
        else struct.pack(">" + FIXED_FORMATS[classic], n)
    )


def _fits_float(v: int) -> bool:
    try:
        return math.isfinite(float(v))
    except OverflowError:  # float() of an int beyond the float range
        return False


def _write_primitive(out: list[bytes], w: Wire, t: str, v: Any, path: str) -> None:
    if v is None:
        if not w.nullable:
            raise _fail(path, f"None in a non-nullable {t} field")
        _write_length(out, w, None, "int16" if t == "string" else "int32", path)
        return
    if t in INT_RANGES:
        if not isinstance(v, int):
            raise _fail(path, f"{t} needs an int, got {type(v).__name__}")
        lo, hi = INT_RANGES[t]
        if not lo <= v <= hi:
            raise _fail(path, f"{v} does not fit {t} ({lo}..{hi})")
        out.append(struct.pack(">" + FIXED_FORMATS[t], v))
    elif t == "bool":
        if not isinstance(v, bool):
            raise _fail(path, f"bool needs a bool, got {type(v).__name__}")
        out.append(b"\x01" if v else b"\x00")
    elif t == "float64":
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise _fail(path, f"float64 needs a float, got {type(v).__name__}")
        if isinstance(v, int) and not _fits_float(v):
            raise _fail(path, f"{v} does not fit float64")
        out.append(struct.pack(">d", v))
    elif t == "uuid":
        if not isinstance(v, uuid.UUID):
            raise _fail(path, f"uuid needs a uuid.UUID, got {type(v).__name__}")
        try:
            raw = v.bytes
        except (TypeError, ValueError, AttributeError, OverflowError) as exc:
            # a UUID whose int slot was replaced (object.__setattr__): no 16 bytes
            raise _fail(path, f"uuid has no 16 bytes ({exc})") from None
        out.append(raw)
    elif t == "string":
        if not isinstance(v, str):
            raise _fail(path, f"string needs a str, got {type(v).__name__}")
        try:
            raw = v.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _fail(path, f"cannot encode as UTF-8: {exc.reason}") from None
        _write_length(out, w, len(raw), "int16", path)
        out.append(raw)
    elif t in ("bytes", "records"):
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise _fail(path, f"{t} needs bytes, got {type(v).__name__}")
        raw = bytes(v)
        _write_length(out, w, len(raw), "int32", path)
        out.append(raw)
    else:
        raise _fail(path, f"unknown type {t}")


def write_value(out: list[bytes], w: Wire, v: Any, path: str) -> None:
    """Append the encoding of one value of field ``w`` to ``out``."""
    if w.kind == "primitive":
        _write_primitive(out, w, w.type, v, path)
    elif w.kind == "struct":
        if v is None:
            if not w.nullable:
                raise _fail(path, f"None in a non-nullable {w.type} field")
            out.append(b"\xff")
            return
        if w.nullable:
            out.append(b"\x01")
        assert w.entity is not None
        if not isinstance(v, w.entity):
            raise _fail(path, f"needs a {w.entity.__name__}, got {type(v).__name__}")
        write_entity(out, v, path)
    elif w.kind == "array":
        if v is None:
            if not w.nullable:
                raise _fail(path, f"None in a non-nullable {w.type} field")
            _write_length(out, w, None, "int32", path)
            return
        if not isinstance(v, (tuple, list)):
            raise _fail(path, f"{w.type} needs a tuple, got {type(v).__name__}")
        _write_length(out, w, len(v), "int32", path)
        el = w.element
        assert el is not None
        for i, item in enumerate(v):
            write_value(out, el, item, f"{path}[{i}]")
    else:
        raise _fail(path, f"unknown kind {w.kind}")


def write_entity(out: list[bytes], entity: Any, path: str = "") -> None:
    """Append the encoding of ``entity`` to ``out``.

    Raises:
        EncodeError: naming the field path of a value that does not fit its field.
    """
    cls = type(entity)
    info = entity_info(cls)
    path = path or info.name
    tagged: list[tuple[int, bytes]] = []
    for field, w in wire_fields(cls):
        v = getattr(entity, field.name)
        fpath = f"{path}.{field.name}"
        if w.kind == "unknown_tags":
            if not isinstance(v, (tuple, list)):
                raise _fail(fpath, "needs a tuple of (tag, bytes) pairs")
            for i, pair in enumerate(v):
                if (
                    not isinstance(pair, (tuple, list))
                    or len(pair) != 2
                    or not isinstance(pair[0], int)
                    or not isinstance(pair[1], (bytes, bytearray))
                    or not 0 <= pair[0] <= 0xFFFFFFFF
                ):
                    raise _fail(f"{fpath}[{i}]", "needs a (tag, bytes) pair")
                tagged.append((pair[0], bytes(pair[1])))
            continue
        if w.tag is not None:
            if v == w.default:
                continue  # Kafka omits tagged fields that hold their default
            sub: list[bytes] = []
            write_value(sub, w, v, fpath)
            tagged.append((w.tag, b"".join(sub)))
            continue
        write_value(out, w, v, fpath)
    if info.flexible:
        tagged.sort(key=lambda pair: pair[0])
        tags = [t for t, _ in tagged]
        if len(set(tags)) != len(tags):
            raise _fail(f"{path}.unknown_tagged_fields", "a tag appears twice")
        out.append(write_uvarint(len(tagged)))
        for tag, data in tagged:
            out.append(write_uvarint(tag))
            out.append(write_uvarint(len(data)))
            out.append(data)
