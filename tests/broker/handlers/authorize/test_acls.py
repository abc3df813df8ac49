"""ACLs: the authorizer's decisions (kproto.broker.acl), and the broker enforcing them
on confluent-kafka clients: a principal produces to one topic and not another,
consumes only in its own group, sees only the topics it may describe, cannot
administer ACLs; the super user can; CreateAcls/DescribeAcls/DeleteAcls through
AdminClient with literal and prefixed patterns, allow and deny."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    AclStore,
    PatternType,
    ResourceType,
)
from kproto.connection import Connection, KafkaConnectionError
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type
from kproto.meta import build_entity
from tests.broker.handlers.authorize.support import acl_cluster, plain
from tests.broker.wire import describe_configs, join_consumer_group
from tests.eventually import eventually

confluent_kafka = pytest.importorskip("confluent_kafka")
ck = pytest.importorskip("confluent_kafka.admin")
CkAclBinding, AclBindingFilter, AdminClient = (
    ck.AclBinding,
    ck.AclBindingFilter,
    ck.AdminClient,
)
ResourcePatternType, CkResource = ck.ResourcePatternType, ck.ResourceType
CkOp, CkPerm = ck.AclOperation, ck.AclPermissionType

T, G = ResourceType.TOPIC, ResourceType.GROUP
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED


def binding(
    rt: int, name: str, pattern: int, op: int, perm: int, who: str = "User:alice"
) -> AclBinding:
    return AclBinding(rt, name, pattern, who, "*", op, perm)


def test_authorize_rules() -> None:
    store = AclStore({"User:admin"})

    def ok(who: str, op: int, rt: int, name: str) -> bool:
        return store.authorize(who, "1.2.3.4", AclOperation(op), ResourceType(rt), name)

    assert not ok("User:alice", AclOperation.READ, T, "orders")  # no ACL: denied
    assert ok("User:admin", AclOperation.DELETE, T, "orders")  # super user
    store.add(binding(T, "ord", PRE, AclOperation.READ, ALLOW))
    assert ok("User:alice", AclOperation.READ, T, "orders")
    assert ok("User:alice", AclOperation.DESCRIBE, T, "orders")  # READ implies DESCRIBE
    assert not ok("User:alice", AclOperation.WRITE, T, "orders")
    assert not ok("User:bob", AclOperation.READ, T, "orders")
    assert not ok("User:alice", AclOperation.READ, T, "other")
    store.add(binding(T, "orders-secret", LIT, AclOperation.ALL, DENY))
    assert not ok("User:alice", AclOperation.READ, T, "orders-secret")  # deny wins
    store.add(binding(T, "*", LIT, AclOperation.WRITE, ALLOW, who="User:*"))
    assert ok("User:bob", AclOperation.WRITE, T, "anything")
    assert ok("User:bob", AclOperation.DESCRIBE, T, "anything")
    store.add(
        AclBinding(G, "g", LIT, "User:carol", "10.0.0.1", AclOperation.READ, ALLOW)
    )
    assert store.authorize("User:carol", "10.0.0.1", AclOperation.READ, G, "g")
    assert not store.authorize("User:carol", "10.0.0.2", AclOperation.READ, G, "g")


def test_filters_and_validation() -> None:
    store = AclStore()
    a = binding(T, "orders", LIT, AclOperation.READ, ALLOW)
    b = binding(T, "ord", PRE, AclOperation.WRITE, ALLOW)
    c = binding(G, "orders", LIT, AclOperation.READ, ALLOW)
    for x in (a, b, c):
        store.add(x)
    match = AclFilter(
        T,
        "orders",
        PatternType.MATCH,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert [x for x in store if match.matches(x)] == [a, b]
    exact = AclFilter(
        ResourceType.ANY,
        "orders",
        PatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert [x for x in store if exact.matches(x)] == [a, c]
    assert store.remove(
        AclFilter(T, None, PRE, None, None, AclOperation.ANY, AclPermissionType.ANY)
    ) == [b]
    assert list(store) == [a, c]
    assert (
        binding(T, "x", PatternType.MATCH, AclOperation.READ, ALLOW).check()
        == "Invalid pattern type 2"
    )
    assert "principal" in (AclBinding(T, "x", LIT, "alice", "*", 3, 3).check() or "")
    assert "kafka-cluster" in (
        binding(ResourceType.CLUSTER, "c", LIT, 7, 3).check() or ""
    )


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with acl_cluster(num_partitions=1) as c:
        for name in ("alice-orders", "alice-secret", "bob-orders"):
            c.create_topic(name)
        admin = AdminClient(c.client_config("admin"))
        acls = [
            CkAclBinding(
                CkResource.TOPIC,
                "alice-",
                ResourcePatternType.PREFIXED,
                "User:alice",
                "*",
                CkOp.ALL,
                CkPerm.ALLOW,
            ),
            CkAclBinding(
                CkResource.TOPIC,
                "alice-secret",
                ResourcePatternType.LITERAL,
                "User:alice",
                "*",
                CkOp.WRITE,
                CkPerm.DENY,
            ),
            CkAclBinding(
                CkResource.GROUP,
                "alice-group",
                ResourcePatternType.LITERAL,
                "User:alice",
                "*",
                CkOp.READ,
                CkPerm.ALLOW,
            ),
        ]
        for future in admin.create_acls(acls).values():
            future.result(30)
        yield c


def _delivery(config: dict[str, Any], topic: str) -> str:
    results: list[Any] = []
    producer = confluent_kafka.Producer({**config, "message.timeout.ms": 5000})
    producer.produce(topic, b"v", on_delivery=lambda err, msg: results.append(err))
    producer.flush(15)
    assert len(results) == 1
    return "ok" if results[0] is None else results[0].name()


def test_produce_allowed_and_denied(cluster: Cluster) -> None:
    alice = cluster.client_config("alice")
    assert _delivery(alice, "alice-orders") == "ok"
    assert _delivery(alice, "bob-orders") == "TOPIC_AUTHORIZATION_FAILED"
    assert _delivery(alice, "alice-secret") == "TOPIC_AUTHORIZATION_FAILED"  # deny wins
    assert _delivery(cluster.client_config("admin"), "bob-orders") == "ok"
    assert [r.value for r in cluster.records("bob-orders")] == [b"v"]


def _consume(
    config: dict[str, Any], group: str, topic: str
) -> tuple[list[bytes], list[str]]:
    errors: list[str] = []
    consumer = confluent_kafka.Consumer(
        {
            **config,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "error_cb": lambda e: errors.append(e.name()),
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []

    def answered() -> bool:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error():
            errors.append(msg.error().name())
        elif msg is not None:
            got.append(msg.value())
        return bool(got or errors)

    eventually(answered, 15, interval_s=0, retry_on=())
    consumer.close()
    return got, errors


def test_consume_only_in_own_group(cluster: Cluster) -> None:
    alice = cluster.client_config("alice")
    assert _delivery(alice, "alice-orders") == "ok"
    got, errors = _consume(alice, "alice-group", "alice-orders")
    assert got and not errors
    got, errors = _consume(alice, "bob-group", "alice-orders")
    assert not got and "GROUP_AUTHORIZATION_FAILED" in errors


def test_metadata_hides_topics(cluster: Cluster) -> None:
    alice = AdminClient(cluster.client_config("alice"))
    assert sorted(alice.list_topics(timeout=10).topics) == [
        "alice-orders",
        "alice-secret",
    ]
    admin = AdminClient(cluster.client_config("admin"))
    assert {"alice-orders", "bob-orders"} <= set(admin.list_topics(timeout=10).topics)
    md = alice.list_topics("bob-orders", timeout=10).topics["bob-orders"]
    assert md.error is not None and md.error.name() == "TOPIC_AUTHORIZATION_FAILED"


def test_acl_admin(cluster: Cluster) -> None:
    admin = AdminClient(cluster.client_config("admin"))
    alice = AdminClient(cluster.client_config("alice"))
    everything = AclBindingFilter(
        CkResource.ANY, None, ResourcePatternType.ANY, None, None, CkOp.ANY, CkPerm.ANY
    )
    described = admin.describe_acls(everything).result(30)
    assert {
        (b.name, b.resource_pattern_type, b.permission_type) for b in described
    } >= {
        ("alice-", ResourcePatternType.PREFIXED, CkPerm.ALLOW),
        ("alice-secret", ResourcePatternType.LITERAL, CkPerm.DENY),
    }
    # (librdkafka drops DescribeAcls' top-level error: asked through kproto)
    sasl = plain("alice")
    with Connection("127.0.0.1", cluster.servers[0].port, sasl=sasl) as conn:
        refused = conn.request(
            ApiKey.DESCRIBE_ACLS,
            resource_type_filter=ResourceType.ANY,
            resource_name_filter=None,
            pattern_type_filter=PatternType.ANY,
            principal_filter=None,
            host_filter=None,
            operation=AclOperation.ANY,
            permission_type=AclPermissionType.ANY,
        )
    assert (refused.error_code, refused.resources) == (
        31,
        (),
    )  # CLUSTER_AUTHORIZATION_FAILED
    extra = CkAclBinding(
        CkResource.TOPIC,
        "bob-orders",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        CkOp.READ,
        CkPerm.ALLOW,
    )
    with pytest.raises(
        confluent_kafka.KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"
    ):
        alice.create_acls([extra])[extra].result(30)
    admin.create_acls([extra])[extra].result(30)
    assert "bob-orders" in alice.list_topics(timeout=10).topics  # READ implies DESCRIBE
    gone = AclBindingFilter(
        CkResource.TOPIC,
        "bob-orders",
        ResourcePatternType.LITERAL,
        None,
        None,
        CkOp.ANY,
        CkPerm.ANY,
    )
    deleted = admin.delete_acls([gone])[gone].result(30)
    assert [b.name for b in deleted] == ["bob-orders"]
    assert "bob-orders" not in alice.list_topics(timeout=10).topics


def test_unchecked_api_is_for_super_users_only(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An API the authorizer has no check for (here: ListGroups, taken out of the
    list) is served to super users only; anyone else's connection is closed."""
    import kproto.broker.security as security

    monkeypatch.setattr(
        security, "CHECKED_APIS", security.CHECKED_APIS - {ApiKey.LIST_GROUPS}
    )
    port = cluster.servers[0].port
    alice = plain("alice")
    with (
        caplog.at_level("WARNING", logger="kproto.broker"),
        Connection("127.0.0.1", port, sasl=alice) as conn,
    ):
        with pytest.raises(KafkaConnectionError):
            conn.request(ApiKey.LIST_GROUPS)
    assert "serves it to super users only" in caplog.text
    admin = plain("admin")
    with Connection("127.0.0.1", port, sasl=admin) as conn:
        assert conn.request(ApiKey.LIST_GROUPS).error_code == 0


def test_admin_apis_refused_per_resource(cluster: Cluster) -> None:
    """Configs, partitions, records and groups: alice gets Kafka's authorization
    error for what is not hers, and her own resources are served in the same
    request."""
    from kproto.client import BrokerError, Client, TopicPartition

    port = cluster.servers[0].port
    alice = plain("alice")
    admin = plain("admin")
    with Client(cluster.bootstrap_servers, sasl=admin) as client:
        client.commit_offsets("admins-only", {TopicPartition("bob-orders", 0): 0})
    with Client(cluster.bootstrap_servers, sasl=alice) as client:
        client.commit_offsets("alice-group", {TopicPartition("alice-orders", 0): 0})
        with pytest.raises(BrokerError) as refused:
            client.commit_offsets("alice-group", {TopicPartition("bob-orders", 0): 0})
        assert refused.value.error_code == 29  # TOPIC_AUTHORIZATION_FAILED
        with pytest.raises(BrokerError) as refused:
            client.commit_offsets("admins-only", {TopicPartition("alice-orders", 0): 0})
        assert refused.value.error_code == 30  # GROUP_AUTHORIZATION_FAILED
    with Connection("127.0.0.1", port, sasl=alice) as conn:
        described = describe_configs(
            conn, (2, "alice-orders"), (2, "bob-orders"), (4, "1")
        )
        codes = {r.resource_name: r.error_code for r in described.results}
        assert codes == {"alice-orders": 0, "bob-orders": 29, "1": 31}
        assert [r for r in described.results if r.resource_name == "alice-orders"][
            0
        ].configs
        created = conn.request(
            ApiKey.CREATE_PARTITIONS,
            topics=[{"name": "bob-orders", "count": 2, "assignments": None}],
            timeout_ms=5000,
        )
        assert [(r.name, r.error_code) for r in created.results] == [("bob-orders", 29)]
        deleted = conn.request(
            ApiKey.DELETE_RECORDS,
            topics=[
                {
                    "name": "bob-orders",
                    "partitions": [{"partition_index": 0, "offset": 0}],
                }
            ],
            timeout_ms=5000,
        )
        assert deleted.topics[0].partitions[0].error_code == 29
        groups = conn.request(
            ApiKey.DESCRIBE_GROUPS, groups=["alice-group", "bob-group"]
        )
        codes = {g.group_id: g.error_code for g in groups.groups}
        assert codes["bob-group"] == 30 and codes["alice-group"] != 30
        listed = conn.request(ApiKey.LIST_GROUPS)
        assert [g.group_id for g in listed.groups] == ["alice-group"]
    with Connection("127.0.0.1", port, sasl=admin) as conn:
        listed = conn.request(ApiKey.LIST_GROUPS)
        assert {"admins-only", "alice-group"} <= {g.group_id for g in listed.groups}
    assert cluster.state.topic_partitions("bob-orders") == 1


def test_acl_apis_without_authorizer() -> None:
    with Cluster() as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        acl = CkAclBinding(
            CkResource.TOPIC,
            "t",
            ResourcePatternType.LITERAL,
            "User:a",
            "*",
            CkOp.READ,
            CkPerm.ALLOW,
        )
        with pytest.raises(confluent_kafka.KafkaException, match="No Authorizer"):
            admin.create_acls([acl])[acl].result(30)


def test_authorized_operations_follow_the_acls(cluster: Cluster) -> None:
    """KIP-430 with an authorizer: the supported operations the principal is
    allowed (Kafka's ``AuthHelper.authorizedOperations``)."""
    from kproto.broker.authorized_operations import supported_operations

    port = cluster.servers[0].port
    alice = plain("alice")
    asked = {
        "topics": [{"name": "alice-orders"}, {"name": "alice-secret"}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": True,
    }
    with Connection("127.0.0.1", port, sasl=alice) as conn:
        answer = conn.request(ApiKey.METADATA, **asked)
    ops = {t.name: t.topic_authorized_operations for t in answer.topics}
    every = supported_operations(T)
    assert ops["alice-orders"] == every
    assert ops["alice-secret"] == every & ~(1 << AclOperation.WRITE)
    admin = plain("admin")
    with Connection("127.0.0.1", port, sasl=admin) as conn:
        described = conn.request(
            ApiKey.DESCRIBE_CLUSTER, include_cluster_authorized_operations=True
        )
    assert described.cluster_authorized_operations == supported_operations(
        ResourceType.CLUSTER
    )


def test_group_authorized_operations_follow_the_acls(cluster: Cluster) -> None:
    """DescribeGroups reports the group operations the principal may use: alice's
    READ on her group implies DESCRIBE (Kafka's ``AclEntry`` implied operations), a
    super user gets every supported one; a group described with an error keeps
    the field's default, as Kafka (ConsumerGroupDescribe of a classic group)."""
    from kproto.broker.authorized_operations import NOT_REQUESTED, supported_operations

    port = cluster.servers[0].port
    admin = plain("admin")
    commit = build_entity(  # v9: topics by name; makes an Empty classic group
        request_type(ApiKey.OFFSET_COMMIT, 9),
        {
            "group_id": "alice-group",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {
                    "name": "alice-orders",
                    "partitions": [{"partition_index": 0, "committed_offset": 0}],
                }
            ],
        },
    )
    with Connection("127.0.0.1", port, sasl=admin) as conn:
        committed = conn.send(commit)
    assert committed.topics[0].partitions[0].error_code == 0
    mine = (1 << AclOperation.READ) | (1 << AclOperation.DESCRIBE)
    for user, expected in (
        ("alice", mine),
        ("admin", supported_operations(ResourceType.GROUP)),
    ):
        sasl = plain(user)
        with Connection("127.0.0.1", port, sasl=sasl) as conn:
            classic = conn.request(
                ApiKey.DESCRIBE_GROUPS,
                groups=["alice-group"],
                include_authorized_operations=True,
            )
            modern = conn.request(
                ApiKey.CONSUMER_GROUP_DESCRIBE,
                group_ids=["alice-group"],
                include_authorized_operations=True,
            )
        assert classic.groups[0].error_code == 0, user
        assert classic.groups[0].authorized_operations == expected, user
        assert modern.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND, user
        assert modern.groups[0].authorized_operations == NOT_REQUESTED, user


def test_cluster_admin_apis_need_cluster_acls(cluster: Cluster) -> None:
    """ElectLeaders, UpdateFeatures, AlterClientQuotas ... need their cluster
    operation (Kafka's ``KafkaApis`` checks); OffsetForLeaderEpoch topic DESCRIBE."""
    port = cluster.servers[0].port
    alice = plain("alice")
    admin = plain("admin")
    features = {
        "timeout_ms": 1000,
        "validate_only": True,
        "feature_updates": [
            {"feature": "share.version", "max_version_level": 1, "upgrade_type": 1}
        ],
    }
    quotas = {
        "validate_only": True,
        "entries": [
            {
                "entity": [{"entity_type": "user", "entity_name": "alice"}],
                "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}],
            }
        ],
    }
    epochs = {
        "replica_id": -1,
        "topics": [
            {"topic": t, "partitions": [{"partition": 0, "leader_epoch": 0}]}
            for t in ("alice-orders", "bob-orders")
        ],
    }
    denied = 31  # CLUSTER_AUTHORIZATION_FAILED
    with Connection("127.0.0.1", port, sasl=alice) as conn:
        assert conn.request(ApiKey.UPDATE_FEATURES, **features).error_code == denied
        assert (
            conn.request(ApiKey.ALTER_CLIENT_QUOTAS, **quotas).entries[0].error_code
            == denied
        )
        listed = conn.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, topics=None)
        assert listed.error_code == denied
        answer = conn.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, **epochs)
        codes = {t.topic: t.partitions[0].error_code for t in answer.topics}
        assert codes["bob-orders"] == 29  # TOPIC_AUTHORIZATION_FAILED
        assert codes["alice-orders"] in (0, 6)  # served (or not led by this node)
    with Connection("127.0.0.1", port, sasl=admin) as conn:
        assert conn.request(ApiKey.UPDATE_FEATURES, **features).error_code == 0
        assert (
            conn.request(ApiKey.ALTER_CLIENT_QUOTAS, **quotas).entries[0].error_code
            == 0
        )


def test_group_configs_need_group_acls(cluster: Cluster) -> None:
    port = cluster.servers[0].port
    alice = plain("alice")
    with Connection("127.0.0.1", port, sasl=alice) as conn:
        answer = describe_configs(conn, (32, "alice-group"), (32, "bob-group"))
    codes = {r.resource_name: r.error_code for r in answer.results}
    # READ on alice-group does not imply DESCRIBE_CONFIGS
    assert codes == {"alice-group": 30, "bob-group": 30}  # GROUP_AUTHORIZATION_FAILED
    admin = plain("admin")
    with Connection("127.0.0.1", port, sasl=admin) as conn:
        answer = describe_configs(conn, (32, "bob-group"))
    assert answer.results[0].error_code == 0


def test_describe_topic_partitions_hides_topics(cluster: Cluster) -> None:
    port = cluster.servers[0].port
    alice = plain("alice")
    with Connection("127.0.0.1", port, sasl=alice) as conn:
        listed = conn.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, topics=[])
        named = conn.request(
            ApiKey.DESCRIBE_TOPIC_PARTITIONS,
            topics=[{"name": "alice-orders"}, {"name": "bob-orders"}],
        )
    assert {t.name for t in listed.topics} == {"alice-orders", "alice-secret"}
    codes = {t.name: t.error_code for t in named.topics}
    assert codes == {"alice-orders": 0, "bob-orders": 29}  # TOPIC_AUTHORIZATION_FAILED


def test_every_served_api_has_a_check() -> None:
    """No API the broker serves falls back to super users only under ACLs."""
    from kproto.broker.acl import CHECKED_APIS
    from kproto.broker.handlers import HANDLERS
    from kproto.broker.handlers.authorize import CHECKS, UNCHECKED

    assert set(HANDLERS) <= CHECKED_APIS
    assert CHECKED_APIS - UNCHECKED == set(CHECKS)


def test_consumer_group_heartbeat_and_describe(cluster: Cluster) -> None:
    """KIP-848: heartbeat group READ then DESCRIBE on each subscribed topic;
    describe group DESCRIBE per group, the member's host as Kafka writes it."""
    port = cluster.servers[0].port
    alice = plain("alice")

    with Connection("127.0.0.1", port, sasl=alice) as conn:
        joined = join_consumer_group(conn, "alice-group", "m1", ["alice-orders"])
        assert joined.error_code == 0
        refused = join_consumer_group(conn, "bob-group", "m1", ["alice-orders"])
        assert refused.error_code == 30
        mixed = join_consumer_group(
            conn, "alice-group", "m2", ["alice-orders", "bob-orders"]
        )
        assert mixed.error_code == 29  # TOPIC_AUTHORIZATION_FAILED
        described = conn.request(
            ApiKey.CONSUMER_GROUP_DESCRIBE,
            group_ids=["alice-group", "bob-group"],
            include_authorized_operations=True,
        )
    groups = {g.group_id: g for g in described.groups}
    ok = groups["alice-group"]
    assert ok.error_code == 0
    assert [m.client_host for m in ok.members] == ["/127.0.0.1"]
    assert ok.authorized_operations == (1 << 3) | (1 << 8)  # READ implies DESCRIBE
    assert groups["bob-group"].error_code == 30  # GROUP_AUTHORIZATION_FAILED
