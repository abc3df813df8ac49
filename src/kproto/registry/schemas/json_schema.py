"""JSON Schema: parsing (meta-schema checked by ``jsonschema`` for drafts 4, 6, 7,
2019-09 and 2020-12), Confluent's canonical text, normalization and ``$ref``
references.

- Canonical text: ``JsonSchema.canonicalString()``: the schema as compact JSON (Jackson's
  output: no whitespace, keys in the order given, non-ASCII kept).
- Normalized text: the same with every object's keys sorted.
- References: a ``$ref`` whose document part is a reference's name (or the ``$id`` of a
  referenced schema) points into that schema; ``#/pointer`` and ``#anchor`` fragments.
- Compatibility is :mod:`kproto.registry.schemas.json_schema_compatibility`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from kproto.registry.schemas import _json_text
from kproto.registry.schemas._types import (
    InvalidSchemaError,
)

__all__ = ["parse_json_schema", "JsonSchemaModel"]

MAX_DEPTH = 256
_KNOWN_DRAFTS = {
    "http://json-schema.org/draft-04/schema": jsonschema.Draft4Validator,
    "http://json-schema.org/draft-06/schema": jsonschema.Draft6Validator,
    "http://json-schema.org/draft-07/schema": jsonschema.Draft7Validator,
    "https://json-schema.org/draft/2019-09/schema": jsonschema.Draft201909Validator,
    "https://json-schema.org/draft/2020-12/schema": jsonschema.Draft202012Validator,
}


def dumps(value: Any) -> str:
    """Compact JSON as Jackson writes it (:mod:`kproto.registry.schemas._json_text`)."""
    return _json_text.dumps(value)


def _sorted(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise InvalidSchemaError(
            f"Invalid JSON schema: nested deeper than {MAX_DEPTH} levels"
        )
    if isinstance(value, dict):
        return {k: _sorted(value[k], depth + 1) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v, depth + 1) for v in value]
    return value


def _load(text: str, what: str) -> Any:
    try:
        value = _json_text.loads(text)
    except RecursionError:
        raise InvalidSchemaError(
            f"Invalid JSON schema: {what} is nested too deeply"
        ) from None
    except ValueError as exc:
        raise InvalidSchemaError(
            f"Invalid JSON schema: {what} is not JSON: {exc}"
        ) from None
    if not isinstance(value, (dict, bool)):
        raise InvalidSchemaError(
            f"Invalid JSON schema: {what} must be an object or a boolean"
        )
    _sorted(value)  # bounds the depth
    return value


def _check(schema: Any, what: str) -> None:
    if isinstance(schema, bool):
        return
    draft = schema.get("$schema")
    if draft is not None:
        if not isinstance(draft, str) or draft.rstrip("#") not in _KNOWN_DRAFTS:
            raise InvalidSchemaError(
                f"Invalid JSON schema: {what} has an unknown $schema {draft!r}"
            )
        cls: Any = _KNOWN_DRAFTS[draft.rstrip("#")]
    else:
        cls = jsonschema.Draft7Validator
    try:
        error = next(iter(_meta_validator(cls).iter_errors(schema)), None)
    except (RecursionError, ValueError, TypeError, LookupError) as exc:
        raise InvalidSchemaError(f"Invalid JSON schema: {what}: {exc}") from None
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise InvalidSchemaError(
            f"Invalid JSON schema: {what} at '#/{where}': {error.message}"
        )


@functools.cache
def _meta_validator(cls: Any) -> Any:
    """A validator of ``cls``'s meta-schema, as ``cls.check_schema`` builds per call."""
    meta = jsonschema.validators.validator_for(cls.META_SCHEMA, default=cls)
    return meta(cls.META_SCHEMA, format_checker=meta.FORMAT_CHECKER)


def _refs(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > MAX_DEPTH:
        return
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str):
            yield ref
        for key, sub in value.items():
            if key not in ("enum", "const", "default", "examples"):
                yield from _refs(sub, depth + 1)
    elif isinstance(value, list):
        for sub in value:
            yield from _refs(sub, depth + 1)


class Documents:
    """The schema and its referenced schemas, by name and ``$id``, for ``$ref``."""

    def __init__(self, root: Any, referenced: Mapping[str, Any]) -> None:
        self.root = root
        self.by_name: dict[str, Any] = dict(referenced)
        for doc in referenced.values():
            if isinstance(doc, dict) and isinstance(doc.get("$id"), str):
                self.by_name.setdefault(doc["$id"], doc)
        if isinstance(root, dict) and isinstance(root.get("$id"), str):
            self.by_name.setdefault(root["$id"], root)

    def document(self, name: str, current: Any) -> Any:
        if not name:
            return current
        if name in self.by_name:
            return self.by_name[name]
        tail = name.rsplit("/", 1)[-1]
        for key, doc in self.by_name.items():
            if key.rsplit("/", 1)[-1] == tail:
                return doc
        return None

    def resolve(self, ref: str, current: Any) -> tuple[Any, Any] | None:
        """``(schema, its document)`` for ``ref`` seen inside ``current``, or None."""
        name, _, fragment = ref.partition("#")
        doc = self.document(name, current)
        if doc is None:
            return None
        if fragment and not fragment.startswith("/"):
            anchored = _anchor(doc, fragment, 0)
            return None if anchored is None else (anchored, doc)
        node = doc
        for part in fragment.split("/") if fragment else ():
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node, doc


def _anchor(node: Any, name: str, depth: int) -> Any:
    """The subschema named ``name`` by ``$anchor`` (2019-09 on) or by ``$id: "#name"``
    (drafts 6 and 7), or None."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(node, dict):
        if node.get("$anchor") == name or node.get("$id") == "#" + name:
            return node
        children = [v for k, v in node.items() if k not in ("enum", "const", "default")]
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        found = _anchor(child, name, depth + 1)
        if found is not None:
            return found
    return None


@attrs.frozen(eq=False)
class JsonSchemaModel:
    """A parsed JSON Schema and the documents its ``$ref``s reach."""

    schema: Any
    documents: Documents

    def text(self, normalize: bool = False) -> str:
        return dumps(_sorted(self.schema) if normalize else self.schema)

    def record_names(self) -> tuple[str, ...]:
        if isinstance(self.schema, dict) and isinstance(self.schema.get("title"), str):
            return (self.schema["title"],)
        return ()

    def formatted(self, fmt: str) -> str | None:
        return None


def parse_json_schema(
    text: str, resolved: Mapping[str, str], *, new: bool
) -> JsonSchemaModel:
    """Parse a JSON Schema and the schemas its references name (``resolved``: reference
    name -> schema text). Every ``$ref`` to another document must name a reference (or a
    referenced schema's ``$id``). ``new=False`` (a schema already registered) skips the
    meta-schema check, which registering did. Raises :class:`InvalidSchemaError`."""
    referenced = {
        name: _load(doc, f"reference {name!r}") for name, doc in resolved.items()
    }
    if new:
        for name, doc in referenced.items():
            _check(doc, f"reference {name!r}")
    schema = _load(text, "the schema")
    if new:
        _check(schema, "the schema")
    documents = Documents(schema, referenced)
    for current in [schema, *referenced.values()]:
        for ref in _refs(current):
            if documents.resolve(ref, current) is None:
                raise InvalidSchemaError(
                    f"Invalid JSON schema: $ref {ref!r} does not resolve"
                )
    return JsonSchemaModel(schema, documents)
