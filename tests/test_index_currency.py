"""The generated index after the 2026-08-23 source: lookups, unstable versions,
coordinator-record numbering, array fields built from lists, the error table."""

from __future__ import annotations

import pytest

from kproto.errors import ErrorCode
from kproto.index import (
    ApiKey,
    UnknownMessageError,
    UnsupportedVersionError,
    api_versions,
    data_type,
    data_versions,
    request_type,
    response_type,
)
from kproto.meta import entity_info
from kproto.serial import decode, encode


def test_every_api_0_to_94_with_368_versions_each_way() -> None:
    assert sorted(ApiKey) == list(range(95))
    total = sum(len(api_versions(k)) for k in ApiKey)
    assert total == 368
    for key in ApiKey:
        for v in api_versions(key):
            assert entity_info(request_type(key, v)).version == v
            assert entity_info(response_type(key, v)).api_key == key


def test_share_group_apis_reach_the_versions_librdkafka_negotiates() -> None:
    for key in (
        ApiKey.SHARE_GROUP_HEARTBEAT,
        ApiKey.SHARE_FETCH,
        ApiKey.SHARE_ACKNOWLEDGE,
    ):
        assert 1 in api_versions(key, include_unstable=False)
        assert not request_type(key, 1).__unstable__
        # v0 was KIP-932 early access, marked unstable in the 2024 source.
        assert request_type(key, 0).__unstable__
        assert entity_info(response_type(key, 0)).unstable


def test_unstable_versions_are_left_out_of_the_stable_range() -> None:
    key = ApiKey.INIT_PRODUCER_ID
    assert api_versions(key) == range(0, 7)
    assert api_versions(key, include_unstable=False) == range(0, 6)
    assert request_type(key, 6).__unstable__ is True
    assert entity_info(response_type(key, 6)).unstable is True
    assert request_type(key, 5).__unstable__ is False
    assert api_versions(ApiKey.METADATA, include_unstable=False) == api_versions(
        ApiKey.METADATA
    )


def test_lookups_with_bad_keys_raise_lookup_errors_naming_what_exists() -> None:
    with pytest.raises(UnknownMessageError, match="got 'Metadata'.*0-94"):
        request_type("Metadata", 1)
    with pytest.raises(
        UnknownMessageError, match=r"unknown api_key 999 \(known api_keys: 0-94\)"
    ):
        response_type(999, 0)
    with pytest.raises(UnknownMessageError):
        api_versions(999)
    with pytest.raises(UnsupportedVersionError, match="has versions 0-13, got 14"):
        request_type(ApiKey.METADATA, 14)
    with pytest.raises(UnsupportedVersionError, match="must be an int"):
        request_type(ApiKey.METADATA, "1")
    with pytest.raises(LookupError):
        data_type("GroupMetadataKey", "2")


def test_coordinator_keys_keep_their_record_type_as_version() -> None:
    key = data_type("GroupMetadataKey", 2)
    info = entity_info(key)
    assert info.source == "kafka-trunk-2026-08-23/GroupMetadataKey.json"
    assert info.message_type == "coordinator-key"
    assert data_versions("GroupMetadataKey") == range(2, 3)
    # The key body (after the int16 prefix 2 in __consumer_offsets): a string.
    assert encode(key(group="grp")) == b"\x00\x03grp"
    assert decode(key, b"\x00\x03grp") == key(group="grp")
    assert data_versions("LegacyOffsetCommitKey") == range(0, 1)
    assert data_versions("OffsetCommitKey") == range(0, 2)


def test_storage_records_are_found_by_name_only() -> None:
    from kproto.index import metadata_record_type

    rec = data_type("RemoteLogSegmentMetadataRecord", 0)
    assert entity_info(rec).message_type == "metadata"
    assert metadata_record_type(0, 0).__name__ == "RegisterBrokerRecord"


def test_array_fields_given_lists_equal_the_tuple_form() -> None:
    cls = request_type(ApiKey.METADATA, 12)
    assert cls(topics=[]) == cls(topics=())
    assert cls(topics=[]).topics == ()
    assert cls(topics=None).topics is None  # nullable in v1+
    assert hash(cls(topics=[])) == hash(cls(topics=()))
    fetch = request_type(ApiKey.FETCH, 4)
    assert isinstance(fetch(topics=[]).topics, tuple)
    assert encode(cls(topics=[])) == encode(cls(topics=())) == b"\x01\x01\x00\x00"


def test_error_table_has_138_codes_with_retriable_flags() -> None:
    assert len(ErrorCode) == 138
    assert ErrorCode(99).name == "POSITION_OUT_OF_RANGE"
    assert ErrorCode(99).retriable is False
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable is True
    assert min(ErrorCode) == -1 and max(ErrorCode) == 136


def test_negotiation_skips_unstable_versions_unless_asked() -> None:
    from kproto.negotiation import common_versions

    broker = {
        int(ApiKey.INIT_PRODUCER_ID): (0, 6),
        int(ApiKey.SHARE_FETCH): (0, 2),
        int(ApiKey.SHARE_GROUP_HEARTBEAT): (0, 0),
        int(ApiKey.METADATA): (0, 13),
    }
    assert common_versions(broker) == {
        ApiKey.METADATA: 13,
        ApiKey.INIT_PRODUCER_ID: 5,
        ApiKey.SHARE_FETCH: 2,
    }
    assert common_versions(broker, allow_unstable=True) == {
        ApiKey.METADATA: 13,
        ApiKey.INIT_PRODUCER_ID: 6,
        ApiKey.SHARE_FETCH: 2,
        ApiKey.SHARE_GROUP_HEARTBEAT: 0,
    }


def test_describe_marks_unstable_versions(capsys: pytest.CaptureFixture[str]) -> None:
    from kproto.cli import main

    assert main(["describe", "InitProducerIdRequest", "--version", "6"]) == 0
    assert "InitProducerIdRequest v6 (api_key 22) UNSTABLE" in capsys.readouterr().out
    assert main(["describe", "InitProducerIdRequest", "--version", "5"]) == 0
    assert "UNSTABLE" not in capsys.readouterr().out
