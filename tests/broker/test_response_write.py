"""The broker's response path: the Fetch handler's builder (``fetch_response``),
``encode_response_parts`` and ``write_response`` give the very entities and bytes of
the generic build and encoder, for every FetchResponse version served and the cases
a Fetch answers with; ``warm_codecs`` prepares what it lists."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kproto.broker.dispatch import SERVED_APIS, warm_codecs
from kproto.broker.fetch_session import PartitionAnswer, TopicAnswer
from kproto.broker.handlers.context import build
from kproto.broker.handlers.fetch_response import fetch_response
from kproto.broker.server import WRITE_APART_BYTES, write_response
from kproto.errors import ErrorCode
from kproto.framing import (
    SIZE_PREFIX,
    decode_response,
    encode_frame,
    encode_response,
    encode_response_parts,
)
from kproto.index import ApiKey, response_type
from kproto.records import encode_batch
from kproto.schema.request_header.v2 import RequestHeader
from kproto.serial.compile import encoder

FETCH_VERSIONS = range(SERVED_APIS[ApiKey.FETCH][0], SERVED_APIS[ApiKey.FETCH][1] + 1)
TOPIC_ID = uuid.UUID("6f1c3a34-7d7e-4d3f-9a43-0b7c1b1f2e11")


def _batch(base: int, n: int, payload: bytes) -> bytes:
    return encode_batch([(None, payload, (), 1_700_000_000_000)] * n, base_offset=base)


SMALL = _batch(0, 3, b"v" * 10)
LARGE = _batch(3, 40, b"x" * 2000)  # above WRITE_APART_BYTES with the others


def _partition(index: int, **fields: Any) -> dict[str, Any]:
    base = {
        "partition_index": index,
        "error_code": ErrorCode.NONE,
        "high_watermark": 43,
        "last_stable_offset": 43,
        "log_start_offset": 0,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": b"",
    }
    return base | fields


CASES: dict[str, dict[str, Any]] = {
    "empty": {"responses": []},
    "session error": {
        "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        "session_id": 0,
        "responses": [],
    },
    "records and errors": {
        "throttle_time_ms": 17,
        "session_id": 12345,
        "responses": [
            {
                "topic": "t",
                "topic_id": TOPIC_ID,
                "partitions": [
                    _partition(0, records=SMALL),
                    _partition(1, records=LARGE * 40),
                    _partition(
                        2,
                        error_code=ErrorCode.OFFSET_OUT_OF_RANGE,
                        high_watermark=-1,
                        last_stable_offset=-1,
                        log_start_offset=-1,
                    ),
                    _partition(3, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER),
                    _partition(4, records=None),
                ],
            },
            {"topic": "u", "topic_id": uuid.uuid4(), "partitions": []},
        ],
    },
    "aborted transactions": {
        "responses": [
            {
                "topic": "t",
                "topic_id": TOPIC_ID,
                "partitions": [
                    _partition(
                        0,
                        last_stable_offset=3,
                        aborted_transactions=[
                            {"producer_id": 7, "first_offset": 0},
                            {"producer_id": 9, "first_offset": 2},
                        ],
                        records=SMALL,
                    ),
                    _partition(1, aborted_transactions=[]),
                ],
            }
        ]
    },
    "tagged fields": {
        "responses": [
            {
                "topic": "t",
                "topic_id": TOPIC_ID,
                "partitions": [
                    _partition(
                        0,
                        diverging_epoch={"epoch": 4, "end_offset": 40},
                        current_leader={"leader_id": 2, "leader_epoch": 5},
                        snapshot_id={"end_offset": 30, "epoch": 3},
                        preferred_read_replica=2,
                        records=LARGE * 40,
                        unknown_tagged_fields=((9, b"\x01\x02"),),
                    )
                ],
                "unknown_tagged_fields": ((5, b"z"),),
            }
        ],
        "node_endpoints": [
            {"node_id": 2, "host": "127.0.0.1", "port": 9093, "rack": None}
        ],
        "unknown_tagged_fields": ((7, b"abc"),),
    },
}


def _generic(version: int, response: Any, correlation_id: int) -> bytes:
    """The frame from the pure-Python compiled encoder, header then body."""
    parts: list[bytes] = []
    header = type(response).__header_schema__(correlation_id=correlation_id)
    encoder(type(header))(header, parts.append)
    encoder(type(response))(response, parts.append)
    payload = b"".join(parts)
    return SIZE_PREFIX.pack(len(payload)) + payload


class _Writer:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_fetch_response_parts_are_the_generic_encoding(version: int, case: str) -> None:
    response = build(response_type(ApiKey.FETCH, version), CASES[case])
    request_header = RequestHeader(
        request_api_key=ApiKey.FETCH,
        request_api_version=version,
        correlation_id=77,
        client_id="c",
    )
    expected = _generic(version, response, 77)
    head, body = encode_response_parts(request_header, response)
    assert head + body == expected
    assert encode_response(request_header, response) == expected
    header = type(response).__header_schema__(correlation_id=77)
    assert encode_frame(header, response) == expected
    writer = _Writer()
    write_response(writer, (head, body))  # type: ignore[arg-type]
    assert b"".join(writer.writes) == expected
    # a large body goes out apart from its header, uncopied; a small one in one write
    assert len(writer.writes) == (2 if len(body) >= WRITE_APART_BYTES else 1)
    assert (
        decode_response(type(response), expected[4:], expected_correlation_id=77)
        == response
    )


def test_large_fetch_body_is_written_apart() -> None:
    response = build(response_type(ApiKey.FETCH, 16), CASES["records and errors"])
    head, body = encode_response_parts(
        response.__header_schema__(correlation_id=1), response
    )
    assert len(body) >= WRITE_APART_BYTES
    writer = _Writer()
    write_response(writer, (head, body))  # type: ignore[arg-type]
    assert writer.writes == [head, body]


def test_encode_response_parts_refuses_a_request() -> None:
    from kproto.schema.fetch.v16 import FetchRequest

    with pytest.raises(TypeError, match="not a response message"):
        encode_response_parts(
            RequestHeader(request_api_key=1, request_api_version=16, correlation_id=1),
            FetchRequest(),
        )


def test_warm_codecs_covers_the_listed_and_newest_served_versions() -> None:
    from kproto.broker.dispatch import CLIENT_VERSIONS, WARM_APIS

    low, high = SERVED_APIS[ApiKey.METADATA]
    # 12 and the newest served; a version below the served range is skipped, and
    # so is an API the broker does not serve
    assert warm_codecs((), {ApiKey.METADATA: (12, low - 1)}) == 2
    assert warm_codecs((), {ApiKey.METADATA: (high,)}) == 1
    unserved = next(k for k in ApiKey if k not in SERVED_APIS)
    assert warm_codecs((), {unserved: (0,)}) == 0
    # every served version of Produce and Fetch, and at least one of each other API
    every = sum(SERVED_APIS[k][1] - SERVED_APIS[k][0] + 1 for k in WARM_APIS)
    assert warm_codecs() >= every + len(CLIENT_VERSIONS)


# ----------------------------------------------------- the Fetch handler's builder

ANSWER_CASES: dict[str, list[TopicAnswer]] = {
    "no topics": [],
    "records, errors, aborted transactions, empty partitions": [
        TopicAnswer(
            "t",
            TOPIC_ID,
            [
                PartitionAnswer(0, ErrorCode.NONE, 43, 43, 0, None, SMALL),
                PartitionAnswer(1, ErrorCode.NONE, 43, 3, 0, [(7, 0), (9, 2)], LARGE),
                PartitionAnswer(
                    2, ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1, -1, None, b""
                ),
                PartitionAnswer(3, ErrorCode.KAFKA_STORAGE_ERROR, 5, 5, 0, None, b""),
                PartitionAnswer(4, ErrorCode.NONE, 43, 43, 0, [], b""),
            ],
        ),
        TopicAnswer("u", None, []),
        TopicAnswer(
            "",
            None,
            [PartitionAnswer(0, ErrorCode.UNKNOWN_TOPIC_ID, -1, -1, -1, None, b"")],
        ),
    ],
    "a diverging epoch (v12+; dropped before)": [
        TopicAnswer(
            "t",
            TOPIC_ID,
            [PartitionAnswer(0, ErrorCode.NONE, 43, 43, 0, None, b"", (3, 17))],
        ),
    ],
}


def _as_fields(
    error_code: int, session_id: int, topics: list[TopicAnswer]
) -> dict[str, Any]:
    """The same answer as the dicts the generic ``respond`` builds from."""
    return {
        "throttle_time_ms": 0,
        "error_code": error_code,
        "session_id": session_id,
        "responses": [
            {
                "topic": t.topic,
                "topic_id": t.topic_id,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": p.error_code,
                        "high_watermark": p.high_watermark,
                        "last_stable_offset": p.last_stable_offset,
                        "log_start_offset": p.log_start_offset,
                        "aborted_transactions": (
                            None
                            if p.aborted_transactions is None
                            else [
                                {"producer_id": pid, "first_offset": first}
                                for pid, first in p.aborted_transactions
                            ]
                        ),
                        "preferred_read_replica": -1,
                        "records": p.records,
                        **(
                            {}
                            if p.diverging_epoch is None
                            else {
                                "diverging_epoch": {
                                    "epoch": p.diverging_epoch[0],
                                    "end_offset": p.diverging_epoch[1],
                                }
                            }
                        ),
                    }
                    for p in t.partitions
                ],
            }
            for t in topics
        ],
    }


@pytest.mark.parametrize("case", sorted(ANSWER_CASES))
@pytest.mark.parametrize(
    "error_code", [ErrorCode.NONE, ErrorCode.INVALID_FETCH_SESSION_EPOCH]
)
@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_fetch_response_builder_matches_the_generic_build(
    version: int, error_code: int, case: str
) -> None:
    topics = ANSWER_CASES[case]
    fast = fetch_response(version, error_code, 31, topics)
    generic = build(
        response_type(ApiKey.FETCH, version), _as_fields(error_code, 31, topics)
    )
    assert fast == generic
    header = type(generic).__header_schema__(correlation_id=5)
    assert encode_response(header, fast) == _generic(version, generic, 5)
