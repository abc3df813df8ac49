"""confluent-kafka (librdkafka) Producer, Consumer and AdminClient against the broker."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kproto.broker import Cluster
from kproto.records import decode_records
from tests.broker.conftest import segment_files
from tests.eventually import eventually

ck = pytest.importorskip("confluent_kafka")
admin = pytest.importorskip("confluent_kafka.admin")


def produce(
    cluster: Cluster, topic: str, values: list[bytes], **conf: object
) -> list[object]:
    errors: list[object] = []
    p = ck.Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "linger.ms": 5,
            "log_level": 2,
            **conf,
        }
    )
    for i, v in enumerate(values):
        p.produce(
            topic, v, key=b"k%d" % i, on_delivery=lambda err, msg: errors.append(err)
        )
    assert p.flush(30) == 0
    return errors


def consume(
    cluster: Cluster, topic: str, partitions: int, n: int, start: int = 0
) -> list[bytes]:
    c = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "x",
            "log_level": 2,
        }
    )
    c.assign([ck.TopicPartition(topic, p, start) for p in range(partitions)])
    got: list[bytes] = []

    def enough() -> bool:
        m = c.poll(0.5)
        if m is not None:
            assert m.error() is None, m.error()
            got.append(m.value())
        return len(got) >= n

    eventually(enough, 30, interval_s=0, retry_on=(), message=f"{n} messages")
    c.close()
    return got


@pytest.mark.parametrize(
    "conf",
    [
        {"compression.type": "none", "acks": "all", "enable.idempotence": True},
        {"compression.type": "gzip", "acks": "all", "enable.idempotence": True},
        {"compression.type": "snappy", "acks": "1"},
        {"compression.type": "lz4", "acks": "all", "enable.idempotence": True},
        {"compression.type": "zstd", "acks": "1"},
        {"compression.type": "lz4", "acks": "0"},
    ],
    ids=lambda c: f"{c['compression.type']}-acks{c['acks']}",
)
def test_producer_codecs_and_acks_then_consumer_and_dump_log(
    cluster3: Cluster, topic: Callable[..., str], conf: dict[str, object]
) -> None:
    name = topic(3)
    values = [b"value-%d-" % i + b"x" * 200 for i in range(60)]  # compressible
    assert not any(produce(cluster3, name, values, **conf))

    def stored() -> list[bytes]:
        return sorted(r.value for p in range(3) for r in cluster3.records(name, p))

    # acks=0: flush returns once the requests are written, maybe before the
    # broker appended them; wait (bounded) for the appends.
    eventually(lambda: len(stored()) >= len(values), 10)
    assert stored() == sorted(values)
    assert sorted(consume(cluster3, name, 3, 60)) == sorted(values)
    # the data directory is Kafka's layout: the records decode straight from the files
    files = segment_files(cluster3.data_dir, name)
    assert sorted(
        r.value for f in files for r in decode_records(f.read_bytes())
    ) == sorted(values)
    out = subprocess.run(
        [sys.executable, "-m", "kproto", "dump-log", "--json", *map(str, files)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 60
    expected = conf["compression.type"]
    assert {line["compression"] for line in lines} == {expected}


def test_consumer_seek(cluster3: Cluster, topic: Callable[..., str]) -> None:
    name = topic(1)
    produce(cluster3, name, [b"%d" % i for i in range(30)])
    assert consume(cluster3, name, 1, 20, start=10) == [
        b"%d" % i for i in range(10, 30)
    ]


def test_max_message_bytes_is_enforced(
    cluster3: Cluster, topic: Callable[..., str]
) -> None:
    name = topic(1, max_message_bytes="300")
    errors = produce(
        cluster3,
        name,
        [b"x" * 1000],
        **{"compression.type": "none", "message.max.bytes": 100000},
    )
    assert (
        errors[0] is not None and errors[0].code() == ck.KafkaError.MSG_SIZE_TOO_LARGE
    )
    assert cluster3.records(name, 0) == []


def test_admin_client(cluster3: Cluster) -> None:
    a = admin.AdminClient(
        {"bootstrap.servers": cluster3.bootstrap_servers, "log_level": 2}
    )
    futures = a.create_topics(
        [admin.NewTopic("adm", 2, 1, config={"retention.ms": "5000"})]
    )
    assert futures["adm"].result(10) is None
    with pytest.raises(ck.KafkaException) as err:
        a.create_topics([admin.NewTopic("adm", 2, 1)])["adm"].result(10)
    assert err.value.args[0].code() == ck.KafkaError.TOPIC_ALREADY_EXISTS
    a.create_partitions([admin.NewPartitions("adm", 4)])["adm"].result(10)
    assert len(a.list_topics("adm", timeout=10).topics["adm"].partitions) == 4
    res = admin.ConfigResource("topic", "adm")
    configs = a.describe_configs([res])[res].result(10)
    assert configs["retention.ms"].value == "5000"
    assert configs["cleanup.policy"].value == "delete"
    assert configs["segment.bytes"].value == str(
        cluster3.state.config.log_segment_bytes
    )
    change = admin.ConfigResource(
        "topic",
        "adm",
        incremental_configs=[
            admin.ConfigEntry(
                "retention.bytes",
                "12345",
                incremental_operation=admin.AlterConfigOpType.SET,
            )
        ],
    )
    a.incremental_alter_configs([change])[change].result(10)
    assert a.describe_configs([res])[res].result(10)["retention.bytes"].value == "12345"
    legacy = admin.ConfigResource(
        "topic", "adm", set_config={"segment.bytes": "1048576"}
    )
    with pytest.warns(DeprecationWarning):
        assert a.alter_configs([legacy])[legacy].result(10) is None
    after = a.describe_configs([res])[res].result(10)
    # legacy AlterConfigs replaces the whole set: retention.ms is back to its default
    assert (after["segment.bytes"].value, after["retention.ms"].value) == (
        "1048576",
        "604800000",
    )
    produce(cluster3, "adm", [b"%d" % i for i in range(10)], partitioner="murmur2")
    tp = ck.TopicPartition("adm", 0)
    latest = a.list_offsets({tp: admin.OffsetSpec.latest()})[tp].result(10).offset
    stored = cluster3.records("adm", 0)
    assert (
        latest == len(stored) == 5
    )  # murmur2 puts 5 of the keys k0..k9 on partition 0
    last = stored[-1]
    spec = admin.OffsetSpec.for_timestamp(last.timestamp)
    by_time = a.list_offsets({tp: spec})[tp].result(10)
    first_at = min(r.offset for r in stored if r.timestamp >= last.timestamp)
    assert (by_time.offset, by_time.timestamp) == (first_at, last.timestamp)
    newest = a.list_offsets({tp: admin.OffsetSpec.max_timestamp()})[tp].result(10)
    assert newest.timestamp == max(r.timestamp for r in stored)
    a.delete_records([ck.TopicPartition("adm", 0, latest)])[tp].result(10)
    earliest = a.list_offsets({tp: admin.OffsetSpec.earliest()})[tp].result(10)
    assert earliest.offset == latest
    assert cluster3.records("adm", 0) == []
    assert a.delete_topics(["adm"])["adm"].result(10) is None
    assert "adm" not in a.list_topics(timeout=10).topics
    assert not list(cluster3.data_dir.glob("adm-*"))
    assert len(a.describe_cluster().result(10).nodes) == 3


def test_restart_recovers_topics_and_offsets(tmp_path: Path) -> None:
    with Cluster(nodes=2, data_dir=tmp_path) as c:
        c.create_topic("keep", 2, configs={"retention.ms": "86400000"})
        produce(
            c, "keep", [b"a%d" % i for i in range(20)], **{"enable.idempotence": True}
        )
        a = admin.AdminClient(
            {"bootstrap.servers": c.bootstrap_servers, "log_level": 2}
        )
        tp = ck.TopicPartition("keep", 0, 2)
        a.delete_records([tp])[ck.TopicPartition("keep", 0)].result(10)
        before = {p: [r.offset for r in c.records("keep", p)] for p in range(2)}
        assert before[0][0] == 2
    assert (tmp_path / "keep-0" / "00000000000000000000.log").exists()
    with Cluster(nodes=2, data_dir=tmp_path) as c:
        assert {p: [r.offset for r in c.records("keep", p)] for p in range(2)} == before
        assert c.state.topics["keep"].configs == {"retention.ms": "86400000"}
        produce(
            c, "keep", [b"b%d" % i for i in range(20)], **{"enable.idempotence": True}
        )
        # the two deleted records stay deleted: start at the log start offset
        values = consume(c, "keep", 2, 38, start=ck.OFFSET_BEGINNING)
        kept = [v for p in range(2) for v in (r.value for r in c.records("keep", p))]
        assert sorted(values) == sorted(kept) and len(kept) == 38
        assert {b"b%d" % i for i in range(20)} <= set(values)


def test_requests_are_recorded(cluster3: Cluster, topic: Callable[..., str]) -> None:
    name = topic(1)
    cluster3.requests.clear()
    produce(cluster3, name, [b"x"], **{"client.id": "seen"})
    produces = cluster3.requests.filter(api_key=0, client_id="seen")
    assert (
        produces
        and produces[0].response.responses[0].partition_responses[0].error_code == 0
    )
    assert produces[0].node_id == cluster3.state.leader(name, 0)


def test_retention_bytes_deletes_old_segments(
    cluster3: Cluster, topic: Callable[..., str]
) -> None:
    name = topic(1, internal_segment_bytes="2000", retention_bytes="3000")
    for round_ in range(10):
        produce(cluster3, name, [b"%d-" % round_ + b"x" * 100 for _ in range(10)])
    a = admin.AdminClient(
        {"bootstrap.servers": cluster3.bootstrap_servers, "log_level": 2}
    )
    tp = ck.TopicPartition(name, 0)
    earliest = a.list_offsets({tp: admin.OffsetSpec.earliest()})[tp].result(10).offset
    latest = a.list_offsets({tp: admin.OffsetSpec.latest()})[tp].result(10).offset
    assert latest == 100 and 0 < earliest < 100
    assert cluster3.records(name, 0)[0].offset == earliest
    assert (
        sum(f.stat().st_size for f in segment_files(cluster3.data_dir, name))
        < 3000 + 2000
    )
