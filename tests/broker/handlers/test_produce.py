"""The ProduceResponse built without the generic walk is byte for byte the one
:func:`kproto.broker.handlers.context.build` makes, for every served version."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kproto.broker.dispatch import SERVED_APIS
from kproto.broker.handlers.context import build
from kproto.broker.handlers.produce import produce_response
from kproto.errors import ErrorCode
from kproto.index import ApiKey, response_type
from kproto.serial import encode

_LOW, _HIGH = SERVED_APIS[ApiKey.PRODUCE]


def partition(index: int, **kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "index": index,
        "error_code": ErrorCode.NONE,
        "base_offset": 42 + index,
        "log_append_time_ms": -1,
        "log_start_offset": 7,
        "record_errors": [],
        "error_message": None,
    }
    out.update(kw)
    return out


CASES: dict[str, list[dict[str, Any]]] = {
    "one partition": [
        {"name": "t", "topic_id": None, "partition_responses": [partition(0)]}
    ],
    "no topics": [],
    "errors, record errors, append time": [
        {
            "name": "orders",
            "topic_id": uuid.UUID(int=0x1234),
            "partition_responses": [
                partition(0),
                partition(
                    1,
                    error_code=ErrorCode.INVALID_RECORD,
                    base_offset=-1,
                    log_start_offset=-1,
                    error_message="Compacted topic cannot accept message without key",
                    record_errors=[
                        {"batch_index": 0, "batch_index_error_message": "no key"},
                        {"batch_index": 3, "batch_index_error_message": None},
                    ],
                ),
                partition(2, log_append_time_ms=1_700_000_000_000),
            ],
        },
        {
            "name": "other",
            "topic_id": None,
            "partition_responses": [
                partition(5, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER),
                partition(6, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            ],
        },
    ],
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("version", range(_LOW, _HIGH + 1))
def test_produce_response_equals_the_generic_build(version: int, case: str) -> None:
    topics = CASES[case]
    fast = produce_response(version, topics)
    generic = build(
        response_type(ApiKey.PRODUCE, version),
        {"responses": topics, "throttle_time_ms": 0},
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
