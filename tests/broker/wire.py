"""Raw requests the broker tests send more than once: a negotiated connection, a
Produce (and its answers per partition), a Fetch, a ListOffsets, an
OffsetForLeaderEpoch, a classic JoinGroup, a KIP-848 / KIP-932 / KIP-1071 group
heartbeat (and join), an OffsetCommit, an IncrementalAlterConfigs and a
DescribeConfigs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.index import ApiKey

#: the last Produce and Fetch versions that name topics (v13 names them by id,
#: KIP-516): ``caps`` for a connection that sends ``produce``/``fetch`` by name
BY_NAME = {ApiKey.PRODUCE: 12, ApiKey.FETCH: 12}

#: offset requests that name topics (OffsetCommit/OffsetFetch v10 name them by id)
#: and JoinGroup before KIP-394's member-id round trip
GROUP_CAPS = {ApiKey.JOIN_GROUP: 3, ApiKey.OFFSET_COMMIT: 9, ApiKey.OFFSET_FETCH: 9}


def connect(
    cluster: Cluster,
    node_id: int | None = None,
    *,
    caps: Mapping[ApiKey, int] | None = None,
    timeout_s: float = 10,
) -> Connection:
    """A connection to node ``node_id`` (the first node without it), negotiated
    with ``caps`` (highest version per API) and ``timeout_s`` (seconds) per request."""
    info = cluster.state.nodes[
        cluster.state.node_ids[0] if node_id is None else node_id
    ]
    conn = Connection(info.host, info.port, timeout_s=timeout_s)
    conn.negotiate(caps=caps)
    return conn


def produce(
    conn: Connection,
    topic: str,
    batches: Mapping[int, bytes],
    *,
    cluster: Cluster | None = None,
    acks: int = -1,
    timeout_ms: int = 5000,
) -> Any:
    """The ProduceResponse to one request (``acks``, ``timeout_ms``) carrying one
    encoded record batch per partition of ``topic`` (``batches``: partition index
    to batch bytes).

    With ``cluster`` the topic is named by its topic id (Produce v13+, KIP-516: what
    a plainly negotiated connection speaks); without, by name (the connection must
    have been negotiated with ``caps=BY_NAME``).
    """
    entry = _topic_entry(topic, "name", cluster)
    entry["partition_data"] = [
        {"index": p, "records": batch} for p, batch in batches.items()
    ]
    return conn.request(
        ApiKey.PRODUCE, acks=acks, timeout_ms=timeout_ms, topic_data=[entry]
    )


def _topic_entry(
    topic: str, name_field: str, cluster: Cluster | None
) -> dict[str, Any]:
    if cluster is None:
        return {name_field: topic}
    return {"topic_id": cluster.state.topics[topic].topic_id}


def fetch(
    conn: Connection,
    topic: str,
    partitions: Iterable[int],
    *,
    cluster: Cluster | None = None,
    min_bytes: int = 1,
    partition_max_bytes: int = 1 << 20,
    **partition_fields: Any,
) -> Any:
    """The FetchResponse to one Fetch (max_wait_ms 0, max_bytes 1 MiB) from offset 0
    of ``partitions`` of ``topic``, at most ``partition_max_bytes`` each, with
    ``partition_fields`` (``current_leader_epoch``) in every partition's entry.

    With ``cluster`` the topic is named by its topic id (Fetch v13+, KIP-516);
    without, by name (the connection must be negotiated with ``caps=BY_NAME``).
    """
    entry = _topic_entry(topic, "topic", cluster)
    entry["partitions"] = [
        {
            "partition": p,
            "fetch_offset": 0,
            "partition_max_bytes": partition_max_bytes,
            **partition_fields,
        }
        for p in partitions
    ]
    return conn.request(
        ApiKey.FETCH,
        max_wait_ms=0,
        min_bytes=min_bytes,
        max_bytes=1 << 20,
        topics=[entry],
    )


def list_offsets(
    conn: Connection,
    topic: str,
    timestamp: int = -1,
    *,
    partition: int = 0,
    current_leader_epoch: int = -1,
) -> Any:
    """The ListOffsets answer (as a consumer: replica id -1, read uncommitted) for
    ``partition`` of ``topic``: the offset for ``timestamp`` (ms, or -1 latest, -2
    earliest, -3 max timestamp), fenced by ``current_leader_epoch`` (-1: none)."""
    answer = conn.request(
        ApiKey.LIST_OFFSETS,
        replica_id=-1,
        isolation_level=0,
        topics=[
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "current_leader_epoch": current_leader_epoch,
                        "timestamp": timestamp,
                    }
                ],
            }
        ],
    )
    return answer.topics[0].partitions[0]


def offset_for_leader_epoch(
    conn: Connection, topic: str, *partitions: tuple[int, int, int]
) -> list[Any]:
    """The OffsetForLeaderEpoch answers (as a consumer: replica id -1) of
    ``topic``'s ``partitions``: (partition, leader epoch asked for, current leader
    epoch or -1) each, in request order."""
    answer = conn.request(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        replica_id=-1,
        topics=[
            {
                "topic": topic,
                "partitions": [
                    {"partition": p, "leader_epoch": e, "current_leader_epoch": c}
                    for p, e, c in partitions
                ],
            }
        ],
    )
    return list(answer.topics[0].partitions)


def partition_answers(response: Any) -> list[Any]:
    """Every partition's answer in a ProduceResponse, in response order."""
    return [p for t in response.responses for p in t.partition_responses]


def join_classic(
    conn: Connection,
    group: str,
    *,
    metadata: bytes = b"",
    timeout_ms: int = 6000,
    protocol_type: str = "consumer",
    protocol: str = "range",
) -> Any:
    """The JoinGroupResponse to a new member (empty member id) joining ``group``
    with the classic protocol: ``protocol_type``, one ``protocol`` carrying
    ``metadata`` (for a consumer, the encoded subscription); ``timeout_ms`` is both
    the session and the rebalance timeout (ms)."""
    return conn.request(
        ApiKey.JOIN_GROUP,
        group_id=group,
        session_timeout_ms=timeout_ms,
        rebalance_timeout_ms=timeout_ms,
        member_id="",
        protocol_type=protocol_type,
        protocols=[{"name": protocol, "metadata": metadata}],
    )


def commit_offset(
    conn: Connection,
    group: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    member_id: str = "",
    member_epoch: int = -1,
) -> int:
    """The error code of an OffsetCommit of ``offset`` for ``topic``-``partition``
    in ``group``, by ``member_id`` at ``member_epoch`` (the defaults: a commit from
    outside the group, as the admin client's)."""
    answer = conn.request(
        ApiKey.OFFSET_COMMIT,
        group_id=group,
        generation_id_or_member_epoch=member_epoch,
        member_id=member_id,
        topics=[
            {
                "name": topic,
                "partitions": [
                    {"partition_index": partition, "committed_offset": offset}
                ],
            }
        ],
    )
    return int(answer.topics[0].partitions[0].error_code)


def heartbeat(
    conn: Connection,
    api_key: ApiKey,
    group: str,
    member_id: str,
    member_epoch: int,
    **fields: Any,
) -> Any:
    """The answer to the heartbeat ``api_key`` (ConsumerGroupHeartbeat of KIP-848,
    ShareGroupHeartbeat of KIP-932, StreamsGroupHeartbeat of KIP-1071) of
    ``member_id`` of ``group`` at ``member_epoch`` (0 joins, -1 leaves), with the
    API's other ``fields``."""
    return conn.request(
        api_key,
        group_id=group,
        member_id=member_id,
        member_epoch=member_epoch,
        **fields,
    )


def join_group(
    conn: Connection,
    api_key: ApiKey,
    group: str,
    member_id: str,
    topics: list[str] | None,
    **fields: Any,
) -> Any:
    """The answer to the heartbeat ``api_key`` of ``member_id`` joining ``group``
    (member epoch 0) subscribed to ``topics``, with the API's other ``fields``."""
    return heartbeat(
        conn, api_key, group, member_id, 0, subscribed_topic_names=topics, **fields
    )


def join_consumer_group(
    conn: Connection,
    group: str,
    member_id: str,
    topics: list[str],
    *,
    rebalance_timeout_ms: int = 1000,
) -> Any:
    """The ConsumerGroupHeartbeatResponse (KIP-848) to ``member_id`` joining
    ``group`` (member epoch 0) subscribed to ``topics``, owning no partitions."""
    return join_group(
        conn,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        group,
        member_id,
        topics,
        rebalance_timeout_ms=rebalance_timeout_ms,
        topic_partitions=[],
    )


def join_share_group(
    conn: Connection, group: str, member_id: str, topics: list[str] | None
) -> Any:
    """The ShareGroupHeartbeatResponse (KIP-932) to ``member_id`` joining share
    group ``group`` (member epoch 0) subscribed to ``topics``."""
    return join_group(conn, ApiKey.SHARE_GROUP_HEARTBEAT, group, member_id, topics)


def incremental_alter_configs(
    conn: Connection,
    resource_type: int,
    name: str,
    *ops: tuple[str, int, str | None],
    validate_only: bool = False,
) -> Any:
    """The IncrementalAlterConfigs result of resource ``name`` of ``resource_type``
    (2 topic, 4 broker, 16 client metrics, 32 group) for ``ops``: (config name,
    operation 0 SET / 1 DELETE / 2 APPEND / 3 SUBTRACT, value)."""
    answer = conn.request(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        resources=[
            {
                "resource_type": resource_type,
                "resource_name": name,
                "configs": [
                    {"name": n, "config_operation": op, "value": v} for n, op, v in ops
                ],
            }
        ],
        validate_only=validate_only,
    )
    return answer.responses[0]


def describe_configs(
    conn: Connection, *resources: tuple[int, str], include_synonyms: bool = False
) -> Any:
    """The DescribeConfigsResponse for every config of ``resources``: (resource
    type, as in :func:`incremental_alter_configs`; name) pairs."""
    return conn.request(
        ApiKey.DESCRIBE_CONFIGS,
        resources=[
            {"resource_type": t, "resource_name": n, "configuration_keys": None}
            for t, n in resources
        ],
        include_synonyms=include_synonyms,
        include_documentation=False,
    )
