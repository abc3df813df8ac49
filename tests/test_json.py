"""kproto.json: to_json / from_json roundtrips over many entity classes (built by
:func:`tests.strategies.sample_entity`, as in the kafka-python interop tests)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from kproto.index import all_entity_types
from kproto.json import JsonValueError, from_json, to_json
from kproto.schema.metadata.v12 import MetadataRequest, MetadataResponse
from kproto.schema.metadata.v12.request import MetadataRequestTopic
from kproto.serial import decode, encode
from tests.strategies import sample_entity

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
    """Every field set (nullable ones present, then null), unknown tagged fields kept;
    the JSON form survives ``json.dumps``/``loads`` and encodes to the same bytes."""
    for entity in (
        sample_entity(cls, 0),
        sample_entity(cls, 1, null=True),
        sample_entity(cls, 2, unknown_tags=True),
    ):
        data = json.loads(json.dumps(to_json(entity, redact=False)))
        back = from_json(cls, data)
        assert back == entity
        if cls.__kproto_entity__.top_level:
            wire = encode(entity)
            assert encode(back) == wire
            assert decode(cls, wire) == back
    assert from_json(cls, {}) == cls()


def test_extreme_values_roundtrip() -> None:
    """Range ends, a huge float, non-BMP text and empty bytes survive the JSON form."""
    from kproto.schema.alter_client_quotas.v1 import AlterClientQuotasRequest
    from kproto.schema.alter_client_quotas.v1.request import (
        EntityData,
        EntryData,
        OpData,
    )

    ops = tuple(OpData(key="k\U0001f600", value=v) for v in (1e300, -0.0, 5e-324))
    req = AlterClientQuotasRequest(
        entries=(
            EntryData(entity=(EntityData(entity_type="", entity_name=None),), ops=ops),
        ),
        validate_only=True,
    )
    back = from_json(AlterClientQuotasRequest, json.loads(json.dumps(to_json(req))))
    assert back == req and encode(back) == encode(req)
    resp = MetadataResponse(throttle_time_ms=-(2**31), controller_id=2**31 - 1)
    assert from_json(MetadataResponse, json.loads(json.dumps(to_json(resp)))) == resp


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


def test_credentials_are_redacted() -> None:
    """SASL tokens and SCRAM salted passwords are written as "<redacted>" unless
    asked otherwise, by both JSON forms; reading one back says why it fails."""
    from kproto.json import REDACTED, to_kafka_json
    from kproto.schema.alter_user_scram_credentials.v0 import (
        AlterUserScramCredentialsRequest,
    )
    from kproto.schema.alter_user_scram_credentials.v0.request import (
        ScramCredentialUpsertion,
    )
    from kproto.schema.sasl_authenticate.v2 import SaslAuthenticateRequest

    token = SaslAuthenticateRequest(auth_bytes=b"\0alice\0hunter2")
    assert to_json(token)["auth_bytes"] == REDACTED
    assert to_kafka_json(token)["authBytes"] == REDACTED
    assert to_json(token, redact=False)["auth_bytes"] == "AGFsaWNlAGh1bnRlcjI="
    with pytest.raises(JsonValueError, match="redacted credential"):
        from_json(SaslAuthenticateRequest, to_json(token))
    alter = AlterUserScramCredentialsRequest(
        upsertions=(
            ScramCredentialUpsertion(
                name="bob",
                mechanism=1,
                iterations=4096,
                salt=b"s",
                salted_password=b"p",
            ),
        )
    )
    upsertion = to_json(alter)["upsertions"][0]
    assert upsertion["name"] == "bob"
    assert upsertion["salt"] == upsertion["salted_password"] == REDACTED
