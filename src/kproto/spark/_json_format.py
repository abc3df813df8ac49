"""``valueFormat=json``: JSON Schema values as typed columns.

:func:`json_arrow_type` maps a JSON Schema (draft 4 to 2020-12 keywords) to the
Arrow type of the column, :func:`json_value` shapes one parsed JSON value to it:

* ``object`` with ``properties`` -> struct (properties in schema order; a
  property the value lacks is null, one the schema lacks is dropped: older and
  newer writer schemas resolve by field name);
* ``object`` with only ``additionalProperties`` (a schema) -> ``map<string, T>``;
* ``array`` with one ``items`` schema -> list;
* ``string`` -> string, ``integer`` -> int64, ``number`` -> float64, ``boolean``
  -> bool; a ``type`` list of one type and ``"null"`` -> that type, nullable;
* local ``$ref`` (``#/definitions/X``, ``#/$defs/X``) followed, at most
  :data:`MAX_DEPTH` levels deep;
* anything else (``oneOf``/``anyOf``/``allOf``, several types, no ``type``,
  recursive references, tuples) -> the value as JSON text (string).

The values are parsed with :func:`json.loads`, one Python object per record.
"""

from __future__ import annotations

import json
from typing import Any, Final

import pyarrow as pa  # type: ignore[import-untyped]

__all__ = ["MAX_DEPTH", "JsonShapeError", "json_arrow_type", "json_value"]

#: Nesting depth past which a part of the schema becomes JSON text.
MAX_DEPTH: Final = 32
_SCALARS: Final = {
    "string": pa.string(),
    "integer": pa.int64(),
    "number": pa.float64(),
    "boolean": pa.bool_(),
}


class JsonShapeError(ValueError):
    """A JSON value that does not fit the reader schema's shape (the path named)."""


def _resolve(node: Any, root: Any, depth: int) -> Any:
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        if not ref.startswith("#/") or depth > MAX_DEPTH:
            return None
        target: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                return None
            target = target[part]
        node = target
        depth += 1
    return node


def _type_of(node: Any) -> tuple[str | None, bool]:
    """``(type, nullable)`` of a schema node; type None when it is not one type."""
    if node is True or node == {}:
        return None, True
    if not isinstance(node, dict):
        return None, True
    if any(k in node for k in ("oneOf", "anyOf", "allOf", "not", "if")):
        return None, True
    t = node.get("type")
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        if len(rest) == 1 and isinstance(rest[0], str):
            return rest[0], True
        return None, True
    if isinstance(t, str):
        return (None if t == "null" else t), t == "null"
    if "properties" in node:
        return "object", False
    return None, True


def json_arrow_type(schema: Any, root: Any = None, depth: int = 0) -> pa.DataType:
    """The Arrow type of values of ``schema`` (parsed JSON; ``root`` for ``$ref``)."""
    root = schema if root is None else root
    node = _resolve(schema, root, depth)
    kind, _ = _type_of(node)
    if depth > MAX_DEPTH or kind is None:
        return pa.string()
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        items = node.get("items")
        if not isinstance(items, (dict, bool)):
            return pa.string()
        item_type = json_arrow_type(items, root, depth + 1)
        return pa.list_(pa.field("element", item_type))
    if kind == "object":
        props = node.get("properties")
        extra = node.get("additionalProperties")
        if not props and isinstance(extra, dict):
            return pa.map_(pa.string(), json_arrow_type(extra, root, depth + 1))
        if not isinstance(props, dict):
            return pa.string()
        return pa.struct(
            [
                pa.field(name, json_arrow_type(sub, root, depth + 1))
                for name, sub in props.items()
            ]
        )
    return pa.string()


def json_value(value: Any, t: pa.DataType, path: str = "$") -> Any:
    """``value`` (from :func:`json.loads`) shaped as Arrow type ``t``.

    Raises:
        JsonShapeError: a value of another JSON type than the schema's (the path
            named, e.g. ``$.items[2].price``).
    """
    if value is None:
        return None
    if pa.types.is_string(t):
        return value if isinstance(value, str) else json.dumps(value)
    if pa.types.is_boolean(t):
        if isinstance(value, bool):
            return value
    elif pa.types.is_int64(t):
        if isinstance(value, int) and not isinstance(value, bool):
            if -(2**63) <= value < 2**63:
                return value
        elif isinstance(value, float) and value.is_integer():
            return int(value)
    elif pa.types.is_float64(t):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif pa.types.is_struct(t):
        if isinstance(value, dict):
            return {
                t.field(i).name: json_value(
                    value.get(t.field(i).name),
                    t.field(i).type,
                    f"{path}.{t.field(i).name}",
                )
                for i in range(t.num_fields)
            }
    elif pa.types.is_map(t):
        if isinstance(value, dict):
            return [
                (k, json_value(v, t.item_type, f"{path}.{k}")) for k, v in value.items()
            ]
    elif pa.types.is_list(t):
        if isinstance(value, list):
            return [
                json_value(v, t.value_type, f"{path}[{i}]") for i, v in enumerate(value)
            ]
    raise JsonShapeError(f"{path}: {type(value).__name__} where the schema has {t}")
