"""Share groups (KIP-932) under ACLs, as Kafka's ``KafkaApis`` checks them: group
READ for the heartbeat, ShareFetch and ShareAcknowledge (topic READ per
partition), group DESCRIBE for the describe APIs (topic DESCRIBE for what they
show), AlterShareGroupOffsets group READ, DeleteShareGroupOffsets group DELETE
(topic READ); DeleteGroups, ListGroups and group DescribeConfigs for share groups;
and confluent-kafka's ShareConsumer in an allowed and a denied group."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.broker.handlers.authorize.support import acl_cluster, allow, plain
from tests.broker.share.support import (
    DEADLINE_S,
    SHARE_CONFIGS,
    ck,
    share_request,
)
from tests.broker.wire import describe_configs, join_share_group
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(120)

OPEN, SECRET = "q-open", "q-secret"
_Op = AclOperation


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with acl_cluster("carol", share_configs=SHARE_CONFIGS) as c:
        for topic in (OPEN, SECRET):
            c.create_topic(topic, 1)
        allow(
            c,
            [
                (ResourceType.TOPIC, OPEN, PatternType.LITERAL, _Op.READ),
                (ResourceType.GROUP, "alice-", PatternType.PREFIXED, _Op.READ),
                (ResourceType.GROUP, "alice-offsets", PatternType.LITERAL, _Op.DELETE),
                (
                    ResourceType.GROUP,
                    "alice-g",
                    PatternType.LITERAL,
                    _Op.DESCRIBE_CONFIGS,
                ),
                # FindCoordinator passes: the heartbeat itself refuses the group
                (ResourceType.GROUP, "bob-ck", PatternType.LITERAL, _Op.DESCRIBE),
            ],
        )
        allow(  # carol may list every group, and nothing else
            c,
            [
                (
                    ResourceType.CLUSTER,
                    "kafka-cluster",
                    PatternType.LITERAL,
                    _Op.DESCRIBE,
                )
            ],
            principal="User:carol",
        )
        producer = ck.Producer(c.client_config("admin"))
        for topic in (OPEN, SECRET):
            for i in range(3):
                producer.produce(topic, f"{topic}-{i}".encode(), partition=0)
        assert producer.flush(10) == 0
        yield c


def connect(cluster: Cluster, user: str) -> Connection:
    info = cluster.state.nodes[1]
    sasl = plain(user)
    return Connection(info.host, info.port, timeout_s=10, sasl=sasl)


def topic_id(cluster: Cluster, topic: str) -> uuid.UUID:
    return cluster.state.topics[topic].topic_id


def test_heartbeat_needs_group_read_and_topic_describe(cluster: Cluster) -> None:
    with connect(cluster, "alice") as conn:
        joined = join_share_group(conn, "alice-hb", "m1", [OPEN])
        assert joined.error_code == ErrorCode.NONE and joined.member_epoch == 1
        (tp,) = joined.assignment.topic_partitions
        assert tp.topic_id == topic_id(cluster, OPEN)
        assert join_share_group(conn, "bob-hb", "m1", [OPEN]).error_code == (
            ErrorCode.GROUP_AUTHORIZATION_FAILED
        )
        mixed = join_share_group(conn, "alice-hb2", "m1", [OPEN, SECRET])
        assert mixed.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert mixed.member_epoch == 0 and mixed.assignment is None
    with connect(cluster, "admin") as conn:  # nothing was created for alice-hb2
        (g,) = conn.request(ApiKey.SHARE_GROUP_DESCRIBE, group_ids=["alice-hb2"]).groups
        assert g.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def _fetch(conn: Connection, group: str, epoch: int, topics: list[Any]) -> Any:
    return share_request(
        conn,
        ApiKey.SHARE_FETCH,
        group,
        "fetcher",
        epoch,
        topics,
        max_wait_ms=200,
        forgotten_topics_data=[],
    )


def _partitions(response: Any, cluster: Cluster) -> dict[str, Any]:
    names = {info.topic_id: name for name, info in cluster.state.topics.items()}
    return {names[t.topic_id]: p for t in response.responses for p in t.partitions}


def test_share_fetch_and_acknowledge_per_partition(cluster: Cluster) -> None:
    both = [
        {"topic_id": topic_id(cluster, t), "partitions": [{"partition_index": 0}]}
        for t in (OPEN, SECRET)
    ]
    with connect(cluster, "alice") as conn:
        refused = _fetch(conn, "bob-fetch", 0, both)
        assert refused.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert refused.responses == ()
        first = _fetch(conn, "alice-fetch", 0, both)
        assert first.error_code == ErrorCode.NONE
        got = _partitions(first, cluster)
        assert got[SECRET].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert got[SECRET].acquired_records == () and not got[SECRET].records
        assert got[OPEN].error_code == ErrorCode.NONE
        (acquired,) = got[OPEN].acquired_records
        assert (acquired.first_offset, acquired.last_offset) == (0, 2)
        # acknowledgements: accepted on the readable topic, refused on the other;
        # the session advanced (epoch 1 then 2) although one topic was refused
        batch = {"first_offset": 0, "last_offset": 2, "acknowledge_types": [1]}
        acks = [
            {
                "topic_id": topic_id(cluster, t),
                "partitions": [
                    {"partition_index": 0, "acknowledgement_batches": [batch]}
                ],
            }
            for t in (OPEN, SECRET)
        ]
        answer = share_request(
            conn, ApiKey.SHARE_ACKNOWLEDGE, "alice-fetch", "fetcher", 1, acks
        )
        assert answer.error_code == ErrorCode.NONE
        codes = {k: p.error_code for k, p in _partitions(answer, cluster).items()}
        assert codes == {
            OPEN: ErrorCode.NONE,
            SECRET: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }
        again = _fetch(conn, "alice-fetch", 2, [])
        assert again.error_code == ErrorCode.NONE
        assert SECRET not in _partitions(again, cluster)
        refused_ack = share_request(
            conn, ApiKey.SHARE_ACKNOWLEDGE, "bob-fetch", "fetcher", 1, acks
        )
        assert refused_ack.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    with connect(cluster, "admin") as conn:  # the secret topic was never acquired
        offsets = conn.request(
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
            groups=[{"group_id": "alice-fetch", "topics": None}],
        )
        (g,) = offsets.groups
        assert {t.topic_name for t in g.topics} == {OPEN}


def test_share_session_topic_refused_once_its_acl_is_gone(cluster: Cluster) -> None:
    """A topic already in the share session is refused (and nothing acquired from
    it) as soon as the principal may no longer read it."""
    topic = "q-revoked"
    cluster.create_topic(topic, 1)
    producer = ck.Producer(cluster.client_config("admin"))
    producer.produce(topic, b"late", partition=0)
    assert producer.flush(10) == 0
    store = cluster.security.acls
    assert store is not None
    grant = AclBinding(
        ResourceType.TOPIC,
        topic,
        PatternType.LITERAL,
        "User:alice",
        "*",
        _Op.READ,
        AclPermissionType.ALLOW,
    )
    store.add(grant)
    named = [
        {"topic_id": topic_id(cluster, topic), "partitions": [{"partition_index": 0}]}
    ]
    with connect(cluster, "alice") as conn:
        opened = _fetch(conn, "alice-revoked", 0, named)
        assert _partitions(opened, cluster)[topic].error_code == ErrorCode.NONE
        removed = store.remove(
            AclFilter(
                ResourceType.TOPIC,
                topic,
                PatternType.LITERAL,
                "User:alice",
                None,
                _Op.READ,
                AclPermissionType.ALLOW,
            )
        )
        assert removed == [grant]
        producer.produce(topic, b"later", partition=0)
        assert producer.flush(10) == 0
        for epoch, topics in ((1, []), (2, named)):  # from the session, or named
            answer = _fetch(conn, "alice-revoked", epoch, topics)
            assert answer.error_code == ErrorCode.NONE
            (p,) = [
                p
                for t in answer.responses
                if t.topic_id == topic_id(cluster, topic)
                for p in t.partitions
            ]
            assert p.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
            assert p.acquired_records == ()


def test_describe_shows_only_describable_groups_and_topics(cluster: Cluster) -> None:
    with connect(cluster, "alice") as conn:
        assert (
            join_share_group(conn, "alice-desc", "m1", [OPEN]).error_code
            == ErrorCode.NONE
        )
    with connect(cluster, "admin") as conn:  # a group alice may describe, but not
        assert (
            join_share_group(conn, "alice-mixed", "m1", [SECRET]).error_code
            == ErrorCode.NONE
        )
    with connect(cluster, "alice") as conn:
        answer = conn.request(
            ApiKey.SHARE_GROUP_DESCRIBE,
            group_ids=["alice-desc", "bob-desc", "alice-mixed"],
            include_authorized_operations=True,
        )
    groups = {g.group_id: g for g in answer.groups}
    ok = groups["alice-desc"]
    assert ok.error_code == ErrorCode.NONE
    (member,) = ok.members
    assert member.client_host == "/127.0.0.1"  # Kafka's InetAddress.toString()
    # READ (3) implies DESCRIBE (8); nothing else on this group
    assert ok.authorized_operations == (1 << 3) | (1 << 8)
    assert groups["bob-desc"].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    mixed = groups["alice-mixed"]
    assert mixed.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert mixed.members == () and "not authorized" in (mixed.error_message or "")


def test_offset_apis(cluster: Cluster) -> None:
    group = "alice-offsets"
    both = [
        {"topic_name": t, "partitions": [{"partition_index": 0, "start_offset": 1}]}
        for t in (OPEN, SECRET)
    ]
    with connect(cluster, "admin") as conn:  # start offsets on both topics
        seeded = conn.request(
            ApiKey.ALTER_SHARE_GROUP_OFFSETS, group_id=group, topics=both
        )
        assert seeded.error_code == ErrorCode.NONE
    with connect(cluster, "alice") as conn:
        altered = conn.request(
            ApiKey.ALTER_SHARE_GROUP_OFFSETS, group_id=group, topics=both
        )
        assert altered.error_code == ErrorCode.NONE
        codes = {t.topic_name: t.partitions[0].error_code for t in altered.responses}
        assert codes == {
            OPEN: ErrorCode.NONE,
            SECRET: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }
        secret = [t for t in altered.responses if t.topic_name == SECRET][0]
        assert secret.topic_id == topic_id(cluster, SECRET)
        assert conn.request(
            ApiKey.ALTER_SHARE_GROUP_OFFSETS, group_id="bob-offsets", topics=both
        ).error_code == (ErrorCode.GROUP_AUTHORIZATION_FAILED)
        described = conn.request(
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
            groups=[
                {
                    "group_id": group,
                    "topics": [
                        {"topic_name": t, "partitions": [0]} for t in (OPEN, SECRET)
                    ],
                },
                {"group_id": "bob-offsets", "topics": None},
                {"group_id": group, "topics": None},
            ],
        )
        named, bob, listed = described.groups
        codes = {t.topic_name: t.partitions[0].error_code for t in named.topics}
        assert codes == {
            OPEN: ErrorCode.NONE,
            SECRET: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }
        assert bob.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert [t.topic_name for t in listed.topics] == [OPEN]  # SECRET left out
        deleted = conn.request(
            ApiKey.DELETE_SHARE_GROUP_OFFSETS,
            group_id=group,
            topics=[{"topic_name": t} for t in (OPEN, SECRET)],
        )
        assert deleted.error_code == ErrorCode.NONE
        codes = {t.topic_name: t.error_code for t in deleted.responses}
        assert codes == {
            OPEN: ErrorCode.NONE,
            SECRET: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }
        # every topic refused: answered without the coordinator
        only_secret = [both[1]]
        altered = conn.request(
            ApiKey.ALTER_SHARE_GROUP_OFFSETS, group_id=group, topics=only_secret
        )
        assert altered.error_code == ErrorCode.NONE
        assert [p.error_code for t in altered.responses for p in t.partitions] == [
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
        ]
        deleted = conn.request(
            ApiKey.DELETE_SHARE_GROUP_OFFSETS,
            group_id=group,
            topics=[{"topic_name": SECRET}],
        )
        assert [t.error_code for t in deleted.responses] == [
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
        ]
        (bob,) = conn.request(
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
            groups=[{"group_id": "bob-offsets", "topics": None}],
        ).groups
        assert bob.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        # READ on the group does not allow deleting its offsets
        refused = conn.request(
            ApiKey.DELETE_SHARE_GROUP_OFFSETS,
            group_id="alice-fetch",
            topics=[{"topic_name": OPEN}],
        )
        assert refused.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    with connect(cluster, "admin") as conn:  # the secret offsets are still there
        (g,) = conn.request(
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
            groups=[{"group_id": group, "topics": None}],
        ).groups
        assert [t.topic_name for t in g.topics] == [SECRET]


def test_list_delete_and_configs_of_share_groups(cluster: Cluster) -> None:
    with connect(cluster, "admin") as conn:
        assert (
            join_share_group(conn, "admins-share", "m1", [OPEN]).error_code
            == ErrorCode.NONE
        )
    with connect(cluster, "alice") as conn:
        assert (
            join_share_group(conn, "alice-g", "m1", [OPEN]).error_code == ErrorCode.NONE
        )
        listed = conn.request(ApiKey.LIST_GROUPS, states_filter=[], types_filter=[])
        names = {g.group_id for g in listed.groups}
        assert "alice-g" in names and "admins-share" not in names
        deleted = conn.request(ApiKey.DELETE_GROUPS, groups_names=["admins-share"])
        assert deleted.results[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        configs = describe_configs(conn, (32, "alice-g"), (32, "admins-share"))
        codes = {r.resource_name: r.error_code for r in configs.results}
        assert codes == {
            "alice-g": ErrorCode.NONE,
            "admins-share": ErrorCode.GROUP_AUTHORIZATION_FAILED,
        }
    with connect(cluster, "carol") as conn:  # cluster DESCRIBE: every group
        listed = conn.request(ApiKey.LIST_GROUPS, states_filter=[], types_filter=[])
        assert {"admins-share", "alice-g"} <= {g.group_id for g in listed.groups}
        (g,) = conn.request(ApiKey.SHARE_GROUP_DESCRIBE, group_ids=["alice-g"]).groups
        assert (
            g.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        )  # listing is not describing


def _share_consume(cluster: Cluster, group: str) -> tuple[list[bytes], list[str]]:
    errors: list[str] = []
    consumer = ck.ShareConsumer(
        {
            **cluster.client_config("alice"),
            "group.id": group,
            "log_level": 3,
            "error_cb": lambda e: errors.append(e.name()),
        }
    )
    got: list[bytes] = []
    try:
        consumer.subscribe([OPEN])

        def answered() -> bool:
            try:
                messages = consumer.poll(0.2)
            except ck.KafkaException as exc:
                errors.append(exc.args[0].name())
                return True
            for m in messages:
                if m.error() is not None:
                    errors.append(m.error().name())
                else:
                    got.append(m.value())
            return len(got) >= 3 or bool(errors)

        eventually(answered, DEADLINE_S, interval_s=0, retry_on=())
    finally:
        consumer.close()
    return got, errors


def test_confluent_share_consumer_allowed_and_denied_group(cluster: Cluster) -> None:
    got, errors = _share_consume(cluster, "alice-ck")
    assert errors == [] and sorted(got) == [f"{OPEN}-{i}".encode() for i in range(3)]
    got, errors = _share_consume(cluster, "bob-ck")
    assert got == [] and "GROUP_AUTHORIZATION_FAILED" in errors
