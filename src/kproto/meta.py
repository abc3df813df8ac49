"""Run-time field metadata of the generated entities.

Every generated entity is a frozen, slotted attrs class. Each of its attrs fields
carries one :class:`Wire` object in its metadata under the key :data:`WIRE`; that
object says how the field travels on the wire *at this class's version* (Kafka type,
compact or classic encoding, nullability, tag, default, nested class). The readers and
writers in :mod:`kproto.serial`, the hypothesis strategies in the tests and the Spark
schema mapping in :mod:`kproto.spark` all derive their behaviour from these objects;
nothing parses annotations.

Class-level facts (message name, kind, version, flexibility, source file) live in one
namespaced class attribute, ``__kproto_entity__``, read with :func:`entity_info`.

Example::

    >>> import attrs
    >>> from kproto.meta import wire
    >>> from kproto.schema.metadata.v12 import MetadataResponse
    >>> [wire(f).type for f in attrs.fields(MetadataResponse)][:2]
    ['int32', '[]MetadataResponseBroker']
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal, TypeVar

import attrs

__all__ = [
    "WIRE",
    "ZERO_UUID",
    "PRIMITIVE_TYPES",
    "Wire",
    "EntityInfo",
    "wire",
    "wire_fields",
    "entity_info",
    "is_entity",
    "build_entity",
]

#: The attrs metadata key under which every generated field keeps its :class:`Wire`.
WIRE: Final = "kproto"

#: The all-zero uuid (Kafka's ``Uuid.ZERO_UUID``): the default of every ``uuid``
#: field, and the topic id that means "none" (a topic named by name, KIP-516).
ZERO_UUID: Final = uuid.UUID(int=0)

#: Kafka's primitive wire types, as spelled in the JSON message definitions.
PRIMITIVE_TYPES: Final = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "float64",
        "string",
        "bytes",
        "records",
        "uuid",
    }
)

Kind = Literal["primitive", "array", "struct", "unknown_tags"]


@attrs.frozen(slots=True, kw_only=True)
class Wire:
    """How one field of one entity version is encoded.

    Attributes:
        type: the Kafka type as written in the JSON definition: a primitive such as
            ``"int32"`` or ``"string"``, ``"[]T"`` for an array, or a struct name.
            ``"unknown_tagged_fields"`` marks the catch-all field that keeps tagged
            fields the schema does not know.
        kind: ``"primitive"``, ``"array"``, ``"struct"`` or ``"unknown_tags"``.
        element: for arrays, the :class:`Wire` of one element (never nullable,
            never tagged); ``None`` otherwise.
        entity: for structs, the generated attrs class of the nested struct;
            ``None`` otherwise (arrays of structs name it on ``element``).
        nullable: ``None`` is a valid value at this version.
        compact: this field uses the compact (flexible) encoding: unsigned-varint
            lengths. False in non-flexible versions and for fields whose own
            ``flexibleVersions`` is ``"none"`` (the request header's ``client_id``).
        tag: the tag number if the field is a tagged field at this version, else
            ``None``. Tagged fields equal to their default are not written.
        default: the Kafka default at this version (the attrs default too); for
            struct fields, an instance of ``entity`` with its own defaults.
        name: the Kafka field name (``"ThrottleTimeMs"``).
        versions: the field's version range in the JSON (``"3+"``), for reference.
        nullable_versions / tagged_versions: likewise, or ``None``.
        ignorable, map_key, zero_copy, entity_type: the JSON flags of that name.
    """

    type: str
    kind: Kind = "primitive"
    element: Wire | None = None
    entity: builtins.type | None = None
    nullable: bool = False
    compact: bool = False
    tag: int | None = None
    default: Any = None
    name: str = ""
    versions: str = ""
    nullable_versions: str | None = None
    tagged_versions: str | None = None
    ignorable: bool = False
    map_key: bool = False
    zero_copy: bool = False
    entity_type: str | None = None

    @property
    def primitive(self) -> str | None:
        """The primitive type of this field (or of its elements), else ``None``."""
        if self.kind == "primitive":
            return self.type
        if self.kind == "array" and self.element is not None:
            return self.element.primitive
        return None


@attrs.frozen(slots=True, kw_only=True)
class EntityInfo:
    """Facts about a generated class, kept in its ``__kproto_entity__`` attribute.

    Attributes:
        name: the JSON struct name (``"MetadataResponseBroker"``) or message name.
        message: the JSON ``name`` of the message the class belongs to.
        message_type: the JSON ``type`` of the newest file defining the message:
            ``request``, ``response``, ``header``, ``data``, ``metadata`` (KRaft and
            tiered-storage records), or ``coordinator-key``/``coordinator-value``
            (``__consumer_offsets``, ``__transaction_state`` and share-coordinator
            records, typed ``data`` before Kafka 4.1).
        version: the message version this class encodes.
        flexible: whether this version uses the flexible (compact, tagged) encoding.
        top_level: True for the message class itself, False for nested structs.
        api_key: the API key for requests and responses; the record type for KRaft
            metadata and coordinator records when the file gives one; else ``None``.
        source: the JSON file the class was generated from, as ``folder/File.json``.
        unstable: True when this version is the latest of a file marked
            ``latestVersionUnstable`` (not yet part of Kafka's released protocol; a
            broker may change it). False for every other class. The same flag is the
            class attribute ``__unstable__``.
    """

    name: str
    message: str
    message_type: str
    version: int
    flexible: bool
    top_level: bool
    api_key: int | None
    source: str
    unstable: bool = False


UNKNOWN_TAGS: Final = Wire(
    type="unknown_tagged_fields", kind="unknown_tags", default=()
)
"""The :class:`Wire` of every entity's ``unknown_tagged_fields`` field: a tuple of
``(tag, raw bytes)`` pairs that the schema does not know, kept on decode and written
back byte for byte (flexible versions only)."""


def wire(field: attrs.Attribute[Any]) -> Wire:
    """Return the :class:`Wire` of one attrs field of a generated entity.

    Raises:
        KeyError: the field carries no kproto metadata (not a generated entity).
    """
    return field.metadata[WIRE]  # type: ignore[no-any-return]


def wire_fields(cls: type) -> Iterator[tuple[attrs.Attribute[Any], Wire]]:
    """Yield ``(attrs field, Wire)`` for every field of a generated entity class, in
    wire order (the order the fields are encoded in)."""
    for field in attrs.fields(cls):
        yield field, field.metadata[WIRE]


def entity_info(cls_or_entity: Any) -> EntityInfo:
    """Return the :class:`EntityInfo` of a generated class or instance.

    Raises:
        TypeError: the argument is not a generated kproto entity.
    """
    cls = cls_or_entity if isinstance(cls_or_entity, type) else type(cls_or_entity)
    info = getattr(cls, "__kproto_entity__", None)
    if not isinstance(info, EntityInfo):
        raise TypeError(f"{cls!r} is not a generated kproto entity")
    return info


def is_entity(obj: Any) -> bool:
    """True if ``obj`` is a generated entity class or an instance of one."""
    cls = obj if isinstance(obj, type) else type(obj)
    return isinstance(getattr(cls, "__kproto_entity__", None), EntityInfo)


_E = TypeVar("_E")


def build_entity(
    cls: type[_E],
    fields: Mapping[str, Any],
    *,
    path: str = "",
    drop_absent: bool = False,
) -> _E:
    """Build an entity of ``cls`` (one version of a message) from plain values,
    recursively: nested structs may be mappings and arrays lists; both become the
    nested classes and tuples of ``cls``'s version, so one call serves every
    version. Fields not given keep their Kafka defaults.

    With ``drop_absent`` (what a server answering every version wants), names the
    version does not have are dropped and ``None`` for a field that is not
    nullable at this version means its default, as Kafka's generated ``write``
    methods skip fields absent at the version written. Without it, an unknown name
    is an error.

    Raises:
        TypeError: without ``drop_absent``, a name is not a field of ``cls`` at this
            version (the message names the path and the fields that exist).
    """
    if drop_absent:
        return _build_dropping(cls, fields)
    known = _wire_map(cls)
    values: dict[str, Any] = {}
    for name, value in fields.items():
        w = known.get(name)
        where = f"{path}.{name}" if path else f"{cls.__name__}.{name}"
        if w is None:
            raise TypeError(
                f"{where}: no such field in {cls.__qualname__} v{entity_info(cls).version}; "
                f"fields: {', '.join(known)}"
            )
        values[name] = _build_value(w, value, where, drop_absent)
    return cls(**values)


_WIRE_MAPS: dict[type, dict[str, Wire]] = {}


def _wire_map(cls: type) -> dict[str, Wire]:
    """``{field name: Wire}`` of a generated entity class (built once per class)."""
    known = _WIRE_MAPS.get(cls)
    if known is None:
        known = _WIRE_MAPS[cls] = {f.name: w for f, w in wire_fields(cls)}
    return known


def _build_dropping(cls: type[_E], fields: Mapping[str, Any]) -> _E:
    """:func:`build_entity` with ``drop_absent``: the same values, without the
    error paths that only a strict build can need (a server builds every response
    this way)."""
    known = _wire_map(cls)
    values: dict[str, Any] = {}
    for name, value in fields.items():
        w = known.get(name)
        if w is None:
            continue
        if value is None:
            if w.nullable:
                values[name] = None
            continue
        values[name] = _value_dropping(w, value)
    return cls(**values)


def _value_dropping(w: Wire, value: Any) -> Any:
    """:func:`_build_value` with ``drop_absent``, without the error path."""
    if value is None:
        return None
    kind = w.kind
    if kind == "struct":
        if w.entity is not None and isinstance(value, Mapping):
            return _build_dropping(w.entity, value)
        return value
    if kind == "array" and isinstance(value, list | tuple):
        element = w.element
        if element is None:
            return tuple(value)
        if element.kind == "struct" and element.entity is not None:
            entity = element.entity
            return tuple(
                _build_dropping(entity, v) if isinstance(v, Mapping) else v
                for v in value
            )
        return tuple(_value_dropping(element, v) for v in value)
    return value


def _build_value(w: Wire, value: Any, path: str, drop_absent: bool) -> Any:
    if value is None:
        return None
    if w.kind == "struct" and w.entity is not None and isinstance(value, Mapping):
        return build_entity(w.entity, value, path=path, drop_absent=drop_absent)
    if w.kind == "array" and isinstance(value, list | tuple):
        element = w.element
        if element is None:
            return tuple(value)
        return tuple(
            _build_value(element, v, f"{path}[{i}]", drop_absent)
            for i, v in enumerate(value)
        )
    return value
