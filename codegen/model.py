"""The typed model of Kafka's message definitions, and its per-version views.

``MessageSpec.from_json`` validates a parsed definition as Kafka's own generator does
(``MessageSpec``/``FieldSpec`` in Kafka's ``generator`` module); ``MessageSpec.at(v)``
flattens one version into :class:`ClassView` objects whose fields already know whether
they are present, nullable, tagged and compact, so templates never do version
arithmetic.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from codegen.naming import attribute_name

__all__ = [
    "ModelError",
    "Versions",
    "FieldSpec",
    "StructSpec",
    "MessageSpec",
    "FieldView",
    "ClassView",
    "PRIMITIVES",
    "MESSAGE_TYPES",
    "RECORD_FAMILY",
    "renumber_coordinator_key",
]

# These tables restate kproto.meta.PRIMITIVE_TYPES and kproto.serial.primitives on
# purpose: the generator must run even when the package it generates is stale or
# broken (importing kproto imports generated modules), so codegen never imports it.
PRIMITIVES = frozenset(
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
_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_PY_TYPES = {
    "bool": "bool",
    "int8": "int",
    "int16": "int",
    "uint16": "int",
    "int32": "int",
    "uint32": "int",
    "int64": "int",
    "float64": "float",
    "string": "str",
    "bytes": "bytes",
    "records": "bytes",
    "uuid": "uuid.UUID",
}


class ModelError(ValueError):
    """A definition that parses but breaks one of Kafka's rules."""


#: The JSON ``type`` values Kafka's generator knows (``MessageSpecType`` in Kafka's
#: ``generator`` module). ``coordinator-key``/``coordinator-value`` (Kafka 4.1+) are
#: the ``__consumer_offsets``/``__transaction_state``/share-coordinator records that
#: the 2024 source typed ``data``; their ``apiKey`` is the record type id.
MESSAGE_TYPES = frozenset(
    {
        "request",
        "response",
        "header",
        "data",
        "metadata",
        "coordinator-key",
        "coordinator-value",
    }
)
#: Types that name one family of records: a newer file may retype an older ``data``
#: message as a coordinator record without changing its wire form.
RECORD_FAMILY = frozenset({"data", "coordinator-key", "coordinator-value"})


def _shift_versions(text: Any, by: int) -> Any:
    """A version-range string moved up by ``by`` (``"0"`` -> ``"2"``, ``"0+"`` -> ``"2+"``)."""
    if not isinstance(text, str) or text.strip() == "none":
        return text
    v = Versions.parse(text)
    hi = None if v.hi is None else v.hi + by
    return str(Versions(v.lo + by, hi))


def renumber_coordinator_key(data: dict[str, Any]) -> dict[str, Any]:
    """A ``coordinator-key`` definition renumbered so its version is its record type.

    Kafka 4.1+ key files say ``"validVersions": "0"`` and carry the record type id
    (the int16 prefix written before the key) in ``apiKey``; the 2024 files used that
    id as the key's version (``GroupMetadataKey`` v2). kproto keeps the 2024 meaning,
    so ``data_type("GroupMetadataKey", 2)`` is the key written with prefix 2 whichever
    file it came from: every version range in the file moves up by ``apiKey``.

    Raises:
        ModelError: the file is not a single-version key with an ``apiKey``.
    """
    record_type = data.get("apiKey")
    if not isinstance(record_type, int) or data.get("validVersions") != "0":
        raise ModelError(
            f"{data.get('name')}: a coordinator-key needs an int apiKey and "
            f"validVersions '0', got {record_type!r} and {data.get('validVersions')!r}"
        )
    keys = frozenset(
        {
            "validVersions",
            "flexibleVersions",
            "versions",
            "nullableVersions",
            "taggedVersions",
        }
    )

    def fix(obj: dict[str, Any]) -> dict[str, Any]:
        out = {
            k: (_shift_versions(v, record_type) if k in keys else v)
            for k, v in obj.items()
        }
        if "fields" in out:
            out["fields"] = [fix(f) for f in out["fields"]]
        if "commonStructs" in out:
            out["commonStructs"] = [fix(c) for c in out["commonStructs"]]
        return out

    return fix(data)


@attrs.frozen
class Versions:
    """An inclusive version range; ``hi`` is ``None`` for open-ended (``"3+"``).

    The empty range (``"none"``) has ``lo > hi``.
    """

    lo: int
    hi: int | None

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return cls(1, 0)
        text = text.strip()
        if m := re.fullmatch(r"(\d+)\+", text):
            return cls(int(m[1]), None)
        if m := re.fullmatch(r"(\d+)-(\d+)", text):
            return cls(int(m[1]), int(m[2]))
        if m := re.fullmatch(r"\d+", text):
            return cls(int(text), int(text))
        raise ModelError(f"bad version range {text!r}")

    @property
    def empty(self) -> bool:
        return self.hi is not None and self.lo > self.hi

    def __contains__(self, version: int) -> bool:
        return self.lo <= version and (self.hi is None or version <= self.hi)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi is None:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


@attrs.frozen
class FieldSpec:
    """One field as written in the JSON (all versions)."""

    name: str
    type: str
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    default: Any
    ignorable: bool
    map_key: bool
    zero_copy: bool
    entity_type: str | None
    flexible_versions: Versions | None
    about: str
    fields: tuple[FieldSpec, ...]
    raw: dict[str, Any] = attrs.field(eq=False, repr=False)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str) -> FieldSpec:
        name = data["name"]
        where = f"{where}.{name}"
        tagged = Versions.parse(data.get("taggedVersions"))
        # A field given only taggedVersions exists in exactly those versions
        # (TransactionLogValue.json does this; Kafka's FieldSpec accepts it).
        versions = Versions.parse(data.get("versions", data.get("taggedVersions")))
        tag = data.get("tag")
        if tag is not None:
            tag = int(tag)  # some files spell it as a string: "tag": "0"
        if (tag is None) != tagged.empty:
            raise ModelError(f"{where}: 'tag' and 'taggedVersions' go together")
        flexible = data.get("flexibleVersions")
        spec = cls(
            name=name,
            type=data["type"],
            versions=versions,
            nullable_versions=Versions.parse(data.get("nullableVersions")),
            tagged_versions=tagged,
            tag=tag,
            default=data.get("default"),
            ignorable=bool(data.get("ignorable", False)),
            map_key=bool(data.get("mapKey", False)),
            zero_copy=bool(data.get("zeroCopy", False)),
            entity_type=data.get("entityType"),
            flexible_versions=None if flexible is None else Versions.parse(flexible),
            about=data.get("about", ""),
            fields=tuple(cls.from_json(f, where) for f in data.get("fields", [])),
            raw=data,
        )
        if spec.fields and not spec.is_struct:
            raise ModelError(f"{where}: a {spec.type} field cannot have fields")
        if not spec.nullable_versions.empty and spec.element_type in _INT_RANGES:
            if not spec.is_array:
                raise ModelError(f"{where}: {spec.type} cannot be nullable")
        return spec


@attrs.frozen
class StructSpec:
    """A struct: a field's inline ``fields`` or an entry of ``commonStructs``."""

    name: str
    versions: Versions
    fields: tuple[FieldSpec, ...]
    about: str


@attrs.frozen
class MessageSpec:
    """One JSON definition file, validated."""

    name: str
    type: str
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    latest_version_unstable: bool
    fields: tuple[FieldSpec, ...]
    common_structs: dict[str, StructSpec]
    source: str

    @property
    def unstable_versions(self) -> frozenset[int]:
        """The versions this file marks unstable: its highest one when
        ``latestVersionUnstable`` is true (Kafka's ``MessageSpec.latestVersionUnstable``),
        else none."""
        vv = self.valid_versions
        if not self.latest_version_unstable or vv.empty or vv.hi is None:
            return frozenset()
        return frozenset({vv.hi})

    @classmethod
    def from_json(cls, data: dict[str, Any], source: str) -> MessageSpec:
        """Validate one parsed definition; ``coordinator-key`` files are renumbered
        (see :func:`renumber_coordinator_key`).

        Raises:
            ModelError: an unknown ``type``, a bad version range or field rule.
        """
        name = data["name"]
        if data.get("type") not in MESSAGE_TYPES:
            raise ModelError(f"{source}: unknown message type {data.get('type')!r}")
        if data["type"] == "coordinator-key":
            data = renumber_coordinator_key(data)
        commons = {}
        for struct in data.get("commonStructs", []):
            commons[struct["name"]] = StructSpec(
                name=struct["name"],
                versions=Versions.parse(struct.get("versions", "0+")),
                fields=tuple(
                    FieldSpec.from_json(f, f"{source}:{struct['name']}")
                    for f in struct.get("fields", [])
                ),
                about="",
            )
        return cls(
            name=name,
            type=data["type"],
            api_key=data.get("apiKey"),
            valid_versions=Versions.parse(data.get("validVersions")),
            flexible_versions=Versions.parse(data.get("flexibleVersions", "none")),
            latest_version_unstable=bool(data.get("latestVersionUnstable", False)),
            fields=tuple(
                FieldSpec.from_json(f, f"{source}:{name}")
                for f in data.get("fields", [])
            ),
            common_structs=commons,
            source=source,
        )

    def at(self, version: int) -> list[ClassView]:
        """The classes of one version, nested structs before the classes using them."""
        if version not in self.valid_versions:
            raise ModelError(
                f"{self.name} has no version {version} ({self.valid_versions})"
            )
        flexible = version in self.flexible_versions
        out: list[ClassView] = []
        seen: dict[str, ClassView] = {}
        top = StructSpec(self.name, self.valid_versions, self.fields, "")
        self._view(top, version, flexible, out, seen, top_level=True, about="")
        return out

    def _struct_for(self, field: FieldSpec) -> StructSpec:
        if field.fields:
            return StructSpec(
                field.element_type, field.versions, field.fields, field.about
            )
        common = self.common_structs.get(field.element_type)
        if common is None:
            raise ModelError(
                f"{self.source}: unknown struct type {field.element_type!r}"
            )
        return attrs.evolve(common, about=field.about)

    def _view(
        self,
        struct: StructSpec,
        version: int,
        flexible: bool,
        out: list[ClassView],
        seen: dict[str, ClassView],
        *,
        top_level: bool,
        about: str,
    ) -> ClassView:
        if struct.name in seen:
            return seen[struct.name]
        fields: list[FieldView] = []
        for field in struct.fields:
            if version not in field.versions:
                continue
            child = None
            element_child = None
            if field.is_struct:
                view = self._view(
                    self._struct_for(field),
                    version,
                    flexible,
                    out,
                    seen,
                    top_level=False,
                    about=field.about,
                )
                if field.is_array:
                    element_child = view
                else:
                    child = view
            fields.append(
                FieldView.build(self, field, version, flexible, child or element_child)
            )
        names = [f.py_name for f in fields]
        if len(set(names)) != len(names):
            raise ModelError(
                f"{self.source}: {struct.name} has duplicate field names {names}"
            )
        tags = [f.tag for f in fields if f.tag is not None]
        if len(set(tags)) != len(tags):
            raise ModelError(f"{self.source}: {struct.name} v{version} repeats a tag")
        cv = ClassView(
            name=struct.name,
            message=self,
            version=version,
            flexible=flexible,
            top_level=top_level,
            fields=tuple(fields),
            about=about,
            struct_versions=str(struct.versions),
        )
        seen[struct.name] = cv
        out.append(cv)
        return cv


def _parse_default(field: FieldSpec, wire_type: str, nullable: bool) -> Any:
    """The Python default value of a field at one version (Kafka's rules)."""
    raw = field.default
    if raw == "null" or (raw is None and "default" in field.raw):
        if nullable:
            return None
        raw = None  # not nullable at this version: Kafka's implicit default applies
    if field.is_array:
        if raw not in (None, ""):
            raise ModelError(
                f"{field.name}: arrays only take a null default, got {raw!r}"
            )
        return ()
    if field.is_struct:
        if raw not in (None, ""):
            raise ModelError(
                f"{field.name}: structs only take a null default, got {raw!r}"
            )
        return "STRUCT"
    t = wire_type
    if t in _INT_RANGES:
        if raw is None or raw == "":
            return 0
        text = str(raw).strip()
        value = int(text, 16) if text.lower().startswith(("0x", "-0x")) else int(text)
        lo, hi = _INT_RANGES[t]
        if not lo <= value <= hi:
            raise ModelError(f"{field.name}: default {raw!r} does not fit {t}")
        return value
    if t == "float64":
        return 0.0 if raw in (None, "") else float(raw)
    if t == "bool":
        if raw in (None, ""):
            return False
        if isinstance(raw, bool):
            return raw
        if str(raw).lower() not in ("true", "false"):
            raise ModelError(f"{field.name}: bad bool default {raw!r}")
        return str(raw).lower() == "true"
    if t == "string":
        return "" if raw is None else str(raw)
    if t == "bytes":
        if raw not in (None, ""):
            raise ModelError(f"{field.name}: bytes only take a null default")
        return b""
    if t == "records":
        return None if nullable else b""
    if t == "uuid":
        if raw not in (None, "", "AAAAAAAAAAAAAAAAAAAAAA"):
            raise ModelError(f"{field.name}: unsupported uuid default {raw!r}")
        return "ZERO_UUID"
    raise ModelError(f"{field.name}: unknown type {t!r}")


@attrs.frozen
class FieldView:
    """One field of one class at one version: everything a template needs."""

    spec: FieldSpec
    py_name: str
    wire_type: str
    kind: str
    nullable: bool
    compact: bool
    tag: int | None
    default: Any
    child: ClassView | None

    @classmethod
    def build(
        cls,
        message: MessageSpec,
        field: FieldSpec,
        version: int,
        flexible: bool,
        child: ClassView | None,
    ) -> FieldView:
        nullable = version in field.nullable_versions
        tag = field.tag if version in field.tagged_versions else None
        if tag is not None and not flexible:
            raise ModelError(
                f"{message.source}: {field.name} is tagged in non-flexible v{version}"
            )
        compact = flexible
        if field.flexible_versions is not None:
            compact = version in field.flexible_versions
        kind = (
            "array"
            if field.is_array
            else ("struct" if field.is_struct else "primitive")
        )
        default = _parse_default(field, field.element_type, nullable)
        return cls(
            spec=field,
            py_name=attribute_name(field.name),
            wire_type=field.type,
            kind=kind,
            nullable=nullable,
            compact=compact,
            tag=tag,
            default=default,
            child=child,
        )

    @property
    def element_primitive(self) -> str | None:
        return None if self.spec.is_struct else self.spec.element_type

    @property
    def annotation(self) -> str:
        elem = (
            self.spec.element_type
            if self.spec.is_struct
            else _PY_TYPES[self.spec.element_type]
        )
        ann = f"tuple[{elem}, ...]" if self.spec.is_array else elem
        return f"{ann} | None" if self.nullable else ann

    @property
    def default_code(self) -> str:
        d = self.default
        if d == "ZERO_UUID":
            return "ZERO_UUID"
        if d == "STRUCT":
            return f"{self.spec.element_type}()"
        return repr(d)

    def doc(self) -> str:
        """The field docstring: Kafka's ``about``, then the wire facts."""
        facts = [self.wire_type]
        if self.spec.name.endswith("Ms"):
            facts.append("milliseconds")
        facts.append(f"versions {self.spec.versions}")
        if not self.spec.nullable_versions.empty:
            facts.append(f"nullable in versions {self.spec.nullable_versions}")
        if self.tag is not None:
            facts.append(f"tag {self.tag}")
        if self.default not in ("STRUCT",) and self.spec.default is not None:
            facts.append(f"default {self.spec.default!r}")
        about = self.spec.about.strip()
        if about and not about.endswith("."):
            about += "."
        return f"{about} {'; '.join(facts)}.".strip()


@attrs.frozen
class ClassView:
    """One generated class: a message or nested struct at one version."""

    name: str
    message: MessageSpec
    version: int
    flexible: bool
    top_level: bool
    fields: tuple[FieldView, ...]
    about: str
    struct_versions: str
