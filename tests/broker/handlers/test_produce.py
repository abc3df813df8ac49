"""The ProduceResponse built without the generic walk is byte for byte the one
:func:`kproto.broker.handlers.context.build` makes, for every served version."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kproto.broker.dispatch import SERVED_APIS
from kproto.broker.handlers.cluster_info import MIN_VERSIONS
from kproto.broker.handlers.context import build
from kproto.broker.handlers.produce import (
    PartitionResult,
    produce_policy,
    produce_response,
)
from kproto.broker.log_validator import LogPolicy
from kproto.broker.state import TopicMetadata
from kproto.broker.topic_config import TopicConfig
from kproto.errors import ErrorCode
from kproto.index import ApiKey, response_type
from kproto.serial import encode

#: v0-v2 are answered UNSUPPORTED_VERSION through the generic build
_LOW, _HIGH = MIN_VERSIONS[ApiKey.PRODUCE], SERVED_APIS[ApiKey.PRODUCE][1]


Topics = list[tuple[str, uuid.UUID | None, list[PartitionResult]]]

CASES: dict[str, Topics] = {
    "one partition": [("t", None, [PartitionResult(0, ErrorCode.NONE, 42, -1, 7)])],
    "no topics": [],
    "errors, record errors, append time": [
        (
            "orders",
            uuid.UUID(int=0x1234),
            [
                PartitionResult(0, ErrorCode.NONE, 42, -1, 0),
                PartitionResult(
                    1,
                    ErrorCode.INVALID_RECORD,
                    record_errors=((0, "no key"), (3, None)),
                    error_message="Compacted topic cannot accept message without key",
                ),
                PartitionResult(2, ErrorCode.NONE, 9, 1_700_000_000_000, 3),
            ],
        ),
        (
            "other",
            None,
            [
                PartitionResult(5, ErrorCode.NOT_LEADER_OR_FOLLOWER),
                PartitionResult(6, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            ],
        ),
    ],
}


def as_fields(topics: Topics) -> list[dict[str, Any]]:
    """The same topics as the dicts the generic build takes."""
    return [
        {
            "name": name,
            "topic_id": topic_id,
            "partition_responses": [
                {
                    **r._asdict(),
                    "index": r.partition_index,
                    "record_errors": [
                        {"batch_index": i, "batch_index_error_message": m}
                        for i, m in r.record_errors
                    ],
                }
                for r in results
            ],
        }
        for name, topic_id, results in topics
    ]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("version", range(_LOW, _HIGH + 1))
def test_produce_response_equals_the_generic_build(version: int, case: str) -> None:
    topics = CASES[case]
    fast = produce_response(version, topics)
    generic = build(
        response_type(ApiKey.PRODUCE, version),
        {"responses": as_fields(topics), "throttle_time_ms": 0},
    )
    assert type(fast) is type(generic)
    assert fast == generic
    assert encode(fast) == encode(generic)


def test_the_cases_reach_every_field() -> None:
    # v13 answers topic ids, v8+ record errors: both non-empty in a case
    latest = produce_response(_HIGH, CASES["errors, record errors, append time"])
    topic = latest.responses[0]
    assert topic.topic_id == uuid.UUID(int=0x1234)
    assert [e.batch_index for e in topic.partition_responses[1].record_errors] == [0, 3]
    assert _HIGH >= 13 and _LOW <= 3


def test_produce_policy_follows_the_typed_topic_config() -> None:
    info = TopicMetadata("policy-topic", uuid.uuid4(), [0])
    for now_ms in (1000, 1001):
        assert produce_policy(info, now_ms) == LogPolicy.for_produce(
            TopicConfig(), now_ms
        )
    info.topic_config = TopicConfig.from_properties(
        {"cleanup.policy": "compact", "max.message.bytes": "2048"}
    )
    policy = produce_policy(info, 1001)
    assert policy.compacted and policy.max_message_bytes == 2048
    assert policy.now_ms == 1001 and not policy.log_append_time
    info.topic_config = TopicConfig.from_properties(
        {"message.timestamp.type": "LogAppendTime"}
    )
    policy = produce_policy(info, 1002)
    assert policy.log_append_time and not policy.compacted
