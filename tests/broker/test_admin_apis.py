"""The admin and client APIs of issue 16 item 5, at every version kproto generates,
checked at the protocol level with kproto's Connection."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.handlers import HANDLERS
from kproto.broker.handlers.cluster_info import served_api_ranges
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions, request_type
from kproto.meta import build_entity
from kproto.records import encode_batch


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(nodes=2, data_dir=tmp_path_factory.mktemp("apis")) as c:
        yield c


def connect(cluster: Cluster, node_id: int) -> Connection:
    info = cluster.state.nodes[node_id]
    conn = Connection(info.host, info.port, timeout_s=30)
    conn.negotiate()
    return conn


@pytest.fixture
def conn(cluster: Cluster) -> Iterator[Connection]:
    c = connect(cluster, cluster.state.node_ids[0])
    yield c
    c.close()


def send(conn: Connection, api_key: ApiKey, version: int, **fields: Any) -> Any:
    return conn.send(
        build_entity(request_type(api_key, version), fields, drop_absent=True)
    )


def versions(api_key: ApiKey) -> range:
    return api_versions(api_key)


NEW_APIS = (
    ApiKey.OFFSET_FOR_LEADER_EPOCH,
    ApiKey.DESCRIBE_LOG_DIRS,
    ApiKey.ELECT_LEADERS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.DESCRIBE_CLIENT_QUOTAS,
    ApiKey.ALTER_CLIENT_QUOTAS,
    ApiKey.UPDATE_FEATURES,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS,
)


def test_every_version_is_advertised(conn: Connection) -> None:
    ranges = served_api_ranges(HANDLERS)
    for api_key in NEW_APIS:
        generated = api_versions(api_key)
        assert ranges[api_key] == (generated.start, generated.stop - 1)
        assert api_key in conn.broker_api_versions


# -- OffsetForLeaderEpoch -----------------------------------------------------------


def _leader_conn(cluster: Cluster, topic: str, partition: int) -> Connection:
    leader = cluster.state.leader(topic, partition)
    assert leader is not None
    return connect(cluster, leader)


def _produce(conn: Connection, cluster: Cluster, topic: str, batch: bytes) -> None:
    answer = conn.request(
        ApiKey.PRODUCE,
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            {
                "topic_id": cluster.state.topics[topic].topic_id,
                "partition_data": [{"index": 0, "records": batch}],
            }
        ],
    )
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def _move_leader_to(cluster: Cluster, topic: str, epoch: int) -> None:
    """Move the leader of ``topic``-0 between the nodes until its epoch is ``epoch``."""
    while cluster.leader_epoch(topic, 0) < epoch:
        other = next(n for n in cluster.state.node_ids if n != cluster.leader(topic))
        cluster.move_leader(topic, 0, other)
    assert cluster.leader_epoch(topic, 0) == epoch


def test_offset_for_leader_epoch(cluster: Cluster) -> None:
    cluster.create_topic("epochs", 1)
    # batches written at leader epochs 0 (offsets 0-1), 2 (2-4) and 5 (5): the
    # leader stamps its epoch over the producer's (99); epochs 1, 3, 4 wrote nothing
    for epoch, count in ((0, 2), (2, 3), (5, 1)):
        _move_leader_to(cluster, "epochs", epoch)
        rows = [(None, b"v", (), 1000 + i) for i in range(count)]
        with _leader_conn(cluster, "epochs", 0) as pc:
            _produce(
                pc, cluster, "epochs", encode_batch(rows, partition_leader_epoch=99)
            )
    stored = [
        b.partition_leader_epoch for b in cluster.state.logs["epochs", 0].batches()
    ]
    assert stored == [0, 2, 5]
    c = _leader_conn(cluster, "epochs", 0)
    try:
        expected = {
            0: (0, 2),  # ends where epoch 2 starts
            1: (0, 2),  # unknown epoch between: the one below it, next start
            2: (2, 5),
            4: (2, 5),
            5: (5, 6),  # the latest epoch ends at the log end offset
            7: (-1, -1),  # above every known epoch
            -1: (-1, -1),
        }
        for version in versions(ApiKey.OFFSET_FOR_LEADER_EPOCH):
            answer = send(
                c,
                ApiKey.OFFSET_FOR_LEADER_EPOCH,
                version,
                replica_id=-1,
                topics=[
                    {
                        "topic": "epochs",
                        "partitions": [
                            {
                                "partition": 0,
                                "leader_epoch": e,
                                "current_leader_epoch": -1,
                            }
                            for e in expected
                        ],
                    }
                ],
            )
            got = {
                e: (getattr(p, "leader_epoch", want[0]), p.end_offset)  # v0: no epoch
                for (e, want), p in zip(
                    expected.items(), answer.topics[0].partitions, strict=True
                )
            }
            assert all(
                p.error_code == ErrorCode.NONE for p in answer.topics[0].partitions
            )
            assert got == expected, version
        # the current leader epoch: the log end offset when it is the latest
        plain = "plain"
        cluster.create_topic(plain, 1)
        pc = _leader_conn(cluster, plain, 0)
        _produce(pc, cluster, plain, encode_batch([(None, b"x", (), 1)] * 3))
        answer = pc.request(
            ApiKey.OFFSET_FOR_LEADER_EPOCH,
            replica_id=-1,
            topics=[
                {
                    "topic": plain,
                    "partitions": [
                        {"partition": 0, "leader_epoch": 0, "current_leader_epoch": 0},
                        {"partition": 0, "leader_epoch": 0, "current_leader_epoch": 3},
                        {"partition": 7, "leader_epoch": 0, "current_leader_epoch": -1},
                    ],
                },
            ],
        )
        first, newer, missing = answer.topics[0].partitions
        assert (first.error_code, first.leader_epoch, first.end_offset) == (
            ErrorCode.NONE,
            0,
            3,
        )
        assert newer.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        pc.close()
    finally:
        c.close()


def test_offset_for_leader_epoch_on_a_follower(cluster: Cluster) -> None:
    cluster.create_topic("follower", 1)
    leader = cluster.state.leader("follower", 0)
    other = next(n for n in cluster.state.node_ids if n != leader)
    c = connect(cluster, other)
    try:
        answer = c.request(
            ApiKey.OFFSET_FOR_LEADER_EPOCH,
            replica_id=-1,
            topics=[
                {
                    "topic": "follower",
                    "partitions": [{"partition": 0, "leader_epoch": 0}],
                }
            ],
        )
        assert (
            answer.topics[0].partitions[0].error_code
            == ErrorCode.NOT_LEADER_OR_FOLLOWER
        )
    finally:
        c.close()


# -- DescribeLogDirs ----------------------------------------------------------------


def test_describe_log_dirs(cluster: Cluster) -> None:
    cluster.create_topic("dirs", 2)
    for node in cluster.state.node_ids:
        c = connect(cluster, node)
        try:
            for version in versions(ApiKey.DESCRIBE_LOG_DIRS):
                answer = send(
                    c,
                    ApiKey.DESCRIBE_LOG_DIRS,
                    version,
                    topics=[{"topic": "dirs", "partitions": [0, 1]}],
                )
                (result,) = answer.results
                assert result.error_code == ErrorCode.NONE
                assert Path(result.log_dir) == cluster.state.data_dir.resolve()
                led = [p for p in (0, 1) if cluster.state.leader("dirs", p) == node]
                described = [
                    p.partition_index for t in result.topics for p in t.partitions
                ]
                assert described == led
                for t in result.topics:
                    for p in t.partitions:
                        plog = cluster.state.partition_log("dirs", p.partition_index)
                        assert plog is not None
                        assert p.partition_size == plog.size_bytes
                        assert p.offset_lag == 0
                if version >= 4:
                    usage = shutil.disk_usage(cluster.state.data_dir)
                    assert result.total_bytes == usage.total
                    assert 0 < result.usable_bytes <= usage.total
            everything = c.request(ApiKey.DESCRIBE_LOG_DIRS, topics=None)
            names = {t.name for t in everything.results[0].topics}
            assert "dirs" in names or all(
                cluster.state.leader("dirs", p) != node for p in (0, 1)
            )
        finally:
            c.close()


# -- ElectLeaders and reassignments --------------------------------------------------


def test_elect_leaders_is_not_needed(cluster: Cluster, conn: Connection) -> None:
    cluster.create_topic("elect", 2)
    for version in versions(ApiKey.ELECT_LEADERS):
        answer = send(
            conn,
            ApiKey.ELECT_LEADERS,
            version,
            election_type=0,
            topic_partitions=[
                {"topic": "elect", "partitions": [0, 1, 9]},
                {"topic": "nope", "partitions": [0]},
            ],
            timeout_ms=1000,
        )
        results = {
            (r.topic, p.partition_id): p.error_code
            for r in answer.replica_election_results
            for p in r.partition_result
        }
        assert results == {
            ("elect", 0): ErrorCode.ELECTION_NOT_NEEDED,
            ("elect", 1): ErrorCode.ELECTION_NOT_NEEDED,
            ("elect", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        everything = send(
            conn, ApiKey.ELECT_LEADERS, version, topic_partitions=None, timeout_ms=1000
        )
        assert everything.replica_election_results == ()


def test_alter_and_list_partition_reassignments(
    cluster: Cluster, conn: Connection
) -> None:
    cluster.create_topic("moving", 2)
    nodes = cluster.state.node_ids
    for version in versions(ApiKey.ALTER_PARTITION_REASSIGNMENTS):
        target = [n for n in nodes if n != cluster.state.leader("moving", 0)][0]
        answer = send(
            conn,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            version,
            timeout_ms=1000,
            topics=[
                {
                    "name": "moving",
                    "partitions": [
                        {"partition_index": 0, "replicas": [target]},
                        {"partition_index": 1, "replicas": None},
                        {"partition_index": 5, "replicas": [target]},
                        {"partition_index": 1, "replicas": [77]},
                        {"partition_index": 1, "replicas": list(nodes)},
                    ],
                }
            ],
        )
        assert answer.error_code == ErrorCode.NONE
        errors = [p.error_code for p in answer.responses[0].partitions]
        assert errors == [
            ErrorCode.NONE,
            ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ErrorCode.NONE,  # the replication factor may change (KIP-860 default)
        ]
        assert cluster.state.leader("moving", 0) == target
        metadata = conn.request(ApiKey.METADATA, topics=[{"name": "moving"}])
        leaders = {
            p.partition_index: (p.leader_id, list(p.replica_nodes))
            for p in metadata.topics[0].partitions
        }
        assert leaders[0] == (target, [target])
        assert leaders[1][1] == list(nodes)
        if version >= 1:
            kept = send(
                conn,
                ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                version,
                timeout_ms=1000,
                allow_replication_factor_change=False,
                topics=[
                    {
                        "name": "moving",
                        "partitions": [{"partition_index": 1, "replicas": [target]}],
                    }
                ],
            )
            assert kept.responses[0].partitions[0].error_code == (
                ErrorCode.INVALID_REPLICATION_FACTOR
            )
    listed = conn.request(
        ApiKey.LIST_PARTITION_REASSIGNMENTS, timeout_ms=1000, topics=None
    )
    assert (listed.error_code, listed.topics) == (ErrorCode.NONE, ())


# -- client quotas -------------------------------------------------------------------


def _entity(**pairs: str | None) -> list[dict[str, str | None]]:
    return [
        {"entity_type": k.replace("_", "-"), "entity_name": v} for k, v in pairs.items()
    ]


def test_client_quotas(cluster: Cluster, conn: Connection) -> None:
    for version in versions(ApiKey.ALTER_CLIENT_QUOTAS):
        answer = send(
            conn,
            ApiKey.ALTER_CLIENT_QUOTAS,
            version,
            validate_only=False,
            entries=[
                {
                    "entity": _entity(user="alice"),
                    "ops": [
                        {"key": "producer_byte_rate", "value": 1024.0, "remove": False}
                    ],
                },
                {
                    "entity": _entity(user="alice", client_id=None),
                    "ops": [
                        {"key": "request_percentage", "value": 12.5, "remove": False}
                    ],
                },
                {
                    "entity": _entity(ip=None),
                    "ops": [
                        {
                            "key": "connection_creation_rate",
                            "value": 5.0,
                            "remove": False,
                        }
                    ],
                },
                {
                    "entity": _entity(user="bob"),
                    "ops": [
                        {"key": "producer_byte_rate", "value": 1.5, "remove": False}
                    ],
                },
                {
                    "entity": _entity(user="bob"),
                    "ops": [{"key": "no_such_quota", "value": 1.0, "remove": False}],
                },
                {
                    "entity": _entity(ip="1.2.3.4", user="x"),
                    "ops": [
                        {
                            "key": "connection_creation_rate",
                            "value": 1.0,
                            "remove": False,
                        }
                    ],
                },
                {
                    "entity": _entity(ip="not-an-ip"),
                    "ops": [
                        {
                            "key": "connection_creation_rate",
                            "value": 1.0,
                            "remove": False,
                        }
                    ],
                },
                {
                    "entity": _entity(user="carol"),
                    "ops": [
                        {"key": "consumer_byte_rate", "value": 0.0, "remove": False}
                    ],
                },
            ],
        )
        errors = [e.error_code for e in answer.entries]
        assert errors == [ErrorCode.NONE] * 3 + [ErrorCode.INVALID_REQUEST] * 5
    for version in versions(ApiKey.DESCRIBE_CLIENT_QUOTAS):

        def describe(
            strict: bool, *components: tuple[str, int, str | None], v: int = version
        ) -> Any:
            return send(
                conn,
                ApiKey.DESCRIBE_CLIENT_QUOTAS,
                v,
                strict=strict,
                components=[
                    {"entity_type": t, "match_type": m, "match": n}
                    for t, m, n in components
                ],
            )

        exact = describe(True, ("user", 0, "alice"))
        assert exact.error_code == ErrorCode.NONE
        ((entity, values),) = [
            ({(e.entity_type, e.entity_name) for e in x.entity}, x.values)
            for x in exact.entries
        ]
        assert entity == {("user", "alice")}
        assert [(v.key, v.value) for v in values] == [("producer_byte_rate", 1024.0)]
        loose = describe(False, ("user", 2, None))
        assert len(loose.entries) == 2  # alice alone, and alice with the default client
        default_client = describe(False, ("client-id", 1, None))
        assert len(default_client.entries) == 1
        ips = describe(False, ("ip", 1, None))
        assert [v.key for v in ips.entries[0].values] == ["connection_creation_rate"]
        bad = describe(False, ("ip", 2, None), ("user", 2, None))
        assert bad.error_code == ErrorCode.INVALID_REQUEST
    removed = conn.request(
        ApiKey.ALTER_CLIENT_QUOTAS,
        validate_only=False,
        entries=[
            {
                "entity": _entity(ip=None),
                "ops": [
                    {"key": "connection_creation_rate", "value": 0.0, "remove": True}
                ],
            }
        ],
    )
    assert removed.entries[0].error_code == ErrorCode.NONE
    assert cluster.state.dynamic.quotas.get((("ip", None),)) is None


def test_client_quotas_survive_a_restart(tmp_path: Path) -> None:
    with Cluster(data_dir=tmp_path) as c:
        conn = connect(c, c.state.node_ids[0])
        answer = conn.request(
            ApiKey.ALTER_CLIENT_QUOTAS,
            validate_only=False,
            entries=[
                {
                    "entity": _entity(client_id="app"),
                    "ops": [
                        {"key": "consumer_byte_rate", "value": 2048.0, "remove": False}
                    ],
                }
            ],
        )
        assert answer.entries[0].error_code == ErrorCode.NONE
        conn.close()
    with Cluster(data_dir=tmp_path) as c:
        assert c.state.dynamic.quotas == {
            (("client-id", "app"),): {"consumer_byte_rate": 2048.0}
        }


# -- features ------------------------------------------------------------------------


def test_api_versions_reports_features(conn: Connection) -> None:
    answer = send(
        conn,
        ApiKey.API_VERSIONS,
        3,
        client_software_name="t",
        client_software_version="1",
    )
    supported = {
        f.name: (f.min_version, f.max_version) for f in answer.supported_features
    }
    assert supported["metadata.version"] == (7, 25)
    finalized = {f.name: f.max_version_level for f in answer.finalized_features}
    assert finalized["metadata.version"] == 25


def test_update_features(tmp_path: Path) -> None:
    with Cluster(data_dir=tmp_path) as c:
        conn = connect(c, c.state.node_ids[0])
        for version in versions(ApiKey.UPDATE_FEATURES):
            kind = {"upgrade_type": 1} if version >= 1 else {"allow_downgrade": False}
            bad = send(
                conn,
                ApiKey.UPDATE_FEATURES,
                version,
                timeout_ms=1000,
                feature_updates=[
                    {"feature": "group.version", "max_version_level": 0, **kind},
                    {"feature": "no.such.version", "max_version_level": 1, **kind},
                ],
            )
            assert bad.error_code == ErrorCode.INVALID_UPDATE_VERSION
            if version < 2:
                assert [r.error_code for r in bad.results] == [
                    ErrorCode.INVALID_UPDATE_VERSION
                ] * 2
            down = send(
                conn,
                ApiKey.UPDATE_FEATURES,
                version,
                timeout_ms=1000,
                feature_updates=[
                    {"feature": "metadata.version", "max_version_level": 20, **kind}
                ],
            )
            assert down.error_code == ErrorCode.INVALID_UPDATE_VERSION
        ok = conn.request(
            ApiKey.UPDATE_FEATURES,
            timeout_ms=1000,
            validate_only=False,
            feature_updates=[  # level 0 disables; a downgrade must say so
                {"feature": "share.version", "max_version_level": 0, "upgrade_type": 2}
            ],
        )
        assert ok.error_code == ErrorCode.NONE, ok.error_message
        conn.close()
        conn = connect(c, c.state.node_ids[0])
        finalized = {
            f.name: f.max_version_level
            for f in conn.api_versions_response.finalized_features
        }
        assert finalized == {"metadata.version": 25, "group.version": 1}
        assert conn.api_versions_response.finalized_features_epoch == 1
        conn.close()
    with Cluster(data_dir=tmp_path) as c:
        conn = connect(c, c.state.node_ids[0])
        finalized = {
            f.name: f.max_version_level
            for f in conn.api_versions_response.finalized_features
        }
        assert "share.version" not in finalized
        conn.close()


# -- DescribeTopicPartitions ---------------------------------------------------------


def test_describe_topic_partitions_pages_with_a_cursor(
    cluster: Cluster, conn: Connection
) -> None:
    cluster.create_topic("dtp-a", 3)
    cluster.create_topic("dtp-b", 2)
    pages = []
    cursor = None
    for _ in range(10):
        answer = conn.request(
            ApiKey.DESCRIBE_TOPIC_PARTITIONS,
            topics=[{"name": "dtp-b"}, {"name": "dtp-a"}, {"name": "dtp-missing"}],
            response_partition_limit=2,
            cursor=cursor,
        )
        pages.append(
            [(t.name, [p.partition_index for p in t.partitions]) for t in answer.topics]
        )
        if answer.next_cursor is None:
            break
        cursor = {
            "topic_name": answer.next_cursor.topic_name,
            "partition_index": answer.next_cursor.partition_index,
        }
    assert pages == [
        [("dtp-a", [0, 1])],
        [("dtp-a", [2]), ("dtp-b", [0])],
        [("dtp-b", [1]), ("dtp-missing", [])],
    ]
    answer = conn.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, topics=[{"name": "dtp-a"}])
    (topic,) = answer.topics
    assert topic.topic_id == cluster.state.topics["dtp-a"].topic_id
    assert [p.leader_id for p in topic.partitions] == cluster.state.topics[
        "dtp-a"
    ].leaders
    assert topic.topic_authorized_operations > 0
    missing = conn.request(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS, topics=[{"name": "dtp-missing"}]
    )
    assert missing.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    everything = conn.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, topics=[])
    names = [t.name for t in everything.topics]
    assert names == sorted(names) and {"dtp-a", "dtp-b"} <= set(names)


def test_elect_leaders_of_an_offline_partition() -> None:
    """A partition whose replicas' nodes are stopped (leader -1): nothing to
    elect; once a replica is live again an unclean election gives it the lead."""
    with Cluster(nodes=2) as c:
        c.create_topic("offline", 1)
        down = c.state.leader("offline", 0)
        assert down is not None
        up = next(n for n in c.state.node_ids if n != down)
        c.stop_node(down, move_leaders=False)
        conn = connect(c, up)
        try:
            for kind, code in (
                (0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE),
                (1, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE),
            ):
                answer = conn.request(
                    ApiKey.ELECT_LEADERS,
                    election_type=kind,
                    topic_partitions=[{"topic": "offline", "partitions": [0]}],
                    timeout_ms=1000,
                )
                result = answer.replica_election_results[0].partition_result[0]
                assert result.error_code == code
        finally:
            conn.close()
