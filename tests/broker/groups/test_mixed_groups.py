"""Mixed classic/consumer groups (KIP-848 online upgrade and downgrade) with real
clients on 127.0.0.1: classic confluent-kafka and kafka-python members, then a
``group.protocol=consumer`` member joining (the classic group becomes a consumer
group), leaving (it becomes classic again); the migration policy; the records
written to ``__consumer_offsets`` and the group recovered after a restart."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.groups import GroupCoordinator
from kproto.broker.groups.consumer_records import decode_consumer_record
from kproto.broker.groups.records import GroupRecord, decode_record
from kproto.records import decode_records
from tests.broker.groups.support import MANUAL_COMMIT_MEMBER
from tests.eventually import during, eventually

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.timeout(150)

DEADLINE_S = 40.0
FAST = {"consumer_heartbeat_interval_ms": 200, "consumer_session_timeout_ms": 6000}


def _until(check: Callable[[], bool], what: str, timeout_s: float = DEADLINE_S) -> None:
    """Run ``check`` (a polling step) until it is true; its assertions fail at once."""
    eventually(check, timeout_s, interval_s=0, message=what, retry_on=())


def _produce(cluster: Cluster, topic: str, values: range) -> None:
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in values:
        producer.produce(topic, value=b"%d" % i, partition=i % 4)
    assert producer.flush(DEADLINE_S) == 0


def _consumer(
    cluster: Cluster, group: str, protocol: str = "classic", strategy: str = "range"
) -> Any:
    conf: dict[str, Any] = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "topic.metadata.refresh.interval.ms": 500,
        "log_level": 2,
    }
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update(
            {
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 200,
                "partition.assignment.strategy": strategy,
            }
        )
    consumer = ck.Consumer(conf)
    consumer.subscribe(["orders"])
    return consumer


def _drain(consumers: dict[str, Any], seen: list[tuple[str, int]], total: int) -> None:
    """Poll until ``seen`` holds ``total`` values, committing each message right
    after it is taken (so a partition moving on is resumed where it was left). A
    commit refused while a rebalance completes (a cooperative member keeps consuming
    with its old generation: ILLEGAL_GENERATION, as in Kafka; STALE_MEMBER_EPOCH for
    a consumer-protocol member) is retried until the member has its new epoch."""
    retry: dict[str, dict[tuple[str, int], int]] = {name: {} for name in consumers}

    def commit(name: str, consumer: Any, offsets: dict[tuple[str, int], int]) -> None:
        parts = [ck.TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        try:
            consumer.commit(offsets=parts, asynchronous=False)
        except ck.KafkaException as exc:
            code = exc.args[0].code()
            assert code in (
                ck.KafkaError.ILLEGAL_GENERATION,
                ck.KafkaError.REBALANCE_IN_PROGRESS,
                ck.KafkaError.STALE_MEMBER_EPOCH,  # the consumer-protocol member's
            ), exc
            retry[name].update(offsets)
        else:
            for tp in offsets:
                retry[name].pop(tp, None)

    def step() -> bool:
        for name, consumer in consumers.items():
            if retry[name]:
                commit(name, consumer, dict(retry[name]))
            message = consumer.poll(0.05)
            if message is None or message.error() is not None:
                continue
            seen.append((name, int(message.value())))
            tp = (message.topic(), message.partition())
            commit(name, consumer, {tp: message.offset() + 1})
        return len(seen) >= total and not any(retry.values())

    _until(step, f"{total} messages (have {len(seen)})")


def _idle(*consumers: Any) -> bool:
    """Poll each consumer once (they rebalance while polling); nothing to read."""
    for consumer in consumers:
        message = consumer.poll(0.05)
        assert message is None or message.error() is not None, message.value()
    return True


def _group_type(cluster: Cluster, group: str) -> str | None:
    if group in cluster.groups.consumer.groups:
        return "consumer"
    if group in cluster.groups.groups:
        return "classic"
    return None


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_rolling_upgrade_and_downgrade_consume_every_record_once(
    tmp_path: Path, strategy: str
) -> None:
    """Eager (range: the classic members give everything up and rejoin) and
    cooperative (they rejoin reporting what they own and revoke only what moves)."""
    seen: list[tuple[str, int]] = []
    with Cluster(data_dir=tmp_path, num_partitions=4, **FAST) as cluster:
        cluster.create_topic("orders", 4)
        _produce(cluster, "orders", range(0, 100))
        c1 = _consumer(cluster, "billing", strategy=strategy)
        c2 = _consumer(cluster, "billing", strategy=strategy)
        _drain({"c1": c1, "c2": c2}, seen, 100)
        assert _group_type(cluster, "billing") == "classic"
        # a consumer-protocol member joins: the classic group is upgraded
        c3 = _consumer(cluster, "billing", "consumer")
        _until(lambda: _idle(c1, c2, c3) and len(c3.assignment()) > 0, "c3 to own")
        assert _group_type(cluster, "billing") == "consumer"
        group = cluster.groups.consumer.groups["billing"]
        classic = [m for m in group.members.values() if m.uses_classic_protocol]
        assert len(group.members) == 3 and len(classic) == 2
        _produce(cluster, "orders", range(100, 200))
        _drain({"c1": c1, "c2": c2, "c3": c3}, seen, 200)
        assert {name for name, v in seen if v >= 100} == {"c1", "c2", "c3"}
        # the last consumer-protocol member leaves: downgraded to a classic group
        c3.close()
        _until(lambda: _group_type(cluster, "billing") == "classic", "downgrade")
        _produce(cluster, "orders", range(200, 250))
        _drain({"c1": c1, "c2": c2}, seen, 250)

        def nothing_more() -> None:  # anything read twice would show here
            for c in (c1, c2):
                message = c.poll(0.05)
                assert message is None or message.error() is not None, message.value()

        during(nothing_more, 1.0)
        c1.close()
        c2.close()
    values = sorted(v for _, v in seen)
    assert values == list(range(250))  # nothing lost, nothing twice
    # __consumer_offsets holds the conversions: classic metadata, its tombstone,
    # consumer records with the classic members' metadata, then classic again
    kinds = []
    for segment in sorted(tmp_path.glob("__consumer_offsets-*/*.log")):
        for record in decode_records(segment.read_bytes()):
            modern = decode_consumer_record(record.key or b"", record.value)
            if modern is not None:
                if modern.group_id != "billing":
                    continue
                value = modern.value
                if getattr(value, "classic_member_metadata", None) is not None:
                    kinds.append("classic-member")
                continue
            decoded = decode_record(record.key, record.value)
            if isinstance(decoded, GroupRecord) and decoded.group_id == "billing":
                kinds.append("classic" if decoded.value is not None else "tombstone")
    assert "classic-member" in kinds
    first_tombstone = kinds.index("tombstone")
    assert "classic" in kinds[:first_tombstone]
    assert "classic-member" in kinds[first_tombstone:]
    assert kinds[-1] == "classic" or kinds[-1] == "tombstone"


def _replayed(cluster: Cluster) -> Any:
    """What a restarted coordinator loads: a fresh GroupCoordinator replaying the
    cluster's ``__consumer_offsets`` (its timers cancelled right after)."""

    async def load() -> Any:
        fresh = GroupCoordinator(
            cluster.state, offsets_partitions=cluster.groups.offsets_partitions
        )
        await fresh.start()
        await fresh.stop()
        return fresh

    return cluster._call(load())


def test_kafka_python_member_in_an_upgraded_group_and_its_recovery(
    tmp_path: Path,
) -> None:
    kafka = pytest.importorskip("kafka")
    seen: list[tuple[str, int]] = []
    with Cluster(data_dir=tmp_path, num_partitions=4, **FAST) as cluster:
        cluster.create_topic("orders", 4)
        _produce(cluster, "orders", range(0, 40))
        k1 = kafka.KafkaConsumer(
            "orders",
            bootstrap_servers=cluster.bootstrap_servers,
            group_id="billing",
            **MANUAL_COMMIT_MEMBER,
        )

        def k1_step() -> bool:
            for records in k1.poll(timeout_ms=50).values():
                seen.extend(("k1", int(r.value)) for r in records)
                k1.commit()
            return True

        _until(lambda: k1_step() and len(seen) >= 40, "kafka-python to read 40")
        c3 = _consumer(cluster, "billing", "consumer")
        _until(
            lambda: k1_step() and _idle(c3) and len(c3.assignment()) > 0,
            "c3 to own partitions",
        )
        _until(
            lambda: k1_step() and len(k1.assignment()) + len(c3.assignment()) == 4,
            "the four partitions shared",
        )
        group = cluster.groups.consumer.groups["billing"]
        assert sum(m.uses_classic_protocol for m in group.members.values()) == 1
        # a restarted coordinator loads the mixed group: epochs, assignments and
        # the classic member's protocols and session timeout
        loaded = _replayed(cluster).consumer.groups["billing"]
        assert loaded.group_epoch == group.group_epoch
        assert {m: (x.member_epoch, x.assigned) for m, x in loaded.members.items()} == {
            m: (x.member_epoch, x.assigned) for m, x in group.members.items()
        }
        (classic,) = [m for m in loaded.members.values() if m.uses_classic_protocol]
        assert classic.classic_session_timeout_ms == 6000
        assert (
            classic.classic_protocols
            == group.members[classic.member_id].classic_protocols
        )
        assert sum(c.offset for c in loaded.offsets.values()) == 40
        c3.close()  # downgrade: k1 is left alone in a classic group
        _until(
            lambda: k1_step() and _group_type(cluster, "billing") == "classic",
            "downgrade",
        )
        _until(lambda: k1_step() and len(k1.assignment()) == 4, "k1 to own all four")
        _produce(cluster, "orders", range(40, 60))
        _until(lambda: k1_step() and len(seen) >= 60, "kafka-python to read 60")
        recovered = _replayed(cluster)
        assert "billing" not in recovered.consumer.groups
        assert recovered.groups["billing"].protocol_type == "consumer"
        k1.close()
    assert sorted(v for _, v in seen) == list(range(60))


def test_migration_policy_disabled_refuses_mixed_groups() -> None:
    with Cluster(
        num_partitions=4, consumer_migration_policy="disabled", **FAST
    ) as cluster:
        cluster.create_topic("orders", 4)
        _produce(cluster, "orders", range(0, 8))
        c1 = _consumer(cluster, "billing")
        seen: list[tuple[str, int]] = []
        _drain({"c1": c1}, seen, 8)
        c3 = _consumer(cluster, "billing", "consumer")
        time.sleep(1.5)
        c3.poll(0.1)
        assert c3.assignment() == []
        beats = cluster.requests.filter(api_key=68)
        assert beats and all(
            r.response.error_code == 69 for r in beats
        )  # GROUP_ID_NOT_FOUND
        assert _group_type(cluster, "billing") == "classic"
        c3.close()
        c1.close()


def test_migration_policy_names_are_checked() -> None:
    with pytest.raises(ValueError, match="group.consumer.migration.policy"):
        Cluster(consumer_migration_policy="sideways")
