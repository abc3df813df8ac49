"""Errors a test sets on partitions and topics rather than on whole requests
(configured by :class:`kproto.broker.Cluster`, applied by
:class:`kproto.broker.faults.FaultInjector`):

* :meth:`PartitionErrors.push` is librdkafka's
  ``rd_kafka_mock_partition_push_request_errors``: a queue of errors per
  topic-partition; each of the next requests naming that partition (any
  topic-keyed API: Produce, Fetch, ListOffsets, OffsetCommit, TxnOffsetCommit,
  DeleteRecords, OffsetForLeaderEpoch; :data:`~kproto.broker.handlers.refusals.TOPIC_SHAPES`)
  takes one, answered for that partition alone while the request's other partitions
  are handled as usual;
* :meth:`PartitionErrors.set_topic_error` is ``rd_kafka_mock_topic_set_error``:
  an error that stays on a topic until cleared: in its Metadata entry's
  ``error_code`` and on every partition of it a topic-keyed request names.

A partition answered with an error is not handled: a Produce to it stores nothing
(it is taken out of the request before the handler runs, as Kafka's
``ReplicaManager`` answers each partition on its own); a Fetch, which changes
nothing, is handled whole and the partition's entry replaced by the error, so a
fetch session stays as the client left it.
"""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import attrs

from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.partitions import topic_name
from kproto.broker.handlers.refusals import TOPIC_SHAPES, TopicShape
from kproto.errors import ErrorCode
from kproto.index import ApiKey

__all__ = ["PartitionErrors"]

Handle = Callable[[Any], Awaitable[Any]]


class PartitionErrors:
    """The errors queued per topic-partition and set per topic on one cluster;
    ``on_change()`` runs after each :meth:`push` or :meth:`set_topic_error` (the
    :class:`~kproto.broker.faults.FaultInjector` holding it stops being idle)."""

    def __init__(self, on_change: Callable[[], None] = lambda: None) -> None:
        self._on_change = on_change
        # (topic, partition, api_key or None for any topic-keyed API) -> errors
        self._queues: dict[
            tuple[str, int, int | None], collections.deque[ErrorCode]
        ] = {}
        self._topics: dict[str, ErrorCode] = {}

    def push(
        self,
        topic: str,
        partition: int,
        errors: Iterable[ErrorCode],
        api_key: ApiKey | None = None,
    ) -> None:
        """Queue ``errors`` for the next requests naming ``topic``/``partition``
        (of ``api_key`` only, or of any topic-keyed API; an API's own queue is
        used before the any-API one).

        Raises:
            ValueError: an item that is not a Kafka error code, or an API that
                does not name partitions.
        """
        codes = [ErrorCode(e) for e in errors]
        if api_key is not None and ApiKey(api_key) not in TOPIC_SHAPES:
            names = ", ".join(k.name for k in TOPIC_SHAPES)
            raise ValueError(f"{ApiKey(api_key).name} names no partitions ({names} do)")
        if codes:
            key = (topic, partition, None if api_key is None else int(api_key))
            self._queues.setdefault(key, collections.deque()).extend(codes)
        self._on_change()

    def set_topic_error(self, topic: str, error: ErrorCode) -> None:
        """Answer ``topic`` with ``error`` until set to ``ErrorCode.NONE``."""
        error = ErrorCode(error)
        if error == ErrorCode.NONE:
            self._topics.pop(topic, None)
        else:
            self._topics[topic] = error
        self._on_change()

    def pending(self, topic: str, partition: int) -> int:
        """How many queued errors ``topic``/``partition`` has left (every API)."""
        return sum(
            len(q)
            for (t, p, _), q in self._queues.items()
            if (t, p) == (topic, partition)
        )

    def clear(self) -> None:
        self._queues.clear()
        self._topics.clear()

    def __bool__(self) -> bool:
        return bool(self._topics) or any(self._queues.values())

    def _next(self, topic: str, partition: int, api_key: int) -> ErrorCode | None:
        sticky = self._topics.get(topic)
        if sticky is not None:
            return sticky
        for key in ((topic, partition, api_key), (topic, partition, None)):
            queue = self._queues.get(key)
            if queue:
                code = queue.popleft()
                if not queue:
                    del self._queues[key]
                return code
        return None

    # ------------------------------------------------------------------ apply

    async def apply(self, ctx: RequestContext, request: Any, handle: Handle) -> Any:
        """The response to ``request``: ``handle(request)`` with the errors of the
        partitions and topics it names (Metadata: the topics' sticky errors)."""
        api_key = ctx.header.request_api_key
        if api_key == ApiKey.METADATA and self._topics:
            return self._metadata(await handle(request))
        shape = TOPIC_SHAPES.get(api_key)
        if shape is None:
            return await handle(request)
        refused: dict[str, dict[int, ErrorCode]] = {}
        kept: list[Any] = []
        for topic in getattr(request, shape.topics) or ():
            name, _ = topic_name(ctx, topic, shape.name)
            parts = getattr(topic, shape.partitions) or ()
            errors = {}
            for p in parts:
                code = self._next(name, getattr(p, shape.index), api_key)
                if code is not None:
                    errors[getattr(p, shape.index)] = code
            if errors:
                refused[name] = errors
            if api_key == ApiKey.FETCH or not errors:
                kept.append(topic)
            elif len(errors) < len(parts):
                left = tuple(p for p in parts if getattr(p, shape.index) not in errors)
                kept.append(attrs.evolve(topic, **{shape.partitions: left}))
        if not refused:
            return await handle(request)
        if api_key == ApiKey.FETCH:
            return _replace(ctx, shape, await handle(request), refused)
        if kept:
            response = await handle(
                attrs.evolve(request, **{shape.topics: tuple(kept)})
            )
        elif getattr(request, "acks", None) == 0:
            return None
        else:
            response = respond(
                ctx,
                throttle_time_ms=0,
                error_code=ErrorCode.NONE,
                **{shape.out_topics: []},
            )
        if response is None:  # acks=0
            return None
        return _replace(ctx, shape, response, refused)

    def _metadata(self, response: Any) -> Any:
        topics = tuple(
            (
                attrs.evolve(t, error_code=self._topics[t.name])
                if t.name in self._topics
                else t
            )
            for t in response.topics
        )
        return attrs.evolve(response, topics=topics)


def _replace(
    ctx: RequestContext,
    shape: TopicShape,
    response: Any,
    refused: dict[str, dict[int, ErrorCode]],
) -> Any:
    """``response`` with each refused partition's entry set to its error (replacing
    the handler's entry, or added to its topic's entry, or in a new topic entry)."""
    ids = {name: info.topic_id for name, info in ctx.state.topics.items()}
    names: dict[Any, str] = {i.topic_id: n for n, i in ctx.state.topics.items()}
    built = getattr(
        respond(
            ctx,
            **{
                shape.out_topics: [
                    {
                        shape.out_name: name,
                        "topic_id": ids.get(name),
                        shape.out_partitions: [
                            {shape.out_index: p, "error_code": code, **shape.defaults}
                            for p, code in errors.items()
                        ],
                    }
                    for name, errors in refused.items()
                ]
            },
        ),
        shape.out_topics,
    )
    by_name = {}
    for name, entry in zip(refused, built, strict=True):
        by_name[name] = entry
    out = []
    for topic in getattr(response, shape.out_topics):
        name = getattr(topic, shape.out_name, None) or names.get(
            getattr(topic, "topic_id", None), ""
        )
        extra = by_name.pop(name, None)
        if extra is not None:
            errors = refused[name]
            parts = tuple(
                p
                for p in getattr(topic, shape.out_partitions)
                if getattr(p, shape.out_index) not in errors
            ) + tuple(getattr(extra, shape.out_partitions))
            topic = attrs.evolve(topic, **{shape.out_partitions: parts})
        out.append(topic)
    out.extend(by_name.values())
    return attrs.evolve(response, **{shape.out_topics: tuple(out)})
