"""Topic administration and group offsets, as sans-IO operations over
:class:`~.core.ClientCore` (see :mod:`kproto.client.protocol`).

CreateTopics and DeleteTopics go to the controller Metadata names (any broker when it
names none of its brokers: brokers forward them, KIP-590); OffsetCommit and
OffsetFetch go to the group's coordinator, found with FindCoordinator, as a client
outside the group (generation -1, no member id; Kafka's
``AdminClient.alterConsumerGroupOffsets`` / ``listConsumerGroupOffsets``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.meta import ZERO_UUID

from .core import ClientCore
from .protocol import (
    ANY_NODE,
    COORDINATOR_CODES,
    Call,
    Op,
    check_code,
    offsets_by_topic,
)
from .results import BrokerError, TopicPartition

__all__ = [
    "commit_offsets",
    "create_topics",
    "delete_topics",
    "fetch_offsets",
    "call_coordinator",
    "find_coordinator",
]


def _raise_first(errors: list[BrokerError]) -> None:
    if errors:
        first = errors[0]
        if len(errors) > 1:
            first.add_note("also: " + "; ".join(str(e) for e in errors[1:]))
        raise first


def _topic_name(core: ClientCore, topic: Any) -> str:
    """An OffsetCommit/OffsetFetch response topic's name (by its topic id from v10)."""
    return str(
        topic.name
        if hasattr(topic, "name")
        else core.metadata.topic_by_id(topic.topic_id)
    )


def _partition_errors(
    core: ClientCore, topics: Sequence[Any], what: str
) -> list[BrokerError]:
    """A :class:`BrokerError` per partition of an OffsetCommit/OffsetFetch response
    with an error code, named ``"{what} {topic}-{partition}"``."""
    errors = []
    for t in topics:
        name = _topic_name(core, t)
        for p in t.partitions:
            if p.error_code != 0:
                errors.append(
                    BrokerError(
                        p.error_code,
                        f"{what} {name}-{p.partition_index}",
                        topic=name,
                        partition=p.partition_index,
                    )
                )
    return errors


def _controller(core: ClientCore, fresh: bool) -> Op[int]:
    """The controller Metadata names; :data:`ANY_NODE` if it names none of the
    brokers it lists (any broker forwards admin requests to the controller, KIP-590)."""
    if fresh or core.metadata.controller_id not in core.metadata.brokers:
        yield from core.refresh([])
    controller = core.metadata.controller_id
    return controller if controller in core.metadata.brokers else ANY_NODE


def _call_controller(
    core: ClientCore,
    api_key: ApiKey,
    build: Callable[[int], dict[str, Any]],
    topics: Callable[[Any], Sequence[Any]],
) -> Op[Any]:
    """Send ``build``'s ``api_key`` request to the controller and return the response;
    when one of its ``topics(response)`` answers NOT_CONTROLLER, the controller is
    looked up again and the request sent once more."""
    node = yield from _controller(core, fresh=False)
    response = yield Call(node, api_key, build)
    if any(t.error_code == ErrorCode.NOT_CONTROLLER for t in topics(response)):
        node = yield from _controller(core, fresh=True)
        response = yield Call(node, api_key, build)
    return response


def _topic_errors(topics: Sequence[Any], what: str) -> list[BrokerError]:
    """A :class:`BrokerError` per topic of a CreateTopics/DeleteTopics response with
    an error code, named ``"{what} {topic}"``."""
    return [
        BrokerError(
            t.error_code,
            f"{what} {t.name}",
            topic=t.name,
            error_message=getattr(t, "error_message", None),
        )
        for t in topics
        if t.error_code != 0
    ]


def create_topics(
    core: ClientCore,
    names: Sequence[str],
    *,
    num_partitions: int = -1,
    replication_factor: int = -1,
    configs: Mapping[str, str | None] | None = None,
    timeout_ms: int = 30_000,
    validate_only: bool = False,
) -> Op[None]:
    """CreateTopics, sent to the controller. -1 partitions/replication means the
    broker's defaults (CreateTopics v4+, KIP-464).

    Raises:
        BrokerError: the first topic that failed (TOPIC_ALREADY_EXISTS, ...),
            the others in its notes.
    """
    config_entries = [{"name": k, "value": v} for k, v in (configs or {}).items()]

    def build(v: int) -> dict[str, Any]:
        entry = {
            "num_partitions": num_partitions,
            "replication_factor": replication_factor,
            "assignments": [],
            "configs": config_entries,
        }
        return {
            "topics": [{"name": n, **entry} for n in names],
            "timeout_ms": timeout_ms,
            "validate_only": validate_only,
        }

    response = yield from _call_controller(
        core, ApiKey.CREATE_TOPICS, build, lambda r: r.topics
    )
    _raise_first(_topic_errors(response.topics, "CreateTopics"))


def delete_topics(
    core: ClientCore, names: Sequence[str], *, timeout_ms: int = 30_000
) -> Op[None]:
    """DeleteTopics, sent to the controller.

    Raises:
        BrokerError: the first topic that failed, the others in its notes.
    """

    def build(v: int) -> dict[str, Any]:
        return {
            "topic_names": list(names),
            "topics": [{"name": n, "topic_id": ZERO_UUID} for n in names],
            "timeout_ms": timeout_ms,
        }

    response = yield from _call_controller(
        core, ApiKey.DELETE_TOPICS, build, lambda r: r.responses
    )
    for n in names:
        core.metadata.forget(n)
    _raise_first(_topic_errors(response.responses, "DeleteTopics"))


def find_coordinator(
    core: ClientCore, group_id: str, *, fresh: bool = False
) -> Op[int]:
    """The node id of ``group_id``'s coordinator (cached), from FindCoordinator.

    Raises:
        BrokerError: FindCoordinator's error (COORDINATOR_NOT_AVAILABLE, ...).
    """
    node = None if fresh else core.metadata.coordinators.get(group_id)
    if node is not None:
        return node

    def build(v: int) -> dict[str, Any]:
        return {"key": group_id, "key_type": 0, "coordinator_keys": [group_id]}

    response = yield Call(ANY_NODE, ApiKey.FIND_COORDINATOR, build)
    found = response.coordinators[0] if hasattr(response, "coordinators") else response
    check_code(
        found.error_code,
        f"FindCoordinator {group_id}",
        error_message=getattr(found, "error_message", None),
    )
    core.metadata.brokers[found.node_id] = (found.host, found.port)
    core.metadata.coordinators[group_id] = found.node_id
    return int(found.node_id)


def call_coordinator(
    core: ClientCore,
    group_id: str,
    api_key: ApiKey,
    build: Callable[[int], dict[str, Any]],
    codes: Callable[[Any], Iterable[int]],
) -> Op[tuple[int, Any]]:
    """Send ``build``'s ``api_key`` request to ``group_id``'s coordinator; return the
    coordinator's node id and its response. When ``codes(response)`` holds
    NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, FindCoordinator is asked again and
    the request sent once more (that second answer is returned whatever it holds).

    Raises:
        BrokerError: FindCoordinator's error.
    """
    node = yield from find_coordinator(core, group_id)
    response = yield Call(node, api_key, build)
    if any(code in COORDINATOR_CODES for code in codes(response)):
        node = yield from find_coordinator(core, group_id, fresh=True)
        response = yield Call(node, api_key, build)
    return node, response


def _partition_codes(response: Any) -> Iterable[int]:
    """The partition error codes of an OffsetCommit/OffsetFetch answer."""
    return (p.error_code for t in response.topics for p in t.partitions)


def _topics_of(core: ClientCore, names: Iterable[str]) -> Op[dict[str, Any]]:
    infos = {}
    for name in sorted(set(names)):
        infos[name] = yield from core.topic(name)
    return infos


def commit_offsets(
    core: ClientCore,
    group_id: str,
    offsets: Mapping[TopicPartition, int],
    *,
    metadata: str | None = "",
) -> Op[None]:
    """Commit ``{TopicPartition: next offset to read}`` for ``group_id`` without
    joining it (OffsetCommit to the coordinator from FindCoordinator).

    Raises:
        BrokerError: the first partition that failed (e.g.
            UNKNOWN_MEMBER_ID if the group has active members).
    """
    infos = yield from _topics_of(core, (tp.topic for tp in offsets))
    by_topic = offsets_by_topic(offsets)

    def build(v: int) -> dict[str, Any]:
        return {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": t,
                    "topic_id": infos[t].topic_id,
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": o,
                            "committed_leader_epoch": -1,
                            "commit_timestamp": -1,
                            "committed_metadata": metadata,
                        }
                        for p, o in parts
                    ],
                }
                for t, parts in by_topic.items()
            ],
        }

    _, response = yield from call_coordinator(
        core, group_id, ApiKey.OFFSET_COMMIT, build, _partition_codes
    )
    _raise_first(_partition_errors(core, response.topics, f"OffsetCommit {group_id}"))


def fetch_offsets(
    core: ClientCore, group_id: str, partitions: Sequence[TopicPartition] | None
) -> Op[dict[TopicPartition, int]]:
    """OffsetFetch outside the group, to the group's coordinator: the committed
    offsets of ``group_id`` (-1 where none). ``partitions`` None asks for every
    committed offset of the group (null topics, OffsetFetch v2+)."""
    topics: list[dict[str, Any]] | None
    if partitions is None:
        yield from core.refresh(None)  # names for the topic ids of OffsetFetch v10+
        topics = None
    else:
        infos = yield from _topics_of(core, (tp.topic for tp in partitions))
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions, key=lambda tp: (tp.topic, tp.partition)):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [
            {"name": t, "topic_id": infos[t].topic_id, "partition_indexes": parts}
            for t, parts in by_topic.items()
        ]

    def build(v: int) -> dict[str, Any]:
        if v >= 8:  # KIP-709: a batch of groups
            group = {
                "group_id": group_id,
                "member_id": None,
                "member_epoch": -1,
                "topics": topics,
            }
            return {"groups": [group], "require_stable": False}
        return {"group_id": group_id, "topics": topics, "require_stable": False}

    def answer_of(response: Any) -> Any:  # one group of v8+, else the response
        return response.groups[0] if hasattr(response, "groups") else response

    def codes(response: Any) -> Iterable[int]:
        answer = answer_of(response)
        code = getattr(answer, "error_code", 0)
        return (code,) if code else _partition_codes(answer)

    _, response = yield from call_coordinator(
        core, group_id, ApiKey.OFFSET_FETCH, build, codes
    )
    answer = answer_of(response)
    check_code(getattr(answer, "error_code", 0), f"OffsetFetch {group_id}")
    _raise_first(_partition_errors(core, answer.topics, f"OffsetFetch {group_id}"))
    return {
        TopicPartition(_topic_name(core, t), p.partition_index): p.committed_offset
        for t in answer.topics
        for p in t.partitions
    }
