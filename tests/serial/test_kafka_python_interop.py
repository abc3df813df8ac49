"""Cross-check kproto's encoding against kafka-python 3.0.12's schema-based classes.

For every request and response version that both libraries define, one deterministic
entity is built from kproto's :class:`~kproto.meta.Wire` metadata by
:func:`tests.strategies.sample_entity` (non-default numbers and strings, two-element
arrays, nested structs, nullable values present, tagged fields set), mirrored field by field into kafka-python's classes, and encoded by both: the
bytes must be identical, and kproto must decode kafka-python's bytes back to the same
entity.

kafka-python names fields by snake-casing the JSON name on every capital letter; the
two libraries' fields are paired by position (untagged fields in wire order) and by tag
number instead of by name, and the names are checked to agree once acronyms are
folded. kafka-python patches MetadataResponse's two ``AuthorizedOperations`` int32
fields into a set of bit numbers; the mirror converts those.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Any

import attrs
import pytest

from kproto.index import API_VERSIONS, request_type, response_type
from kproto.meta import Wire, entity_info, wire_fields
from kproto.serial import decode, encode
from tests.strategies import sample_entity

kafka_protocol = pytest.importorskip("kafka.protocol")
from kafka.protocol.api_message import ApiMessage  # noqa: E402

# ------------------------------------------------------------------ kafka-python side


def _kafka_classes() -> dict[tuple[int, str], type]:
    """kafka-python's primary message classes by (api_key, "request"/"response")."""
    for mod in pkgutil.walk_packages(kafka_protocol.__path__, "kafka.protocol."):
        if any(part in mod.name for part in (".old", ".schemas", "generate_stubs")):
            continue
        try:
            importlib.import_module(mod.name)
        except Exception:  # pragma: no cover - an optional module that does not import
            continue
    found: dict[tuple[int, str], type] = {}
    todo = list(ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is not None or "_json" not in vars(cls):
            continue
        found.setdefault((cls.API_KEY, cls.type), cls)
    return found


KAFKA = _kafka_classes()


def _cases() -> list[Any]:
    cases = []
    for api_key, versions in sorted(API_VERSIONS.items()):
        for kind, lookup in (("request", request_type), ("response", response_type)):
            for version in versions:
                ours = lookup(api_key, version)
                theirs = KAFKA.get((int(api_key), kind))
                case_id = f"{ours.__name__}-v{version}"
                marks = []
                if theirs is None:
                    marks.append(
                        pytest.mark.skip(reason=f"kafka-python has no {ours.__name__}")
                    )
                elif not version <= theirs.max_version:
                    marks.append(
                        pytest.mark.skip(
                            reason=f"kafka-python's {ours.__name__} stops at v{theirs.max_version}"
                        )
                    )
                cases.append(
                    pytest.param(ours, theirs, version, id=case_id, marks=marks)
                )
    return cases


# ------------------------------------------------------------- mirror into kafka-python


def _fold(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


#: Fields Kafka renamed after the files kafka-python ships (same wire layout):
#: kproto's folded name -> kafka-python's. TxnOffsetCommitRequest's GenerationId
#: became GenerationIdOrMemberEpoch (KIP-848) in the 2026-08-23 trunk files.
_RENAMED = {"generationidormemberepoch": "generationid"}


def _pair_fields(cls: type, struct: Any, version: int) -> list[tuple[str, Wire, Any]]:
    """Pair kproto's fields of ``cls`` with kafka-python's fields of ``struct``."""
    ours = [(f.name, w) for f, w in wire_fields(cls) if w.kind != "unknown_tags"]
    plain = [(n, w) for n, w in ours if w.tag is None]
    tagged = {w.tag: (n, w) for n, w in ours if w.tag is not None}
    theirs_plain = struct.untagged_fields(version)
    theirs_tagged = {f.tag: f for f in struct.tagged_fields(version)._fields}
    assert len(plain) == len(theirs_plain), (
        f"{cls.__name__}: kproto has {[n for n, _ in plain]}, "
        f"kafka-python has {[f.name for f in theirs_plain]}"
    )
    assert set(tagged) == set(theirs_tagged), f"{cls.__name__}: tags differ"
    pairs = [(n, w, f) for (n, w), f in zip(plain, theirs_plain, strict=False)]
    pairs += [(tagged[t][0], tagged[t][1], theirs_tagged[t]) for t in sorted(tagged)]
    for name, _w, field in pairs:
        folded = {_fold(name), _RENAMED.get(_fold(name), ""), "authorizedoperations"}
        assert _fold(field.name) in folded, (
            name,
            field.name,
        )
    return pairs


def _bits(value: int) -> set[int] | None:
    if value == -(2**31):
        return None
    return {i for i in range(32) if (value & 0xFFFFFFFF) >> i & 1}


def _mirror_value(w: Wire, field: Any, value: Any, version: int) -> Any:
    if value is None:
        return None
    if w.kind == "array":
        assert w.element is not None
        inner = field.array_of
        return [_mirror_value(w.element, inner, v, version) for v in value]
    if w.kind == "struct":
        return _mirror_struct(value, field, version)
    if getattr(field, "_type_str", None) == "bitfield":
        return _bits(value)
    return value


def _mirror_struct(entity: Any, field: Any, version: int) -> Any:
    kwargs = {
        theirs.name: _mirror_value(w, theirs, getattr(entity, name), version)
        for name, w, theirs in _pair_fields(type(entity), field, version)
    }
    return field.data_class(**kwargs)


def _mirror(entity: Any, kafka_cls: type, version: int) -> Any:
    kwargs = {
        theirs.name: _mirror_value(w, theirs, getattr(entity, name), version)
        for name, w, theirs in _pair_fields(type(entity), kafka_cls._struct, version)
    }
    return kafka_cls[version](**kwargs)


# ------------------------------------------------------------------------------ tests


@pytest.mark.parametrize(("ours", "theirs", "version"), _cases())
def test_same_bytes_as_kafka_python(ours: type, theirs: type, version: int) -> None:
    entity = sample_entity(ours)
    assert entity_info(ours).version == version
    expected = encode(entity)
    kafka_bytes = bytes(_mirror(entity, theirs, version).encode(version=version))
    assert kafka_bytes == expected
    assert decode(ours, kafka_bytes) == entity


def test_every_shared_api_is_covered() -> None:
    """Sanity: the parametrization above found kafka-python's classes."""
    assert len(KAFKA) >= 80
    assert attrs.has(request_type(3, 12))
