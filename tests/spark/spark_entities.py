"""Hand-written entity classes with Wire metadata (importable by Spark workers)."""

from __future__ import annotations

import io
import struct
import uuid
from typing import IO, Any

import attrs

from kproto.meta import UNKNOWN_TAGS, WIRE, Wire


def _w(t: str, **kw: Any) -> dict[str, Wire]:
    return {WIRE: Wire(type=t, **kw)}


@attrs.frozen(slots=True, kw_only=True)
class Leaf:
    name: str = attrs.field(default="", metadata=_w("string"))
    ids: tuple[int, ...] = attrs.field(
        default=(), metadata=_w("[]int32", kind="array", element=Wire(type="int32"))
    )


@attrs.frozen(slots=True, kw_only=True)
class AllTypes:
    b: bool = attrs.field(default=False, metadata=_w("bool"))
    i8: int = attrs.field(default=0, metadata=_w("int8"))
    i16: int = attrs.field(default=0, metadata=_w("int16"))
    u16: int = attrs.field(default=0, metadata=_w("uint16"))
    i32: int = attrs.field(default=0, metadata=_w("int32"))
    u32: int = attrs.field(default=0, metadata=_w("uint32"))
    i64: int = attrs.field(default=0, metadata=_w("int64"))
    f64: float = attrs.field(default=0.0, metadata=_w("float64"))
    s: str | None = attrs.field(default=None, metadata=_w("string", nullable=True))
    raw: bytes = attrs.field(default=b"", metadata=_w("bytes"))
    recs: bytes | None = attrs.field(
        default=None, metadata=_w("records", nullable=True)
    )
    u: uuid.UUID = attrs.field(default=uuid.UUID(int=0), metadata=_w("uuid"))
    leaf: Leaf | None = attrs.field(
        default=None, metadata=_w("Leaf", kind="struct", entity=Leaf, nullable=True)
    )
    leaves: tuple[Leaf, ...] = attrs.field(
        default=(),
        metadata=_w(
            "[]Leaf",
            kind="array",
            element=Wire(type="Leaf", kind="struct", entity=Leaf),
        ),
    )
    names: tuple[str, ...] | None = attrs.field(
        default=None,
        metadata=_w(
            "[]string", kind="array", element=Wire(type="string"), nullable=True
        ),
    )
    unknown_tagged_fields: tuple[tuple[int, bytes], ...] = attrs.field(
        default=(), metadata={WIRE: UNKNOWN_TAGS}
    )


def sample_all_types(i: int) -> AllTypes:
    return AllTypes(
        b=bool(i % 2),
        i8=-128 + i % 256,
        i16=-(2**15) + i,
        u16=2**16 - 1 - i,
        i32=-(2**31) + i,
        u32=2**32 - 1 - i,
        i64=2**63 - 1 - i,
        f64=i / 3,
        s=None if i % 3 == 0 else f"s{i}",
        raw=bytes([i % 256]) * (i % 4),
        recs=None if i % 2 else b"\x00\x01",
        u=uuid.UUID(int=i * 7919),
        leaf=None if i % 4 == 1 else Leaf(name=f"l{i}", ids=tuple(range(i % 3))),
        leaves=tuple(Leaf(name=str(j)) for j in range(i % 3)),
        names=None if i % 5 == 0 else tuple(str(j) for j in range(i % 4)),
        unknown_tagged_fields=((9, b"\xff"),) if i % 2 else (),
    )


def pickle_reader(stream: IO[bytes]) -> Any:
    """A stand-in ``entity_reader`` for hand-written classes: int32 length + pickle."""
    import pickle

    (n,) = struct.unpack(">i", stream.read(4))
    data = stream.read(n)
    if len(data) != n:
        raise ValueError("truncated")
    return pickle.loads(data)


def pickle_writer(entity: Any) -> bytes:
    import pickle

    data = pickle.dumps(entity)
    return struct.pack(">i", len(data)) + data


def to_plain(entity: Any) -> Any:
    """Reference entity -> dict conversion via Wire metadata (what Spark rows hold)."""
    if entity is None:
        return None
    out: dict[str, Any] = {}
    for field in attrs.fields(type(entity)):
        w: Wire = field.metadata[WIRE]
        out[field.name] = _plain(getattr(entity, field.name), w)
    return out


def _plain(v: Any, w: Wire) -> Any:
    if v is None:
        return None
    if w.kind == "unknown_tags":
        return [{"tag": t, "data": bytes(d)} for t, d in v]
    if w.kind == "struct":
        return to_plain(v)
    if w.kind == "array":
        assert w.element is not None
        return [_plain(x, w.element) for x in v]
    if w.type == "uuid":
        return str(v)
    if w.type in ("bytes", "records"):
        return bytes(v)
    return v


__all__ = [
    "AllTypes",
    "Leaf",
    "sample_all_types",
    "pickle_reader",
    "pickle_writer",
    "to_plain",
    "io",
]
