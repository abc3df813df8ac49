"""confluent-kafka consumers with ``group.protocol=consumer`` (KIP-848) on the broker:
server-side assignment shared by two and three members, partitions moving on join
and leave, every record consumed exactly once, a regex subscription picking up a
topic created later, and commits surviving a broker restart."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from tests.consuming import read_committing
from tests.eventually import eventually

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.timeout(120)

FAST = {"consumer_heartbeat_interval_ms": 200, "consumer_session_timeout_ms": 4000}


def produce(cluster: Cluster, topic: str, values: list[bytes], partitions: int) -> None:
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 2})
    for i, v in enumerate(values):
        p.produce(topic, v, partition=i % partitions)
    assert p.flush(30) == 0


def consumer(cluster: Cluster, group: str, subscription: list[str]) -> Any:
    c = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 500,
            "log_level": 2,
        }
    )
    c.subscribe(subscription)
    return c


class Members:
    """Consumers polled round-robin; what each received, committed as it goes."""

    def __init__(self) -> None:
        self.consumers: list[Any] = []
        self.got: list[list[bytes]] = []

    def add(self, c: Any) -> None:
        self.consumers.append(c)
        self.got.append([])

    def close(self, i: int) -> None:
        self.consumers[i].close()
        self.consumers[i] = None

    def live(self) -> list[tuple[int, Any]]:
        return [(i, c) for i, c in enumerate(self.consumers) if c is not None]

    def poll_until(self, done: Callable[[], bool], timeout_s: float = 30) -> None:
        def polled() -> bool:
            if done():
                return True
            for i, c in self.live():
                m = c.poll(0.05)
                if m is not None and m.error() is None:
                    self.got[i].append(m.value())
                    c.commit(message=m, asynchronous=False)
            return done()

        eventually(polled, timeout_s, interval_s=0, retry_on=())

    def total(self) -> list[bytes]:
        return [v for values in self.got for v in values]

    def assignments(self) -> list[set[tuple[str, int]]]:
        return [
            {(tp.topic, tp.partition) for tp in c.assignment()} for _, c in self.live()
        ]

    def converged(
        self, wanted: set[tuple[str, int]], sizes: list[int] | None = None
    ) -> bool:
        """Each wanted partition owned by exactly one member (and the members'
        partition counts, sorted, are ``sizes``: the balanced end state)."""
        owned = self.assignments()
        if sizes is not None and sorted(map(len, owned)) != sizes:
            return False
        return (
            all(owned)
            and sum(map(len, owned)) == len(wanted)
            and (set().union(*owned) == wanted)
        )

    def close_all(self) -> None:
        for i, _ in self.live():
            self.close(i)

    def __enter__(self) -> Members:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close_all()


def test_members_share_partitions_as_they_join_and_leave() -> None:
    partitions = 6
    wanted = {("shared", p) for p in range(partitions)}
    batches = [[b"%d-%d" % (n, i) for i in range(60)] for n in range(3)]
    with (
        Cluster(nodes=3, **FAST) as cluster,  # coordinator and leaders spread
        Members() as members,
    ):
        cluster.create_topic("shared", partitions)
        for _ in range(2):
            members.add(consumer(cluster, "sharers", ["shared"]))
        produce(cluster, "shared", batches[0], partitions)
        members.poll_until(lambda: len(members.total()) >= 60)
        members.poll_until(lambda: members.converged(wanted, [3, 3]))
        assert all(members.got)  # both members consumed
        # a third member joins: partitions move to it
        members.add(consumer(cluster, "sharers", ["shared"]))
        members.poll_until(lambda: members.converged(wanted, [2, 2, 2]))
        produce(cluster, "shared", batches[1], partitions)
        members.poll_until(lambda: len(members.total()) >= 120)
        assert members.got[2]
        # one leaves: its partitions go to the other two
        members.close(0)
        members.poll_until(lambda: members.converged(wanted, [3, 3]))
        produce(cluster, "shared", batches[2], partitions)
        members.poll_until(lambda: len(members.total()) >= 180)
        time.sleep(0.5)
        members.poll_until(lambda: True)
        # every record exactly once across the members
        assert sorted(members.total()) == sorted(v for b in batches for v in b)
        group = cluster.groups.consumer.groups["sharers"]
        assert group.state.value == "Stable"


def test_regex_subscription_picks_up_a_new_topic() -> None:
    with Cluster(**FAST) as cluster, Members() as members:
        cluster.create_topic("topic-a", 2)
        cluster.create_topic("other", 1)
        members.add(consumer(cluster, "regex", ["^topic-.*"]))
        produce(cluster, "topic-a", [b"a1", b"a2"], 2)
        produce(cluster, "other", [b"x"], 1)
        members.poll_until(lambda: len(members.total()) >= 2)
        cluster.create_topic("topic-b", 1)
        produce(cluster, "topic-b", [b"b1"], 1)
        members.poll_until(lambda: len(members.total()) >= 3)
        members.poll_until(
            lambda: members.converged({("topic-a", 0), ("topic-a", 1), ("topic-b", 0)})
        )
        assert sorted(members.total()) == [b"a1", b"a2", b"b1"]


def test_commits_survive_a_restart(tmp_path: Path) -> None:
    with Cluster(data_dir=tmp_path, **FAST) as cluster, Members() as members:
        cluster.create_topic("kept", 2)
        produce(cluster, "kept", [b"old%d" % i for i in range(10)], 2)
        members.add(consumer(cluster, "keepers", ["kept"]))
        members.poll_until(lambda: len(members.total()) >= 10)
    with Cluster(data_dir=tmp_path, **FAST) as cluster, Members() as again:
        produce(cluster, "kept", [b"new%d" % i for i in range(4)], 2)
        again.add(consumer(cluster, "keepers", ["kept"]))
        again.poll_until(lambda: len(again.total()) >= 4)
        time.sleep(1)
        again.poll_until(lambda: True)
        assert sorted(again.total()) == [b"new%d" % i for i in range(4)]
        # the group came back from __consumer_offsets with its epoch
        assert cluster.groups.consumer.groups["keepers"].group_epoch >= 2


def test_admin_client_describes_lists_and_deletes_the_group() -> None:
    from confluent_kafka.admin import AdminClient

    with Cluster(**FAST) as cluster, Members() as members:
        cluster.create_topic("watched", 2)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        members.add(consumer(cluster, "watchers", ["watched"]))
        members.poll_until(lambda: members.converged({("watched", 0), ("watched", 1)}))
        # ConsumerGroupDescribe (KIP-848) answers the group's type and assignor
        described = admin.describe_consumer_groups(["watchers"])["watchers"]
        group = described.result(10)
        assert group.type == ck.ConsumerGroupType.CONSUMER
        assert group.state == ck.ConsumerGroupState.STABLE
        assert group.partition_assignor == "uniform"
        (member,) = group.members
        assigned = {
            (tp.topic, tp.partition) for tp in member.assignment.topic_partitions
        }
        assert assigned == {("watched", 0), ("watched", 1)}
        assert member.host == "/127.0.0.1"  # Kafka's InetAddress.toString()
        listed = admin.list_consumer_groups().result(10).valid
        assert ("watchers", ck.ConsumerGroupType.CONSUMER) in {
            (g.group_id, g.type) for g in listed
        }
        busy = admin.delete_consumer_groups(["watchers"])["watchers"]
        with pytest.raises(ck.KafkaException) as raised:
            busy.result(10)
        assert raised.value.args[0].code() == ck.KafkaError.NON_EMPTY_GROUP
        members.close_all()  # empty now: deletable
        assert admin.delete_consumer_groups(["watchers"])["watchers"].result(10) is None
        assert "watchers" not in cluster.groups.consumer.groups


@pytest.mark.parametrize(
    ("peer", "reported"),
    [
        ("127.0.0.1", "/127.0.0.1"),
        ("::1", "/0:0:0:0:0:0:0:1"),  # Java's Inet6Address: uncompressed, no zeros
        ("fe80::a:1%eth0", "/fe80:0:0:0:0:0:a:1%eth0"),
    ],
)
def test_member_host_as_kafka_reports_it(peer: str, reported: str) -> None:
    from kproto.broker.handlers.context import client_host_string

    assert client_host_string(peer) == reported


def test_an_empty_classic_group_is_upgraded_with_its_offsets() -> None:
    with Cluster(**FAST) as cluster, Members() as members:
        cluster.create_topic("moved", 1)
        produce(cluster, "moved", [b"c%d" % i for i in range(5)], 1)
        classic = ck.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "movers",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "log_level": 2,
            }
        )
        classic.subscribe(["moved"])
        try:
            assert read_committing(classic, 5, 30) == 5
        finally:
            classic.close()
        assert cluster.groups.list_groups() == [
            ("movers", "consumer", "Empty", "classic")
        ]
        produce(cluster, "moved", [b"n%d" % i for i in range(3)], 1)
        members.add(consumer(cluster, "movers", ["moved"]))
        members.poll_until(lambda: len(members.total()) >= 3)
        time.sleep(0.5)
        members.poll_until(lambda: True)
        # resumed from the classic group's commit: only the new records
        assert members.total() == [b"n0", b"n1", b"n2"]
        assert cluster.groups.list_groups() == [
            ("movers", "consumer", "Stable", "consumer")
        ]
