"""kproto.json: to_json / from_json roundtrips over many entity classes."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import pytest

from kproto.index import all_entity_types
from kproto.json import JsonValueError, from_json, to_json
from kproto.meta import Wire, wire_fields
from kproto.schema.metadata.v12 import MetadataRequest, MetadataResponse
from kproto.schema.metadata.v12.request import MetadataRequestTopic
from kproto.serial import decode, encode

_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def _value(w: Wire, rnd: random.Random, depth: int) -> Any:
    if w.nullable and rnd.random() < 0.2:
        return None
    if w.kind == "struct":
        assert w.entity is not None
        return _entity(w.entity, rnd, depth + 1)
    if w.kind == "array":
        assert w.element is not None
        n = 0 if depth > 2 else rnd.randint(0, 2)
        return tuple(_value(w.element, rnd, depth + 1) for _ in range(n))
    if w.kind == "unknown_tags":
        return (
            ((1000 + rnd.randint(0, 5), rnd.randbytes(3)),)
            if rnd.random() < 0.3
            else ()
        )
    t = w.type
    if t in _RANGES:
        lo, hi = _RANGES[t]
        return rnd.choice([lo, hi, 0, rnd.randint(lo, hi)])
    if t == "bool":
        return rnd.random() < 0.5
    if t == "float64":
        return rnd.choice([0.0, -1.5, 1e300, rnd.random()])
    if t == "string":
        return rnd.choice(["", "kproto", "ünïcode ✓", "x" * rnd.randint(0, 40)])
    if t in ("bytes", "records"):
        return rnd.randbytes(rnd.randint(0, 20))
    if t == "uuid":
        return uuid.UUID(int=rnd.getrandbits(128))
    raise AssertionError(t)


def _entity(cls: type, rnd: random.Random, depth: int = 0) -> Any:
    return cls(**{f.name: _value(w, rnd, depth) for f, w in wire_fields(cls)})


ALL = sorted(all_entity_types(), key=lambda c: (c.__module__, c.__qualname__))
SAMPLE = ALL[::9]


def test_sample_is_broad() -> None:
    assert len(SAMPLE) >= 150
    assert any(getattr(c, "__flexible__", False) for c in SAMPLE)
    assert any(not getattr(c, "__flexible__", True) for c in SAMPLE)


@pytest.mark.parametrize(
    "cls",
    SAMPLE,
    ids=lambda c: f"{c.__module__.removeprefix('kproto.schema.')}.{c.__name__}",
)
def test_roundtrip(cls: type) -> None:
    rnd = random.Random(cls.__module__ + cls.__qualname__)
    for _ in range(3):
        entity = _entity(cls, rnd)
        data = json.loads(json.dumps(to_json(entity)))
        back = from_json(cls, data)
        assert back == entity
        if cls.__kproto_entity__.top_level:
            try:
                wire = encode(entity)
            except Exception:
                continue  # random values may not be encodable (tag defaults etc.)
            assert encode(back) == wire
            assert decode(cls, wire) == back
    assert from_json(cls, {}) == cls()


def test_shapes() -> None:
    rid = uuid.UUID(int=5)
    req = MetadataRequest(topics=(MetadataRequestTopic(topic_id=rid, name="a"),))
    data = to_json(req)
    assert data["topics"] == [
        {"topic_id": str(rid), "name": "a", "unknown_tagged_fields": []}
    ]
    assert data["allow_auto_topic_creation"] is True
    resp = from_json(
        MetadataResponse, {"cluster_id": None, "unknown_tagged_fields": [[7, "AAE="]]}
    )
    assert resp.cluster_id is None and resp.unknown_tagged_fields == ((7, b"\x00\x01"),)
    assert to_json(resp)["unknown_tagged_fields"] == [[7, "AAE="]]


@pytest.mark.parametrize(
    "data, where",
    [
        ({"nope": 1}, "MetadataResponse: unknown field"),
        ({"throttle_time_ms": "1"}, "MetadataResponse.throttle_time_ms"),
        ({"brokers": [{"host": None}]}, "MetadataResponse.brokers[0].host"),
        ({"brokers": {}}, "MetadataResponse.brokers"),
        ({"unknown_tagged_fields": [[1, "!!"]]}, "unknown_tagged_fields[0]"),
        ({"topics": [{"topic_id": "zz"}]}, "MetadataResponse.topics[0].topic_id"),
    ],
)
def test_errors(data: dict[str, Any], where: str) -> None:
    with pytest.raises(
        JsonValueError, match=where.replace("[", r"\[").replace("]", r"\]")
    ):
        from_json(MetadataResponse, data)


def test_not_an_entity() -> None:
    with pytest.raises(TypeError):
        to_json(object())


def test_integer_too_large_for_a_float64_field() -> None:
    """Found by fuzzing: ``float(10**400)`` raised OverflowError, not the typed error."""
    from kproto.schema.alter_client_quotas.v1 import AlterClientQuotasRequest

    data = json.loads('{"entries":[{"ops":[{"value":1' + "0" * 400 + "}]}]}")
    with pytest.raises(
        JsonValueError, match=r"entries\[0\]\.ops\[0\]\.value: .*too large"
    ):
        from_json(AlterClientQuotasRequest, data)
    ok = from_json(
        AlterClientQuotasRequest, {"entries": [{"ops": [{"value": 10**300}]}]}
    )
    assert ok.entries[0].ops[0].value == 1e300
