"""Replica placement as Kafka's ``StripedReplicaPlacer``: racks first, then nodes;
its striped pattern (golden), its properties over many layouts, CreatePartitions
continuing after the existing partitions, and confluent-kafka's AdminClient
creating topics on a racked cluster."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from kproto.broker import Cluster, TopicError
from kproto.broker.broker_config import BrokerConfigError
from kproto.broker.replica_placement import striped_placement
from kproto.errors import ErrorCode

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # noqa: E402

pytestmark = pytest.mark.timeout(120)

SIX = {1: "A", 2: "B", 3: "C", 4: "A", 5: "B", 6: "C"}


def test_the_striped_pattern() -> None:
    # Kafka's javadoc example with all offsets 0: A0 B0 C0, B1 C1 A1, C2 A2 B2
    assert striped_placement(SIX, 3, 3) == [[1, 2, 3], [5, 6, 4], [3, 1, 2]]


def test_without_racks_nodes_take_turns() -> None:
    nodes: dict[int, str | None] = {1: None, 2: None, 3: None}
    assert striped_placement(nodes, 3, 2, start=1) == [[2, 3], [3, 1], [1, 2]]


@pytest.mark.parametrize(
    "layout",
    [
        {1: "a", 2: "a", 3: "b"},
        {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"},
        {1: "x", 2: "y", 3: None, 4: "x"},
        {1: "a", 2: "a", 3: "a", 4: "b"},
    ],
    ids=["2-racks-uneven", "3-racks", "a-node-without-rack", "1-node-rack"],
)
def test_replicas_span_as_many_racks_as_they_can(
    layout: dict[int, str | None],
) -> None:
    racks = len(set(layout.values()))
    for rf, start in itertools.product(range(1, len(layout) + 1), range(3)):
        placed = striped_placement(layout, 4 * len(layout), rf, start=start)
        for replicas in placed:
            assert len(replicas) == len(set(replicas)) == rf
            assert len({layout[n] for n in replicas}) == min(rf, racks)


def test_leaders_are_spread_evenly_over_even_racks() -> None:
    for start in range(6):
        placed = striped_placement(SIX, 12, 3, start=start)
        assert Counter(r[0] for r in placed) == {n: 2 for n in SIX}
        assert Counter(n for r in placed for n in r) == {n: 6 for n in SIX}


def test_create_partitions_continues_after_the_existing_ones() -> None:
    existing = striped_placement(SIX, 3, 3)
    more = striped_placement(SIX, 3, 3, existing=existing)
    # the rack after the last leader's (C: A), the broker after A's last (1: 4)
    assert more[0][0] == 4
    assert [SIX[r[0]] for r in more] == ["A", "B", "C"]


def test_what_the_placer_refuses() -> None:
    with pytest.raises(TopicError) as exc:
        striped_placement({1: "a", 2: "b"}, 1, 3)
    assert exc.value.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert "only 2 broker(s) are registered" in str(exc.value)
    with pytest.raises(TopicError, match="must be positive"):
        striped_placement({1: "a"}, 1, 0)


def test_admin_client_on_a_racked_cluster(tmp_path: Path) -> None:
    racks = {1: "rack-a", 2: "rack-a", 3: "rack-b"}
    config = {"kproto.racks": ",".join(racks.values())}
    with Cluster(nodes=3, data_dir=tmp_path, config=config) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("spread", 6, 2)])["spread"].result(10)
        admin.create_partitions([NewPartitions("spread", 9)])["spread"].result(10)
        (future,) = admin.describe_topics(
            ck.TopicCollection(["spread"]), request_timeout=10
        ).values()
        partitions = future.result(10).partitions
        assert len(partitions) == 9
        for p in partitions:
            replicas = [n.id for n in p.replicas]
            # both racks hold a replica of every partition (round-robin over
            # the nodes would have put partitions on nodes 1 and 2 alone)
            assert {racks[n] for n in replicas} == {"rack-a", "rack-b"}
            assert p.leader.id == replicas[0]
            assert [n.id for n in p.isr] == replicas


def test_racks_at_start_one_per_node() -> None:
    with pytest.raises(BrokerConfigError, match="one rack per node: 3 nodes"):
        Cluster(nodes=3, config={"kproto.racks": "a,b"})
