"""JSON Schema compatibility after Confluent's ``io.confluent.kafka.schemaregistry.json.diff``
(``SchemaDiff``, ``Difference.Type``): the differences from the writer (original) schema
to the reader (update) schema; a change is compatible when Confluent lists its type in
``COMPATIBLE_CHANGES``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from kproto.registry.schemas._types import ParsedSchema, SchemaDifference
from kproto.registry.schemas.json_schema import (
    Documents,
    JsonSchemaModel,
    dumps,
)

__all__ = [
    "COMPATIBLE_CHANGES",
    "Difference",
    "json_differences",
    "json_compatibility_errors",
]

COMPATIBLE_CHANGES = frozenset(
    """ID_CHANGED DESCRIPTION_CHANGED TITLE_CHANGED DEFAULT_CHANGED SCHEMA_REMOVED TYPE_EXTENDED
    MAX_LENGTH_INCREASED MAX_LENGTH_REMOVED MIN_LENGTH_DECREASED MIN_LENGTH_REMOVED PATTERN_REMOVED
    MAXIMUM_INCREASED MAXIMUM_REMOVED MINIMUM_DECREASED MINIMUM_REMOVED EXCLUSIVE_MAXIMUM_INCREASED
    EXCLUSIVE_MAXIMUM_REMOVED EXCLUSIVE_MINIMUM_DECREASED EXCLUSIVE_MINIMUM_REMOVED
    MULTIPLE_OF_REDUCED MULTIPLE_OF_REMOVED REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED
    REQUIRED_ATTRIBUTE_REMOVED DEPENDENCY_ARRAY_NARROWED DEPENDENCY_ARRAY_REMOVED
    DEPENDENCY_SCHEMA_REMOVED MAX_PROPERTIES_INCREASED MAX_PROPERTIES_REMOVED
    MIN_PROPERTIES_DECREASED MIN_PROPERTIES_REMOVED ADDITIONAL_PROPERTIES_ADDED
    ADDITIONAL_PROPERTIES_EXTENDED PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
    REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL
    OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
    PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
    PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL MAX_ITEMS_INCREASED
    MAX_ITEMS_REMOVED MIN_ITEMS_DECREASED MIN_ITEMS_REMOVED UNIQUE_ITEMS_REMOVED
    ADDITIONAL_ITEMS_ADDED ADDITIONAL_ITEMS_EXTENDED ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
    ITEM_ADDED_TO_CLOSED_CONTENT_MODEL ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL
    ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL ENUM_ARRAY_EXTENDED
    COMBINED_TYPE_EXTENDED PRODUCT_TYPE_NARROWED SUM_TYPE_EXTENDED NOT_TYPE_NARROWED""".split()
)

_KEYWORD_ADDED_OR_REMOVED = frozenset(
    """MAXIMUM_ADDED MINIMUM_ADDED EXCLUSIVE_MAXIMUM_ADDED EXCLUSIVE_MINIMUM_ADDED MULTIPLE_OF_ADDED
    MAX_LENGTH_ADDED MIN_LENGTH_ADDED PATTERN_ADDED REQUIRED_ATTRIBUTE_ADDED MAX_PROPERTIES_ADDED
    MIN_PROPERTIES_ADDED DEPENDENCY_ARRAY_ADDED DEPENDENCY_SCHEMA_ADDED MAX_ITEMS_ADDED
    MIN_ITEMS_ADDED UNIQUE_ITEMS_ADDED ADDITIONAL_ITEMS_REMOVED ADDITIONAL_PROPERTIES_REMOVED""".split()
)
_VALUE_INCREASED = frozenset(
    """MIN_LENGTH_INCREASED MINIMUM_INCREASED EXCLUSIVE_MINIMUM_INCREASED MIN_PROPERTIES_INCREASED
    MULTIPLE_OF_EXPANDED MIN_ITEMS_INCREASED""".split()
)
_VALUE_DECREASED = frozenset(
    """MAX_LENGTH_DECREASED MAXIMUM_DECREASED MAX_ITEMS_DECREASED EXCLUSIVE_MAXIMUM_DECREASED
    MAX_PROPERTIES_DECREASED""".split()
)
_TYPE_NARROWED = frozenset(
    "ADDITIONAL_ITEMS_NARROWED ENUM_ARRAY_NARROWED SUM_TYPE_NARROWED ADDITIONAL_PROPERTIES_NARROWED".split()
)
_VALUE_CHANGED = frozenset(
    "PATTERN_CHANGED MULTIPLE_OF_CHANGED DEPENDENCY_ARRAY_CHANGED".split()
)
_TYPE_CHANGED = frozenset(
    "TYPE_CHANGED TYPE_NARROWED COMBINED_TYPE_CHANGED COMBINED_TYPE_SUBSCHEMAS_CHANGED ENUM_ARRAY_CHANGED".split()
)
_TYPE_EXTENDED = frozenset(
    "DEPENDENCY_ARRAY_EXTENDED PRODUCT_TYPE_EXTENDED SUM_TYPE_EXTENDED NOT_TYPE_EXTENDED".split()
)
_ADDED_TO_OPEN = frozenset(
    """REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL
    OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL ITEM_ADDED_TO_OPEN_CONTENT_MODEL""".split()
)


@attrs.frozen
class Difference(SchemaDifference):
    """One of Confluent's JSON Schema ``Difference``s: a type and a JSON path."""

    COMPATIBLE_CHANGES: ClassVar[frozenset[str]] = COMPATIBLE_CHANGES

    def description(self, update: str, original: str) -> str:
        t, p = self.type, self.path
        if t in _KEYWORD_ADDED_OR_REMOVED:
            text = f"The keyword at path '{p}' in the {update} schema is not present in the {original} schema"
        elif t in _VALUE_INCREASED:
            text = f"The value at path '{p}' in the {update} schema is more than its value in the {original} schema"
        elif t in _VALUE_DECREASED:
            text = f"The value at path '{p}' in the {update} schema is less than its value in the {original} schema"
        elif t in _VALUE_CHANGED:
            text = f"The value at path '{p}' is different between the {update} and {original} schema"
        elif t in _TYPE_NARROWED:
            text = (
                f"An array or combined type at path '{p}' has fewer elements in the {update} "
                f"schema than the {original} schema"
            )
        elif t in _TYPE_EXTENDED:
            text = (
                f"An array or combined type at path '{p}' has more elements in the {update} "
                f"schema than the {original} schema"
            )
        elif t in _TYPE_CHANGED:
            text = f"A type at path '{p}' is different between the {update} schema and the {original} schema"
        elif t in _ADDED_TO_OPEN:
            text = (
                f"The {update} schema has an open content model and has a property or item at "
                f"path '{p}' which is missing in the {original} schema"
            )
        elif t == "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL":
            text = (
                f"The {update} schema has an unopen content model and has a required property "
                f"at path '{p}' which is missing in the {original} schema"
            )
        elif t in (
            "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
            "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        ):
            text = (
                f"The {update} schema has a closed content model and is missing a property or "
                f"item present at path '{p}' in the {original} schema"
            )
        elif t.endswith("REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"):
            text = (
                f"A property or item is missing in the {update} schema but present at path "
                f"'{p}' in the {original} schema and is not covered by its partially open content model"
            )
        elif t.endswith("ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"):
            text = (
                f"The {update} schema has a property or item at path '{p}' which is missing in "
                f"the {original} schema and is not covered by its partially open content model"
            )
        else:
            text = ""
        return text


_OBJECT_KEYS = frozenset(
    "properties required additionalProperties patternProperties minProperties maxProperties "
    "dependencies dependentRequired dependentSchemas propertyNames".split()
)
_ARRAY_KEYS = frozenset(
    "items additionalItems prefixItems minItems maxItems uniqueItems contains".split()
)
_STRING_KEYS = frozenset("minLength maxLength pattern format".split())
_NUMBER_KEYS = frozenset(
    "minimum maximum exclusiveMinimum exclusiveMaximum multipleOf".split()
)
_COMBINERS = ("allOf", "anyOf", "oneOf")


@attrs.frozen(eq=False)
class _Schema:
    """A schema classified as everit's classes are (ObjectSchema, StringSchema, ...)."""

    kind: str  # empty false object array string number boolean null enum const combined not
    raw: Any
    doc: Any
    criterion: str = ""
    subschemas: tuple[Any, ...] = ()


_TYPED_KEYS = _OBJECT_KEYS | _ARRAY_KEYS | _STRING_KEYS | _NUMBER_KEYS


def _classify(raw: Any, doc: Any) -> _Schema:
    """The everit schema Confluent's diff sees for ``raw``: a schema with several kinds
    of keywords (a type, ``enum``, ``const``, ``not``, each combiner) is the ``allOf``
    of one schema per kind, as everit's loader builds it."""
    if raw is True or raw == {}:
        return _Schema("empty", raw, doc)
    if raw is False:
        return _Schema("false", raw, doc)
    if not isinstance(raw, dict):
        return _Schema("empty", {}, doc)
    type_ = raw.get("type")
    typed = type_ is not None or any(k in raw for k in _TYPED_KEYS)
    aspects: list[Any] = []
    if typed:
        aspects.append(
            {
                k: v
                for k, v in raw.items()
                if k not in ("enum", "const", "not", *_COMBINERS)
            }
        )
    aspects += [{k: raw[k]} for k in ("enum", "const", "not") if k in raw]
    aspects += [{k: raw[k]} for k in _COMBINERS if k in raw]
    if len(aspects) > 1:
        return _Schema("combined", raw, doc, "allOf", tuple(aspects))
    combiners = [k for k in _COMBINERS if k in raw]
    if combiners:
        key = combiners[0]
        subs = raw[key] if isinstance(raw[key], list) else []
        return _Schema("combined", raw, doc, key, tuple(subs))
    if isinstance(type_, list):
        if len(type_) == 1:
            return _classify({**raw, "type": type_[0]}, doc)
        return _Schema(
            "combined", raw, doc, "anyOf", tuple({**raw, "type": t} for t in type_)
        )
    if "enum" in raw:
        return _Schema("enum", raw, doc)
    if "const" in raw:
        return _Schema("const", raw, doc)
    if "not" in raw:
        return _Schema("not", raw, doc)
    if type_ == "object" or (type_ is None and any(k in raw for k in _OBJECT_KEYS)):
        return _Schema("object", raw, doc)
    if type_ == "array" or (type_ is None and any(k in raw for k in _ARRAY_KEYS)):
        return _Schema("array", raw, doc)
    if type_ == "string" or (type_ is None and any(k in raw for k in _STRING_KEYS)):
        return _Schema("string", raw, doc)
    if type_ in ("number", "integer") or (
        type_ is None and any(k in raw for k in _NUMBER_KEYS)
    ):
        return _Schema("number", raw, doc)
    if type_ in ("boolean", "null"):
        return _Schema(type_, raw, doc)
    return _Schema("empty", raw, doc)


_BUDGET = 200_000
"""Most schema pairs one check compares; past it the check reports the schemas as too
complex to compare (combined schemas compare every subschema pair, so nesting them
multiplies the work)."""
_MAX_COMPARE_DEPTH = 100


class TooComplex(Exception):
    """A compatibility check past :data:`_BUDGET` pairs or nested past its depth."""


class _Context:
    def __init__(self, documents: tuple[Documents, Documents]) -> None:
        self.documents = documents
        self.path: list[str] = []
        self.differences: list[Difference] = []
        # Shared by every sub-context of one check: differences per (original, update)
        # pair relative to the pair (with the pair objects, so their ids stay theirs),
        # the pairs being compared (a cycle compares as equal), the work left.
        self.memo: dict[tuple[int, int], tuple[Any, Any, list[Difference]]] = {}
        self.in_progress: set[tuple[int, int]] = set()
        self.budget = [_BUDGET]
        self.depth = 0
        # Each schema classified once, so the schemas a classification makes up (the
        # allOf parts of a schema with several kinds of keywords) keep their identity.
        self.classified: dict[int, tuple[Any, _Schema]] = {}

    def sub(self, path: Sequence[str] | None = None) -> _Context:
        ctx = _Context(self.documents)
        ctx.path = list(self.path if path is None else path)
        ctx.memo, ctx.in_progress, ctx.budget = self.memo, self.in_progress, self.budget
        ctx.classified = self.classified
        ctx.depth = self.depth
        return ctx

    def classify(self, raw: Any, doc: Any) -> _Schema:
        found = self.classified.get(id(raw))
        if found is None:
            found = self.classified[id(raw)] = (raw, _classify(raw, doc))
        return found[1]

    def where(self, *extra: str) -> str:
        return "#/" + "/".join([*self.path, *extra])

    def add(self, type_: str, attribute: str | None = None) -> None:
        self.differences.append(
            Difference(type_, self.where(attribute) if attribute else self.where())
        )

    def add_rebased(self, relative: Sequence[Difference]) -> None:
        """Add differences computed relative to a pair, under the current path."""
        if not self.path:
            self.differences += relative
            return
        prefix = self.where()
        for d in relative:
            path = prefix if len(d.path) <= 2 else prefix + "/" + d.path[2:]
            self.differences.append(Difference(d.type, path))

    @property
    def compatible(self) -> bool:
        return all(d.compatible for d in self.differences)

    def enter(self, *parts: str) -> _Path:
        return _Path(self, parts)


class _Path:
    def __init__(self, ctx: _Context, parts: Sequence[str]) -> None:
        self.ctx, self.parts = ctx, parts

    def __enter__(self) -> None:
        self.ctx.path.extend(self.parts)

    def __exit__(self, *exc: object) -> None:
        del self.ctx.path[len(self.ctx.path) - len(self.parts) :]


_MISSING = object()


def _deref(ctx: _Context, side: int, raw: Any, doc: Any) -> tuple[Any, Any]:
    for _ in range(64):
        if isinstance(raw, dict) and isinstance(raw.get("$ref"), str):
            found = ctx.documents[side].resolve(raw["$ref"], doc)
            if found is None:
                return {}, doc
            raw, doc = found
        else:
            break
    return raw, doc


def _compare(ctx: _Context, original: Any, update: Any, docs: tuple[Any, Any]) -> None:
    """Confluent's ``SchemaDiff.compare``, each (original, update) pair computed once
    (Confluent's ``Context.compareMemoized``)."""
    if original is _MISSING and update is _MISSING:
        return
    if original is _MISSING:
        ctx.add("SCHEMA_ADDED")
        return
    if update is _MISSING:
        ctx.add("SCHEMA_REMOVED")
        return
    o_raw, o_doc = _deref(ctx, 0, original, docs[0])
    u_raw, u_doc = _deref(ctx, 1, update, docs[1])
    key = (id(o_raw), id(u_raw))
    cached = ctx.memo.get(key)
    if cached is not None:
        ctx.add_rebased(cached[2])
        return
    if key in ctx.in_progress:
        return
    ctx.budget[0] -= 1
    if ctx.budget[0] < 0 or ctx.depth > _MAX_COMPARE_DEPTH:
        raise TooComplex()
    ctx.in_progress.add(key)
    try:
        sub = ctx.sub(path=())
        sub.depth += 1
        _compare_pair(sub, o_raw, o_doc, u_raw, u_doc)
    finally:
        ctx.in_progress.discard(key)
    ctx.memo[key] = (o_raw, u_raw, sub.differences)
    ctx.add_rebased(sub.differences)


def _compare_pair(
    ctx: _Context, o_raw: Any, o_doc: Any, u_raw: Any, u_doc: Any
) -> None:
    o, u = ctx.classify(o_raw, o_doc), ctx.classify(u_raw, u_doc)
    if o.kind != "combined" and u.kind == "combined":
        if len(u.subschemas) == 1:
            sub = ctx.sub()
            _compare(sub, o_raw, u.subschemas[0], (o_doc, u_doc))
            if sub.compatible:
                ctx.differences += sub.differences
                return
        elif u.criterion in ("anyOf", "oneOf"):
            for subschema in u.subschemas:
                sub = ctx.sub()
                _compare(sub, o_raw, subschema, (o_doc, u_doc))
                if sub.compatible:
                    ctx.differences += sub.differences
                    ctx.add("SUM_TYPE_EXTENDED")
                    return
    elif o.kind == "combined" and u.kind != "combined" and len(o.subschemas) == 1:
        sub = ctx.sub()
        _compare(sub, o.subschemas[0], u_raw, (o_doc, u_doc))
        if sub.compatible:
            ctx.differences += sub.differences
            return
    if o.kind != u.kind:
        if o.kind == "false" or u.kind == "empty":
            return
        ctx.add("TYPE_CHANGED")
        return
    _compare_kind(ctx, o, u)


def _get(schema: _Schema, key: str) -> Any:
    return schema.raw.get(key) if isinstance(schema.raw, dict) else None


def _compare_kind(ctx: _Context, o: _Schema, u: _Schema) -> None:
    for key, change in (
        ("$id", "ID_CHANGED"),
        ("title", "TITLE_CHANGED"),
        ("description", "DESCRIPTION_CHANGED"),
        ("default", "DEFAULT_CHANGED"),
    ):
        if _get(o, key) != _get(u, key):
            ctx.add(change)
    if o.kind == "string":
        _limits(ctx, o, u, "maxLength", "MAX_LENGTH")
        _limits(ctx, o, u, "minLength", "MIN_LENGTH")
        po, pu = _get(o, "pattern"), _get(u, "pattern")
        if po != pu:
            ctx.add(
                (
                    "PATTERN_ADDED"
                    if po is None
                    else "PATTERN_REMOVED" if pu is None else "PATTERN_CHANGED"
                ),
                "pattern",
            )
    elif o.kind == "number":
        _compare_number(ctx, o, u)
    elif o.kind == "enum":
        eo, eu = _get(o, "enum") or [], _get(u, "enum") or []
        so, su = [dumps(v) for v in eo], [dumps(v) for v in eu]
        if set(so) != set(su):
            if set(su) >= set(so):
                ctx.add("ENUM_ARRAY_EXTENDED", "enum")
            elif set(so) >= set(su):
                ctx.add("ENUM_ARRAY_NARROWED", "enum")
            else:
                ctx.add("ENUM_ARRAY_CHANGED", "enum")
    elif o.kind == "const":
        if dumps(_get(o, "const")) != dumps(_get(u, "const")):
            ctx.add("ENUM_ARRAY_CHANGED", "const")
    elif o.kind == "not":
        sub = ctx.sub()
        _compare(sub, _get(u, "not"), _get(o, "not"), (u.doc, o.doc))
        if not sub.compatible:
            ctx.add("NOT_TYPE_EXTENDED" if sub.differences else "NOT_TYPE_NARROWED")
    elif o.kind == "combined":
        _compare_combined(ctx, o, u)
    elif o.kind == "object":
        _compare_object(ctx, o, u)
    elif o.kind == "array":
        _compare_array(ctx, o, u)


def _num(value: Any) -> float | None:
    return (
        float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        else None
    )


def _limits(ctx: _Context, o: _Schema, u: _Schema, key: str, name: str) -> None:
    vo, vu = _num(_get(o, key)), _num(_get(u, key))
    if vo == vu:
        return
    if vo is None:
        ctx.add(f"{name}_ADDED", key)
    elif vu is None:
        ctx.add(f"{name}_REMOVED", key)
    elif vo < vu:
        ctx.add(f"{name}_INCREASED", key)
    else:
        ctx.add(f"{name}_DECREASED", key)


def _compare_number(ctx: _Context, o: _Schema, u: _Schema) -> None:
    _limits(ctx, o, u, "maximum", "MAXIMUM")
    _limits(ctx, o, u, "minimum", "MINIMUM")
    _limits(ctx, o, u, "exclusiveMaximum", "EXCLUSIVE_MAXIMUM")
    _limits(ctx, o, u, "exclusiveMinimum", "EXCLUSIVE_MINIMUM")
    mo, mu = _num(_get(o, "multipleOf")), _num(_get(u, "multipleOf"))
    if mo != mu:
        if mo is None:
            ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
        elif mu is None:
            ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
        elif mo and (mu / mo).is_integer():
            ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf")
        elif mu and (mo / mu).is_integer():
            ctx.add("MULTIPLE_OF_REDUCED", "multipleOf")
        else:
            ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")
    io, iu = _get(o, "type") == "integer", _get(u, "type") == "integer"
    if io != iu:
        ctx.add("TYPE_EXTENDED" if io else "TYPE_NARROWED")


def _compare_combined(ctx: _Context, o: _Schema, u: _Schema) -> None:
    co, cu = o.criterion, u.criterion
    change: str | None = None
    if co != cu:
        if cu == "anyOf":
            change = "COMBINED_TYPE_EXTENDED"
        elif cu == "oneOf" and len(o.subschemas) == 1:
            change = "COMBINED_TYPE_EXTENDED"
        elif cu == "allOf" and len(o.subschemas) == 1 and len(u.subschemas) == 1:
            change = "COMBINED_TYPE_EXTENDED"
        else:
            change = "COMBINED_TYPE_CHANGED"
        ctx.add(change)
        if change == "COMBINED_TYPE_CHANGED":
            return
    subs_o = list({dumps(s): s for s in o.subschemas}.values())
    subs_u = list({dumps(s): s for s in u.subschemas}.values())
    if len(subs_o) < len(subs_u):
        ctx.add("PRODUCT_TYPE_EXTENDED" if cu == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(subs_o) > len(subs_u):
        ctx.add("PRODUCT_TYPE_NARROWED" if cu == "allOf" else "SUM_TYPE_NARROWED")
    edges: dict[int, dict[int, list[Difference]]] = {}
    for i, so in enumerate(subs_o):
        with ctx.enter(co, str(i)):
            for j, su in enumerate(subs_u):
                sub = ctx.sub()
                _compare(sub, so, su, (o.doc, u.doc))
                if sub.compatible:
                    edges.setdefault(i, {})[j] = sub.differences
    match: dict[int, int] = {}  # update index -> original index

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges.get(i, {}):
            if j in seen:
                continue
            seen.add(j)
            if j not in match or augment(match[j], seen):
                match[j] = i
                return True
        return False

    for i in range(len(subs_o)):
        augment(i, set())
    for j, i in sorted(match.items()):
        ctx.differences += edges[i][j]
    if len(match) < min(len(subs_o), len(subs_u)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _object_open(s: _Schema) -> bool:
    additional = _get(s, "additionalProperties")
    return not _dict(_get(s, "patternProperties")) and (
        additional is None or additional is True
    )


def _partial(s: _Schema, key: str) -> Any:
    for pattern, schema in _dict(_get(s, "patternProperties")).items():
        try:
            if re.search(pattern, key):
                return schema
        except re.error:
            continue
    additional = _get(s, "additionalProperties")
    return additional if isinstance(additional, dict) else None


def _compare_partial(
    ctx: _Context, o: _Schema, u: _Schema, key: str, value: Any, removed: bool
) -> bool:
    """A property ``key`` on one side only (``value``: the original's when
    ``removed``, else the update's) compared with the other side's partially open
    content model for it (a matching ``patternProperties`` or an
    ``additionalProperties`` schema), as ``PROPERTY_REMOVED`` / ``PROPERTY_ADDED``;
    False when that side has none."""
    partial = _partial(u if removed else o, key)
    if partial is None:
        return False
    if removed:
        _compare_covered(ctx, value, partial, (o.doc, u.doc), "PROPERTY_REMOVED")
    else:
        _compare_covered(ctx, partial, value, (o.doc, u.doc), "PROPERTY_ADDED")
    return True


def _has_default(schema: Any) -> bool:
    return isinstance(schema, dict) and "default" in schema


def _compare_object(ctx: _Context, o: _Schema, u: _Schema) -> None:
    props_o, props_u = _dict(_get(o, "properties")), _dict(_get(u, "properties"))
    req_o = (
        set(_get(o, "required") or ())
        if isinstance(_get(o, "required"), list)
        else set()
    )
    req_u = (
        set(_get(u, "required") or ())
        if isinstance(_get(u, "required"), list)
        else set()
    )
    with ctx.enter("required"):
        for key in props_o:
            if key in props_u:
                if key in req_o and key not in req_u:
                    ctx.add("REQUIRED_ATTRIBUTE_REMOVED", key)
                elif key not in req_o and key in req_u:
                    ctx.add(
                        (
                            "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                            if _has_default(props_u[key])
                            else "REQUIRED_ATTRIBUTE_ADDED"
                        ),
                        key,
                    )
    with ctx.enter("properties"):
        for key in list(props_o) + [k for k in props_u if k not in props_o]:
            with ctx.enter(key):
                if key not in props_u:
                    if _object_open(u):
                        ctx.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
                    elif not _compare_partial(ctx, o, u, key, props_o[key], True):
                        ctx.add(
                            "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
                            if props_o[key] is False
                            else "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"
                        )
                elif key not in props_o:
                    if _object_open(o):
                        if _classify(props_u[key], u.doc).kind == "empty":
                            ctx.add(
                                "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                            )
                        elif key in req_u:
                            ctx.add(
                                "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"
                                if _has_default(props_u[key])
                                else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
                            )
                        else:
                            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
                    else:
                        _compare_partial(ctx, o, u, key, props_u[key], False)
                        if key in req_u:
                            ctx.add(
                                "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
                                if _has_default(props_u[key])
                                else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
                            )
                        else:
                            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
                else:
                    _compare(ctx, props_o[key], props_u[key], (o.doc, u.doc))
    with ctx.enter("dependencies"):
        deps_o, deps_u = _dict(_get(o, "dependencies")), _dict(_get(u, "dependencies"))
        for key in list(deps_o) + [k for k in deps_u if k not in deps_o]:
            with ctx.enter(key):
                do, du = deps_o.get(key, _MISSING), deps_u.get(key, _MISSING)
                if isinstance(do, list) or isinstance(du, list):
                    if du is _MISSING:
                        ctx.add("DEPENDENCY_ARRAY_REMOVED")
                    elif do is _MISSING:
                        ctx.add("DEPENDENCY_ARRAY_ADDED")
                    elif (
                        isinstance(do, list)
                        and isinstance(du, list)
                        and set(do) != set(du)
                    ):
                        ctx.add(
                            "DEPENDENCY_ARRAY_EXTENDED"
                            if set(du) >= set(do)
                            else (
                                "DEPENDENCY_ARRAY_NARROWED"
                                if set(do) >= set(du)
                                else "DEPENDENCY_ARRAY_CHANGED"
                            )
                        )
                elif du is _MISSING:
                    ctx.add("DEPENDENCY_SCHEMA_REMOVED")
                elif do is _MISSING:
                    ctx.add("DEPENDENCY_SCHEMA_ADDED")
                else:
                    _compare(ctx, do, du, (o.doc, u.doc))
    _compare_additional(
        ctx,
        "additionalProperties",
        _get(o, "additionalProperties"),
        _get(u, "additionalProperties"),
        (o.doc, u.doc),
    )
    _limits(ctx, o, u, "maxProperties", "MAX_PROPERTIES")
    _limits(ctx, o, u, "minProperties", "MIN_PROPERTIES")


def _compare_additional(
    ctx: _Context, keyword: str, ao: Any, au: Any, docs: tuple[Any, Any]
) -> None:
    """``additionalProperties`` or ``additionalItems`` (``keyword``; ``ao`` / ``au``
    its value on each side, None when absent): ``false`` on one side only is
    ``ADDITIONAL_{PROPERTIES,ITEMS}_ADDED`` / ``_REMOVED``; a schema on one side only
    ``_NARROWED`` (the update's) / ``_EXTENDED`` (the original's); schemas on both
    sides are compared (Confluent's ``ObjectSchemaDiff`` / ``ArraySchemaDiff``)."""
    change = (
        "ADDITIONAL_PROPERTIES"
        if keyword == "additionalProperties"
        else "ADDITIONAL_ITEMS"
    )
    with ctx.enter(keyword):
        permits_o, permits_u = ao is not False, au is not False
        if permits_o != permits_u:
            ctx.add(f"{change}_ADDED" if permits_u else f"{change}_REMOVED")
        elif not isinstance(ao, dict) and isinstance(au, dict):
            ctx.add(f"{change}_NARROWED")
        elif isinstance(ao, dict) and not isinstance(au, dict):
            ctx.add(f"{change}_EXTENDED")
        elif isinstance(ao, dict) and isinstance(au, dict):
            _compare(ctx, ao, au, docs)


def _items(s: _Schema) -> tuple[Any, list[Any], Any]:
    """(schema of all items, positional item schemas, additional items) in the draft's
    spelling (``items`` object or array + ``additionalItems``; ``prefixItems`` + ``items``).
    """
    items, prefix = _get(s, "items"), _get(s, "prefixItems")
    if isinstance(prefix, list):
        return _MISSING, prefix, items if items is not None else None
    if isinstance(items, list):
        return _MISSING, items, _get(s, "additionalItems")
    return (items if items is not None else _MISSING), [], _get(s, "additionalItems")


def _compare_covered(
    ctx: _Context,
    original: Any,
    update: Any,
    docs: tuple[Any, Any],
    change: str,
) -> None:
    """A property or item on one side only, compared with the schema of the other
    side's partially open content model (``additionalProperties``, a matching
    ``patternProperties``, ``additionalItems``): its differences, then
    ``{change}_IS_COVERED_BY_...`` or ``{change}_NOT_COVERED_BY_...``."""
    sub = ctx.sub()
    _compare(sub, original, update, docs)
    ctx.differences += sub.differences
    ctx.add(
        f"{change}_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
        if sub.compatible
        else f"{change}_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    )


def _compare_array(ctx: _Context, o: _Schema, u: _Schema) -> None:
    all_o, pos_o, add_o = _items(o)
    all_u, pos_u, add_u = _items(u)
    with ctx.enter("items"):
        if all_o is not _MISSING or all_u is not _MISSING:
            _compare(ctx, all_o, all_u, (o.doc, u.doc))
    open_o, open_u = add_o is None or add_o is True, add_u is None or add_u is True
    for index in range(max(len(pos_o), len(pos_u))):
        with ctx.enter("items", str(index)):
            if index < len(pos_o) and index < len(pos_u):
                _compare(ctx, pos_o[index], pos_u[index], (o.doc, u.doc))
            elif index < len(pos_o):
                if open_u:
                    ctx.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
                elif isinstance(add_u, dict):
                    _compare_covered(
                        ctx, pos_o[index], add_u, (o.doc, u.doc), "ITEM_REMOVED"
                    )
                elif pos_o[index] is False:
                    ctx.add("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
                else:
                    ctx.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")
            elif open_o:
                if _classify(pos_u[index], u.doc).kind == "empty":
                    ctx.add("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
                else:
                    ctx.add("ITEM_ADDED_TO_OPEN_CONTENT_MODEL")
            elif isinstance(add_o, dict):
                _compare_covered(ctx, add_o, pos_u[index], (o.doc, u.doc), "ITEM_ADDED")
            else:
                ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")
    _compare_additional(ctx, "additionalItems", add_o, add_u, (o.doc, u.doc))
    _limits(ctx, o, u, "maxItems", "MAX_ITEMS")
    _limits(ctx, o, u, "minItems", "MIN_ITEMS")
    uo, uu = _get(o, "uniqueItems") is True, _get(u, "uniqueItems") is True
    if uo != uu:
        ctx.add("UNIQUE_ITEMS_REMOVED" if uo else "UNIQUE_ITEMS_ADDED", "uniqueItems")


def json_differences(original: ParsedSchema, update: ParsedSchema) -> list[Difference]:
    """Every difference from ``original`` (the writer) to ``update`` (the reader)."""
    o, u = original.model, update.model
    assert isinstance(o, JsonSchemaModel) and isinstance(u, JsonSchemaModel)
    ctx = _Context((o.documents, u.documents))
    _compare(ctx, o.schema, u.schema, (o.schema, u.schema))
    return ctx.differences


def json_compatibility_errors(
    reader: ParsedSchema, writer: ParsedSchema, reader_role: str, writer_role: str
) -> list[str]:
    """Confluent's messages for the incompatible differences when ``reader`` reads data
    valid under ``writer``; the roles ("new", "old") fill the descriptions."""
    try:
        differences = json_differences(writer, reader)
    except TooComplex:
        return [
            '{errorType:"SCHEMA_TOO_COMPLEX", description:"The schemas nest combined '
            'schemas too deeply to be compared; they are treated as incompatible"}'
        ]
    return [
        d.describe(reader_role, writer_role) for d in differences if not d.compatible
    ]
