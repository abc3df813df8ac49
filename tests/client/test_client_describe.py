"""The client's describe operations: ListGroups on every broker, DescribeGroups to
the coordinator with the consumer assignment decoded, DescribeConfigs, Metadata
descriptions, OffsetFetch of every partition; scripted (no broker) and against the
in-process broker with both clients."""

from __future__ import annotations

import asyncio
import io
import struct
import sys
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.client import (
    AsyncClient,
    BrokerError,
    Client,
    GroupListing,
    TopicPartition,
    admin,
    describe,
)
from kproto.client.core import ClientCore
from kproto.errors import ErrorCode
from kproto.index import ApiKey, data_type
from kproto.serial import DecodeError, entity_writer

from .test_client_core import Script, metadata


def assignment_bytes(partitions: dict[str, list[int]], version: int = 1) -> bytes:
    cls = data_type("ConsumerProtocolAssignment", version)
    topic = sys.modules[cls.__module__].TopicPartition
    out = io.BytesIO()
    out.write(struct.pack(">h", version))
    entity_writer(cls)(
        out,
        cls(
            assigned_partitions=tuple(
                topic(topic=t, partitions=tuple(ps)) for t, ps in partitions.items()
            ),
            user_data=None,
        ),
    )
    return out.getvalue()


def test_decode_assignment() -> None:
    data = assignment_bytes({"b": [2, 0], "a": [1]})
    assert describe.decode_assignment(data) == (
        TopicPartition("b", 0),
        TopicPartition("b", 2),
        TopicPartition("a", 1),
    )
    assert describe.decode_assignment(b"") == ()
    with pytest.raises(DecodeError):
        describe.decode_assignment(b"\x00")


def test_list_groups_asks_every_broker() -> None:
    core = ClientCore("b1:9001")
    lg = ApiKey.LIST_GROUPS

    def answer(*ids: str) -> dict[str, Any]:
        return {
            "error_code": 0,
            "groups": [
                {"group_id": g, "protocol_type": "consumer", "group_state": "Stable"}
                for g in ids
            ],
        }

    script = Script(
        {ApiKey.METADATA: 12, lg: 4},
        (ApiKey.METADATA, metadata({0: 1})),
        (lg, answer("b")),
        (lg, answer()),
        (lg, answer("a")),
    )
    assert script.run(describe.list_groups(core)) == [
        GroupListing("a", "consumer", "Stable"),
        GroupListing("b", "consumer", "Stable"),
    ]
    assert [n for n, _ in script.requests(lg)] == [1, 2, 3]


def test_describe_groups_refinds_the_coordinator_and_decodes_members() -> None:
    core = ClientCore("b1:9001")
    fc, dg = ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_GROUPS
    member = {
        "member_id": "m1",
        "client_id": "c",
        "client_host": "/10.0.0.1",
        "member_metadata": b"",
        "member_assignment": assignment_bytes({"orders": [1]}),
    }

    def group(code: int) -> dict[str, Any]:
        return {
            "groups": [
                {
                    "error_code": code,
                    "group_id": "g",
                    "group_state": "Stable",
                    "protocol_type": "consumer",
                    "protocol_data": "range",
                    "members": [member] if code == 0 else [],
                }
            ]
        }

    script = Script(
        {fc: 3, dg: 5},
        (fc, {"node_id": 2, "host": "b2", "port": 9002, "error_code": 0}),
        (dg, group(ErrorCode.NOT_COORDINATOR)),
        (fc, {"node_id": 3, "host": "b3", "port": 9003, "error_code": 0}),
        (dg, group(0)),
    )
    (found,) = script.run(describe.describe_groups(core, ["g"]))
    assert found.coordinator == 3 and found.protocol == "range"
    (m,) = found.members
    assert (m.member_id, m.client_host, m.assignment) == (
        "m1",
        "/10.0.0.1",
        (TopicPartition("orders", 1),),
    )
    assert [n for n, _ in script.requests(dg)] == [2, 3]


def test_fetch_offsets_of_every_partition_sends_null_topics() -> None:
    core = ClientCore("b1:9001")
    of = ApiKey.OFFSET_FETCH
    topics = [
        {
            "name": "orders",
            "partitions": [
                {"partition_index": 1, "committed_offset": 7, "error_code": 0}
            ],
        }
    ]
    script = Script(
        {ApiKey.METADATA: 12, ApiKey.FIND_COORDINATOR: 3, of: 7},
        (ApiKey.METADATA, metadata({0: 1, 1: 1})),
        (ApiKey.FIND_COORDINATOR, {"node_id": 1, "host": "b1", "port": 9001}),
        (of, {"topics": topics}),
    )
    assert script.run(admin.fetch_offsets(core, "g", None)) == {
        TopicPartition("orders", 1): 7
    }
    ((_, request),) = script.requests(of)
    assert request.topics is None


def test_against_the_broker_with_both_clients(kafka_cluster: Cluster) -> None:
    bs = kafka_cluster.bootstrap_servers
    with Client(bs, timeout_s=10) as client:
        client.create_topics(
            ["orders"], num_partitions=2, configs={"retention.ms": "5000"}
        )
        client.commit_offsets("g", {TopicPartition("orders", 1): 4})
        (topic,) = client.describe_topics(["orders"])
        assert [
            (p.partition, p.leader, p.replicas, p.isr) for p in topic.partitions
        ] == [
            (0, 1, (1,), (1,)),
            (1, 1, (1,), (1,)),
        ]
        assert topic.topic_id.int and not topic.is_internal
        configs = {e.name: e for e in client.describe_configs(["orders"])["orders"]}
        assert configs["retention.ms"].value == "5000"
        assert not configs["retention.ms"].is_default
        assert configs["cleanup.policy"].is_default
        assert client.fetch_offsets("g", None) == {TopicPartition("orders", 1): 4}
        sync_groups = client.list_groups()
        (g,) = client.describe_groups(["g"])
        assert (g.state, g.members) == ("Empty", ())
        with pytest.raises(BrokerError) as exc:
            client.describe_groups(["missing"])
        assert exc.value.error_code == ErrorCode.GROUP_ID_NOT_FOUND

    async def same_with_async() -> None:
        async with AsyncClient(bs, timeout_s=10) as aclient:
            assert await aclient.list_groups() == sync_groups
            (t,) = await aclient.describe_topics(["orders"])
            assert t == topic
            assert await aclient.fetch_offsets("g", None) == {
                TopicPartition("orders", 1): 4
            }

    asyncio.run(same_with_async())
    assert [x.group_id for x in sync_groups] == ["g"]
