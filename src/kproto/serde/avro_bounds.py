"""A bound fastavro lacks: an Avro array whose items take no bytes (``null``,
``fixed`` of size 0, records of such fields) can claim any item count in a few bytes,
and fastavro would build that list (a hang and unbounded memory from one record).

:func:`zero_width_arrays` finds such arrays in a schema (most schemas have none, and
pay nothing); for the few that do, :func:`check_counts` walks the bytes first (every
type skipped by the Avro specification's binary encoding) and refuses a zero-width
array claiming more than ``MAX_ZERO_WIDTH_ITEMS`` items.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_ZERO_WIDTH_ITEMS", "MAX_DEPTH", "zero_width_arrays", "check_counts"]

MAX_ZERO_WIDTH_ITEMS = 1 << 20
MAX_DEPTH = 64
_FIXED_SIZES = {"boolean": 1, "float": 4, "double": 8}


def _names(schema: Any, out: dict[str, Any]) -> dict[str, Any]:
    """Every named type of a fastavro-parsed schema, by full name."""
    if isinstance(schema, list):
        for branch in schema:
            _names(branch, out)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "error", "enum", "fixed") and "name" in schema:
            if schema["name"] in out:
                return out
            out[schema["name"]] = schema
        if kind in ("record", "error"):
            for field in schema.get("fields", ()):
                _names(field["type"], out)
        elif kind == "array":
            _names(schema["items"], out)
        elif kind == "map":
            _names(schema["values"], out)
        elif isinstance(kind, dict | list):
            _names(kind, out)
    return out


def _resolve(schema: Any, names: dict[str, Any]) -> Any:
    """A named type's definition for its name; ``{"type": <schema>}`` unwrapped."""
    while True:
        if isinstance(schema, str) and schema in names:
            schema = names[schema]
        elif isinstance(schema, dict) and isinstance(schema.get("type"), dict | list):
            schema = schema["type"]
        elif isinstance(schema, dict) and schema.get("type") in names:
            schema = names[schema["type"]]
        else:
            return schema


def _kind(schema: Any) -> Any:
    return schema.get("type") if isinstance(schema, dict) else schema


def _zero_width(
    schema: Any, names: dict[str, Any], seen: frozenset[str] = frozenset()
) -> bool:
    schema = _resolve(schema, names)
    kind = _kind(schema)
    if kind == "null":
        return True
    if kind == "fixed":
        return int(schema.get("size", 1)) == 0
    if kind in ("record", "error"):
        name = schema.get("name", "")
        if name in seen:
            return False  # a recursive record needs a union (one byte) to end
        return all(
            _zero_width(f["type"], names, seen | {name}) for f in schema["fields"]
        )
    return False


def _all_names(schema: Any) -> dict[str, Any]:
    names = dict(schema.get("__named_schemas", {})) if isinstance(schema, dict) else {}
    return _names(schema, names)


def zero_width_arrays(schema: Any) -> bool:
    """Whether a fastavro-parsed schema has an array of zero-width items anywhere."""
    names = _all_names(schema)
    stack, seen = [schema], set()
    while stack:
        node = _resolve(stack.pop(), names)
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            kind = _kind(node)
            if kind in ("record", "error"):
                if node.get("name") in seen:
                    continue
                seen.add(node.get("name"))
                stack.extend(f["type"] for f in node["fields"])
            elif kind == "array":
                if _zero_width(node["items"], names):
                    return True
                stack.append(node["items"])
            elif kind == "map":
                stack.append(node["values"])
    return False


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(
                f"Avro: {n} bytes claimed at byte {self.pos}, {len(self.data) - self.pos} left"
            )
        self.pos += n

    def long(self) -> int:
        n = shift = 0
        for _ in range(10):
            if self.pos >= len(self.data):
                raise ValueError("Avro: truncated varint")
            byte = self.data[self.pos]
            self.pos += 1
            n |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return (n >> 1) ^ -(n & 1)
        raise ValueError("Avro: varint longer than 10 bytes")


def check_counts(schema: Any, data: bytes) -> int:
    """Walk ``data`` as a value of ``schema`` (fastavro-parsed); returns the number of
    bytes the value takes.

    Raises:
        ValueError: a zero-width array claiming more than ``MAX_ZERO_WIDTH_ITEMS``
            items, nesting deeper than ``MAX_DEPTH``, or bytes that end early.
    """
    names = _all_names(schema)
    reader = _Reader(data)

    def walk(node: Any, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise ValueError(f"Avro: value nested deeper than {MAX_DEPTH}")
        node = _resolve(node, names)
        if isinstance(node, list):
            index = reader.long()
            if not 0 <= index < len(node):
                raise ValueError(f"Avro: union index {index} out of range")
            walk(node[index], depth + 1)
            return
        kind = _kind(node)
        if kind == "null":
            return
        if kind in _FIXED_SIZES:
            reader.skip(_FIXED_SIZES[kind])
        elif kind in ("int", "long", "enum"):
            reader.long()
        elif kind in ("bytes", "string"):
            reader.skip(reader.long())
        elif kind == "fixed":
            reader.skip(int(node["size"]))
        elif kind in ("record", "error"):
            for field in node["fields"]:
                walk(field["type"], depth + 1)
        elif kind in ("array", "map"):
            items = node["items"] if kind == "array" else node["values"]
            zero = kind == "array" and _zero_width(items, names)
            total = 0
            while True:
                count = reader.long()
                if count == 0:
                    return
                if count < 0:
                    count = -count
                    reader.long()  # the block's byte size
                total += count
                if zero and total > MAX_ZERO_WIDTH_ITEMS:
                    raise ValueError(
                        f"Avro: an array of zero-width items claims {total} items "
                        f"(more than {MAX_ZERO_WIDTH_ITEMS})"
                    )
                if zero:
                    continue
                for _ in range(count):
                    if kind == "map":
                        reader.skip(reader.long())
                    walk(items, depth + 1)
        else:
            raise ValueError(f"Avro: unknown type {kind!r}")

    walk(schema, 0)
    return reader.pos
