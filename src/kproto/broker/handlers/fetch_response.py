"""The FetchResponse entity of any served version, built straight from a Fetch's
answers (:class:`~kproto.broker.fetch_session.TopicAnswer`).

The generic way, :func:`kproto.broker.handlers.context.respond`, builds a nested
dict per partition and converts it field by field; a Fetch answers every
partition of every fetch, so its response classes are looked up once per version
(:func:`layout`) and each ``PartitionData`` is made with one constructor call of
the fields its version has. The tagged ``diverging_epoch`` (v12+) is set when a
fetch's ``last_fetched_epoch`` diverges from the log, ``preferred_read_replica``
(v11+, KIP-392) when the leader sends a consumer to a follower; fields this
broker never sets keep their defaults: the tagged ``current_leader``,
``snapshot_id`` (v12+) and ``node_endpoints`` (v16+). Source: ``FetchResponse.json`` (versions 4-18).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from kproto.broker.fetch_session import PartitionAnswer, TopicAnswer
from kproto.index import ApiKey, response_type
from kproto.meta import wire

__all__ = ["FetchLayout", "layout", "fetch_response"]


def _element(cls: type, name: str) -> type:
    """The entity class of the array field ``name`` of ``cls``."""
    element = wire(attrs.fields_dict(cls)[name]).element
    assert element is not None and element.entity is not None
    return element.entity


@attrs.frozen
class FetchLayout:
    """The classes of one FetchResponse version and which fields it has."""

    response: type
    topic: type
    partition: type
    aborted: type | None
    response_fields: frozenset[str]
    by_name: bool  # topics named by ``topic`` (v0-12), else by ``topic_id``
    make_partition: Callable[[PartitionAnswer], Any] = attrs.field(eq=False)


@functools.cache
def layout(version: int) -> FetchLayout:
    """The :class:`FetchLayout` of FetchResponse ``version`` (built once).

    Raises:
        kproto.index.UnsupportedVersionError: no such version.
    """
    response_cls = response_type(ApiKey.FETCH, version)
    topic_cls = _element(response_cls, "responses")
    partition_cls = _element(topic_cls, "partitions")
    fields = attrs.fields_dict(partition_cls)
    aborted_cls = (
        _element(partition_cls, "aborted_transactions")
        if "aborted_transactions" in fields
        else None
    )
    has_start = "log_start_offset" in fields  # v5+
    has_replica = "preferred_read_replica" in fields  # v11+
    diverging_cls = (
        wire(fields["diverging_epoch"]).entity if "diverging_epoch" in fields else None
    )  # v12+

    def aborted(pairs: list[tuple[int, int]] | None) -> tuple[Any, ...] | None:
        if pairs is None or aborted_cls is None:
            return None
        return tuple(aborted_cls(producer_id=p, first_offset=f) for p, f in pairs)

    def partition(a: PartitionAnswer) -> Any:
        extra: dict[str, Any] = {}
        if has_start:
            extra["log_start_offset"] = a.log_start_offset
        if has_replica:
            extra["preferred_read_replica"] = a.preferred_read_replica
        if a.diverging_epoch is not None and diverging_cls is not None:
            epoch, end_offset = a.diverging_epoch
            extra["diverging_epoch"] = diverging_cls(epoch=epoch, end_offset=end_offset)
        return partition_cls(
            partition_index=a.partition_index,
            error_code=a.error_code,
            high_watermark=a.high_watermark,
            last_stable_offset=a.last_stable_offset,
            aborted_transactions=aborted(a.aborted_transactions),
            records=a.records,
            **extra,
        )

    return FetchLayout(
        response_cls,
        topic_cls,
        partition_cls,
        aborted_cls,
        frozenset(attrs.fields_dict(response_cls)),
        "topic" in attrs.fields_dict(topic_cls),
        partition,
    )


def fetch_response(
    version: int, error_code: int, session_id: int, topics: Sequence[TopicAnswer]
) -> Any:
    """The FetchResponse of ``version`` answering ``topics``, with
    ``throttle_time_ms`` 0 (a throttled one is re-made by the server) and, from
    v7, the top-level ``error_code`` and ``session_id``."""
    shape = layout(version)
    partition = shape.make_partition
    topic_cls = shape.topic
    if shape.by_name:
        responses = tuple(
            topic_cls(topic=t.topic, partitions=tuple(map(partition, t.partitions)))
            for t in topics
        )
    else:
        responses = tuple(
            (
                topic_cls(
                    topic_id=t.topic_id, partitions=tuple(map(partition, t.partitions))
                )
                if t.topic_id is not None
                else topic_cls(partitions=tuple(map(partition, t.partitions)))
            )
            for t in topics
        )
    if "session_id" in shape.response_fields:  # v7+
        return shape.response(
            throttle_time_ms=0,
            error_code=error_code,
            session_id=session_id,
            responses=responses,
        )
    return shape.response(throttle_time_ms=0, responses=responses)
