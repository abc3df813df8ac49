"""kproto.meta.build_entity: the ``drop_absent`` build a server answers with gives the
entities written out by hand, and a strict build still names what is wrong."""

from __future__ import annotations

import pytest

from kproto.meta import build_entity
from kproto.schema.fetch.v4.response import AbortedTransaction as AbortedV4
from kproto.schema.fetch.v4.response import FetchableTopicResponse as TopicV4
from kproto.schema.fetch.v4.response import FetchResponse as FetchV4
from kproto.schema.fetch.v4.response import PartitionData as PartitionV4
from kproto.schema.fetch.v16.response import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    FetchResponse,
    NodeEndpoint,
    PartitionData,
)

FIELDS = {
    "throttle_time_ms": 3,
    "error_code": 0,
    "session_id": 9,
    "responses": [
        {
            "topic": "t",
            "topic_id": None,  # not nullable in v16: its default
            "partitions": [
                {
                    "partition_index": 1,
                    "high_watermark": 5,
                    "aborted_transactions": [{"producer_id": 7, "first_offset": 2}],
                    "diverging_epoch": {"epoch": 4, "end_offset": 40},
                    "preferred_read_replica": -1,
                    "records": None,
                    "no_such_field": 1,
                },
                {"partition_index": 2},
            ],
        }
    ],
    "node_endpoints": ({"node_id": 1, "host": "h", "port": 1, "rack": None},),
}


def test_drop_absent_build_of_a_flexible_version() -> None:
    built = build_entity(FetchResponse, FIELDS, drop_absent=True)
    assert built == FetchResponse(
        throttle_time_ms=3,
        error_code=0,
        session_id=9,
        responses=(
            FetchableTopicResponse(
                partitions=(
                    PartitionData(
                        partition_index=1,
                        high_watermark=5,
                        aborted_transactions=(
                            AbortedTransaction(producer_id=7, first_offset=2),
                        ),
                        diverging_epoch=EpochEndOffset(epoch=4, end_offset=40),
                        preferred_read_replica=-1,
                        records=None,
                    ),
                    PartitionData(partition_index=2),
                ),
            ),
        ),
        node_endpoints=(NodeEndpoint(node_id=1, host="h", port=1, rack=None),),
    )


def test_drop_absent_build_of_an_old_version_drops_newer_fields() -> None:
    built = build_entity(FetchV4, FIELDS, drop_absent=True)
    assert built == FetchV4(
        throttle_time_ms=3,
        responses=(
            TopicV4(
                topic="t",
                partitions=(
                    PartitionV4(
                        partition_index=1,
                        high_watermark=5,
                        aborted_transactions=(
                            AbortedV4(producer_id=7, first_offset=2),
                        ),
                        records=None,
                    ),
                    PartitionV4(partition_index=2),
                ),
            ),
        ),
    )


def test_drop_absent_build_passes_entities_through() -> None:
    entity = PartitionData(partition_index=3)
    built = build_entity(
        FetchableTopicResponse, {"partitions": [entity, None]}, drop_absent=True
    )
    assert built.partitions[0] is entity
    assert built.partitions[1] is None


def test_strict_build_names_the_unknown_field() -> None:
    with pytest.raises(
        TypeError, match=r"^FetchResponse\.responses\[0\]\.topic: no such"
    ):
        build_entity(FetchResponse, FIELDS)
    partition = FIELDS["responses"][0]["partitions"][0]  # type: ignore[index]
    with pytest.raises(
        TypeError,
        match=r"^PartitionData\.diverging_epoch: no such field in PartitionData v4",
    ):
        build_entity(PartitionV4, partition)
