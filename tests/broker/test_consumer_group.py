"""A confluent-kafka consumer group on the broker (with the group coordinator of
kproto.broker.groups): two members share the partitions, commit, stop; after a
restart on the same data_dir the group resumes from its committed offsets."""

from __future__ import annotations

from pathlib import Path

import pytest

from kproto.broker import Cluster
from tests.eventually import eventually

ck = pytest.importorskip("confluent_kafka")


def produce(cluster: Cluster, values: list[bytes]) -> None:
    p = ck.Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5, "log_level": 2}
    )
    for i, v in enumerate(values):
        p.produce("orders", v, partition=i % 4)
    assert p.flush(30) == 0


def member(cluster: Cluster) -> object:
    c = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "billing",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "log_level": 2,
        }
    )
    c.subscribe(["orders"])
    return c


def drain(
    members: list[object], want: int, timeout_s: float = 60
) -> dict[int, list[bytes]]:
    got: dict[int, list[bytes]] = {i: [] for i in range(len(members))}

    def drained() -> bool:
        for i, c in enumerate(members):
            m = c.poll(0.2)  # type: ignore[attr-defined]
            if m is not None and m.error() is None:
                got[i].append(m.value())
                c.commit(message=m, asynchronous=False)  # type: ignore[attr-defined]
        return sum(map(len, got.values())) >= want

    eventually(drained, timeout_s, interval_s=0, retry_on=(), message=f"{want}")
    return got


def test_group_shares_commits_and_resumes_after_restart(tmp_path: Path) -> None:
    first = [b"a%d" % i for i in range(40)]
    with Cluster(nodes=3, data_dir=tmp_path) as cluster:
        cluster.create_topic("orders", 4)
        produce(cluster, first)
        members = [member(cluster), member(cluster)]
        got = drain(members, len(first))
        assignments = [c.assignment() for c in members]  # type: ignore[attr-defined]
        for c in members:
            c.close()  # type: ignore[attr-defined]
        assert sorted(got[0] + got[1]) == sorted(first)  # nothing lost, nothing twice
        assert all(assignments), "both members got partitions"
    assert list(tmp_path.glob("__consumer_offsets-*/*.log"))
    second = [b"b%d" % i for i in range(20)]
    with Cluster(nodes=3, data_dir=tmp_path) as cluster:
        produce(cluster, second)
        c = member(cluster)
        got = drain([c], len(second))
        extra = c.poll(1.0)  # type: ignore[attr-defined]  # nothing from before the restart
        c.close()  # type: ignore[attr-defined]
        assert sorted(got[0]) == sorted(second)
        assert extra is None or extra.error() is not None


def test_delete_topics_drops_committed_offsets() -> None:
    admin = pytest.importorskip("confluent_kafka.admin")
    with Cluster() as cluster:
        cluster.create_topic("orders", 4)
        produce(cluster, [b"x%d" % i for i in range(8)])
        c = member(cluster)
        drain([c], 8)
        c.close()  # type: ignore[attr-defined]
        group = cluster.groups.groups["billing"]
        assert any(t == "orders" for t, _ in group.offsets)
        a = admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        assert a.delete_topics(["orders"])["orders"].result(10) is None
        assert not any(t == "orders" for t, _ in group.offsets)
