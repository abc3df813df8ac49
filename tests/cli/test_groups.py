"""``kproto groups`` against the in-process broker with a live confluent-kafka
consumer, the describe table's layout, and ``dump-log`` of the broker's
``__consumer_offsets`` partitions decoded as kafka-dump-log.sh --offsets-decoder."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.cli.groups import offsets_table, rows_of
from kproto.client import GroupDescription, MemberDescription, TopicPartition
from tests.consuming import read_committing
from tests.eventually import eventually

from .conftest import Kproto

ck = pytest.importorskip("confluent_kafka")


def test_table_layout() -> None:
    """Widths as ConsumerGroupCommand: 15 at least, GROUP/TOPIC/CONSUMER-ID/HOST
    widened to their longest value, PARTITION 10, CLIENT-ID unpadded."""
    group = GroupDescription(
        "g",
        "Stable",
        "consumer",
        "range",
        (
            MemberDescription(
                "consumer-1-0123456789abcdef",
                None,
                "consumer-1",
                "/127.0.0.1",
                (TopicPartition("orders", 1), TopicPartition("orders", 0)),
            ),
            MemberDescription("idle", None, "c2", "/10.0.0.2"),
        ),
        1,
    )
    committed = {
        TopicPartition("orders", 0): 3,
        TopicPartition("orders", 1): -1,
        TopicPartition("old-topic-name", 0): 7,
    }
    ends = {TopicPartition("orders", 0): 5, TopicPartition("orders", 1): 4}
    assert offsets_table(rows_of(group, committed, ends)) == [
        "",
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  "
        "LAG             CONSUMER-ID                 HOST            CLIENT-ID",
        "g               orders          0          3               5               "
        "2               consumer-1-0123456789abcdef /127.0.0.1      consumer-1",
        "g               orders          1          -               4               "
        "-               consumer-1-0123456789abcdef /127.0.0.1      consumer-1",
        "g               -               -          -               -               "
        "-               idle                        /10.0.0.2       c2",
        "g               old-topic-name  0          7               -               "
        "-               -                           -               -",
    ]


def _produce(cluster: Cluster, topic: str, count: int) -> None:
    """``count`` values ``v0``, ``v1``, ... into a new 2-partition ``topic``, by turns."""
    cluster.create_topic(topic, 2)
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(count):
        p.produce(topic, b"v%d" % i, partition=i % 2)
    assert p.flush(30) == 0


def _consumer(
    cluster: Cluster, topic: str, group_id: str, client_id: str, config: dict[str, Any]
) -> Any:
    """A confluent-kafka consumer in group ``group_id`` of ``topic`` from its earliest
    offset, committing by hand; ``config`` adds consumer properties."""
    c = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group_id,
            "client.id": client_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 2,
            **config,
        }
    )
    c.subscribe([topic])
    return c


def test_describe_live_group_then_dump_offsets(
    kafka_cluster: Cluster, kproto: Kproto
) -> None:
    bs = f"--bootstrap-server={kafka_cluster.bootstrap_servers}"
    _produce(kafka_cluster, "orders", 6)
    c = _consumer(
        kafka_cluster,
        "orders",
        "billing",
        "billing-app",
        {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500},
    )
    got = 0

    def six() -> bool:  # commits partition 0 only
        nonlocal got
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got += 1
            if m.partition() == 0:
                c.commit(message=m, asynchronous=False)
        return got >= 6

    eventually(six, 60, interval_s=0, retry_on=())
    try:
        code, out, err = kproto("groups", "list", bs)
        assert (code, out, err) == (0, "billing\n", "")
        code, out, err = kproto("groups", "describe", bs, "--group", "billing")
        assert code == 0 and err == ""
        lines = out.splitlines()
        assert lines[0] == "" and lines[1].split() == [
            "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
            "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID",
        ]  # fmt: skip
        rows = [line.split() for line in lines[2:]]
        assert [r[:6] for r in rows] == [
            ["billing", "orders", "0", "3", "3", "0"],
            ["billing", "orders", "1", "-", "3", "-"],
        ]
        assert all(
            r[6].startswith("billing-app-") and r[8] == "billing-app" for r in rows
        )
        assert all(r[7] == "/127.0.0.1" for r in rows), lines  # Kafka's form
    finally:
        c.close()
    code, out, err = kproto("groups", "describe", bs, "--group", "billing")
    assert err == "\nConsumer group 'billing' has no active members.\n"
    assert [line.split()[:7] for line in out.splitlines()[2:]] == [
        ["billing", "orders", "0", "3", "3", "0", "-"]
    ]
    code, out, err = kproto("groups", "describe", bs, "--group", "nobody")
    assert code == 2
    assert err == "kproto: error: Consumer group 'nobody' does not exist.\n"

    # The broker's __consumer_offsets partitions, decoded as Kafka's tool does.
    code, out, err = kproto("dump-log", str(kafka_cluster.data_dir))
    assert code == 0
    commit = re.compile(
        r'key: \{"type":"1","data":\{"group":"billing","topic":"orders",'
        r'"partition":0\}\} payload: (\{.*\})$'
    )
    payloads = [m.group(1) for line in out.splitlines() if (m := commit.search(line))]
    assert payloads, out
    last = json.loads(payloads[-1])
    assert last["data"]["offset"] == 3 and last["data"]["metadata"] == ""
    # The user topic in the same data dir keeps the default text decoding.
    assert "headerKeys: [] payload: v0" in out
    group = [line for line in out.splitlines() if '"type":"2"' in line]
    assert group and '"protocolType":"consumer"' in group[0]
    assert '"assignment":{"assignedPartitions":[{"topic":"orders"' in "".join(group)


def test_describe_kip848_group(kproto: Kproto) -> None:
    """A ``group.protocol=consumer`` group: DescribeGroups does not know it
    (GROUP_ID_NOT_FOUND), so the client asks ConsumerGroupDescribe; the CLI shows
    its member and assignment."""
    from kproto.client import Client

    with Cluster(
        consumer_heartbeat_interval_ms=200, consumer_session_timeout_ms=4000
    ) as cluster:
        bs = f"--bootstrap-server={cluster.bootstrap_servers}"
        _produce(cluster, "events", 4)
        c = _consumer(
            cluster, "events", "next-gen", "ng-app", {"group.protocol": "consumer"}
        )
        try:
            assert read_committing(c, 4) == 4
            with Client(cluster.bootstrap_servers) as client:
                (group,) = client.describe_groups(["next-gen"])
            assert (group.group_type, group.protocol_type) == ("consumer", "consumer")
            assert group.state == "Stable" and group.group_epoch >= 1
            (member,) = group.members
            assert member.client_id == "ng-app" and member.member_epoch >= 1
            assert member.subscribed_topics == ("events",)
            assert member.assignment == (
                TopicPartition("events", 0),
                TopicPartition("events", 1),
            )
            code, out, err = kproto("groups", "describe", bs, "--group", "next-gen")
            assert (code, err) == (0, "")
            rows = [line.split() for line in out.splitlines()[2:]]
            assert [r[:6] for r in rows] == [
                ["next-gen", "events", "0", "2", "2", "0"],
                ["next-gen", "events", "1", "2", "2", "0"],
            ]
            assert {(r[6], r[8]) for r in rows} == {(member.member_id, "ng-app")}
        finally:
            c.close()
