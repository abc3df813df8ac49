"""Broker bounds: partitions per request and per cluster, all-or-nothing topics,
one metadata save per request, bounded open files, no starvation, clean restarts."""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster, topic_admin
from kproto.broker.file_cache import FileCache
from kproto.broker.topic_admin import MAX_PARTITIONS_PER_REQUEST
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.records import encode_batch
from tests.broker import wire

_TOO_MANY = "Excessively large number of partitions per request."


def connect(cluster: Cluster, timeout_s: float = 60) -> Connection:
    info = cluster.state.nodes[cluster.state.node_ids[0]]
    conn = Connection(info.host, info.port, timeout_s=timeout_s)
    conn.negotiate()
    return conn


def create(conn: Connection, topics: list[tuple[str, int]], **kw: Any) -> Any:
    return conn.request(
        ApiKey.CREATE_TOPICS,
        topics=[
            {"name": n, "num_partitions": p, "replication_factor": -1}
            for n, p in topics
        ],
        timeout_ms=60_000,
        **kw,
    )


def produce(conn: Connection, cluster: Cluster, topic: str, partition: int) -> Any:
    batch = encode_batch([(b"k", b"v")])
    response = wire.produce(conn, topic, {partition: batch}, cluster=cluster)
    return response.responses[0].partition_responses[0]


def topic_dirs(data_dir: Path, prefix: str) -> list[Path]:
    return [p for p in data_dir.iterdir() if p.name.startswith(prefix)]


def saved_topics(data_dir: Path) -> set[str]:
    body = json.loads((data_dir / "kproto-topics.json").read_text())
    return {t["name"] for t in body["topics"]}


def test_100000_partitions_are_refused_and_the_broker_serves_and_restarts(
    tmp_path: Path,
) -> None:
    with Cluster(nodes=1, data_dir=tmp_path) as cluster, connect(cluster) as conn:
        answer = create(conn, [("huge", 100_000)]).topics[0]
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.POLICY_VIOLATION,
            _TOO_MANY,
        )
        # the cap is per request, over every topic of it, as Kafka's controller
        split = create(conn, [("a", 6000), ("b", 6000)]).topics
        assert [t.error_code for t in split] == [ErrorCode.POLICY_VIOLATION] * 2
        assert not topic_dirs(tmp_path, "huge") and not topic_dirs(tmp_path, "a-")
        assert create(conn, [("ok", 3)]).topics[0].error_code == ErrorCode.NONE
        assert produce(conn, cluster, "ok", 2).error_code == ErrorCode.NONE
        growth = conn.request(
            ApiKey.CREATE_PARTITIONS,
            topics=[{"name": "ok", "count": 3 + MAX_PARTITIONS_PER_REQUEST + 1}],
            timeout_ms=1000,
            validate_only=False,
        ).results[0]
        assert growth.error_code == ErrorCode.POLICY_VIOLATION
        assert cluster.state.topics["ok"].partitions == 3
    with Cluster(nodes=1, data_dir=tmp_path) as cluster, connect(cluster) as conn:
        assert set(cluster.state.topics) == {"ok"}
        assert produce(conn, cluster, "ok", 2).base_offset == 1


def test_the_cluster_partition_limit(tmp_path: Path) -> None:
    with (
        Cluster(
            nodes=1, data_dir=tmp_path, max_partitions=20, offsets_partitions=1
        ) as cluster,
        connect(cluster) as conn,
    ):
        answers = create(conn, [("x", 8), ("y", 8), ("z", 8)]).topics
        codes = [t.error_code for t in answers]
        assert codes == [ErrorCode.NONE, ErrorCode.NONE, ErrorCode.POLICY_VIOLATION]
        assert "max_partitions" in answers[2].error_message
        assert not topic_dirs(tmp_path, "z-")
        assert sorted(saved_topics(tmp_path)) == ["x", "y"]


def count_saves(cluster: Cluster) -> Callable[[], int]:
    """Count the writes of ``cluster``'s topic metadata (``kproto-topics.json``)
    from now on: the returned function reads the count."""
    saves = 0
    real_save = cluster.state.save_topics

    def counting_save() -> None:
        nonlocal saves
        saves += 1
        real_save()

    cluster.state.save_topics = counting_save  # type: ignore[method-assign]
    return lambda: saves


def test_ten_thousand_topics_in_one_request_without_starving_others(
    tmp_path: Path,
) -> None:
    names = [f"many{i:05d}" for i in range(10_000)]
    with Cluster(nodes=1, data_dir=tmp_path) as cluster:
        saves = count_saves(cluster)
        done = threading.Event()
        answers: list[Any] = []

        def create_all() -> None:
            with connect(cluster, timeout_s=300) as conn:
                answers.append(create(conn, [(n, 1) for n in names]))
            done.set()

        creator = threading.Thread(target=create_all)
        creator.start()
        answered_meanwhile = 0
        with connect(cluster) as other:
            while not done.is_set():
                response = other.request(ApiKey.METADATA, topics=[])
                assert response.brokers
                if not done.is_set():
                    answered_meanwhile += 1
        creator.join(300)
        assert answers, "CreateTopics was not answered"
        assert all(t.error_code == ErrorCode.NONE for t in answers[0].topics)
        assert answered_meanwhile > 0  # another client was served during the work
        assert saves() == 1  # kproto-topics.json written once for the request
    assert len(saved_topics(tmp_path) & set(names)) == 10_000
    with Cluster(nodes=1, data_dir=tmp_path) as cluster:  # and it reopens
        assert len(cluster.state.topics) >= 10_000
        assert len(cluster.state.files) <= cluster.state.files.max_open
        saves = count_saves(cluster)
        with connect(cluster, timeout_s=300) as conn:
            deleted = conn.request(
                ApiKey.DELETE_TOPICS,
                topics=[{"name": n} for n in names],
                timeout_ms=60_000,
            )
        assert all(r.error_code == ErrorCode.NONE for r in deleted.responses)
        assert saves() == 1
    assert not saved_topics(tmp_path) & set(names)
    assert not topic_dirs(tmp_path, "many")


def test_log_creation_runs_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a CreateTopics is inside a partition's file I/O (held here), other
    clients are answered and the topic stays unpublished until its logs exist."""
    with Cluster(nodes=1, data_dir=tmp_path) as cluster:
        real = cluster.state.make_log
        inside, release = threading.Event(), threading.Event()

        def held(info: Any, partition: int, log_start_offset: int = 0) -> Any:
            if info.name == "held":
                inside.set()
                assert release.wait(30), "never released"
            return real(info, partition, log_start_offset)

        monkeypatch.setattr(cluster.state, "make_log", held)
        answers: list[Any] = []

        def create_held() -> None:
            with connect(cluster) as conn:
                answers.append(create(conn, [("held", 2)]))

        creator = threading.Thread(target=create_held)
        creator.start()
        try:
            assert inside.wait(30)
            info = cluster.state.nodes[1]
            # another client (its own client id: one request at a time per client)
            with Connection(info.host, info.port, timeout_s=10, client_id="b") as other:
                response = other.request(
                    ApiKey.METADATA,
                    topics=[{"name": "held"}],
                    allow_auto_topic_creation=False,
                )
                # answered meanwhile; the topic is not published yet
                assert response.topics[0].error_code == (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                assert create(other, [("held", 1)]).topics[0].error_code == (
                    ErrorCode.TOPIC_ALREADY_EXISTS
                )
        finally:
            release.set()
            creator.join(60)
        assert answers[0].topics[0].error_code == ErrorCode.NONE
        assert cluster.state.topics["held"].partitions == 2


def test_a_topic_whose_logs_fail_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Cluster(nodes=1, data_dir=tmp_path) as cluster, connect(cluster) as conn:
        real = cluster.state.make_log

        def failing(info: Any, partition: int, log_start_offset: int = 0) -> Any:
            if info.name == "broken" and partition == 3:
                raise OSError(errno.EMFILE, "Too many open files")
            return real(info, partition, log_start_offset)

        monkeypatch.setattr(cluster.state, "make_log", failing)
        answers = create(conn, [("before", 2), ("broken", 5), ("after", 2)]).topics
        assert [t.error_code for t in answers] == [
            ErrorCode.NONE,
            ErrorCode.KAFKA_STORAGE_ERROR,
            ErrorCode.NONE,
        ]
        assert "Too many open files" in answers[1].error_message
        assert not topic_dirs(tmp_path, "broken-")
        assert "broken" not in cluster.state.topics
        assert saved_topics(tmp_path) >= {"before", "after"}
        assert "broken" not in saved_topics(tmp_path)
        monkeypatch.undo()
        assert create(conn, [("broken", 5)]).topics[0].error_code == ErrorCode.NONE
    with Cluster(nodes=1, data_dir=tmp_path) as cluster:
        assert cluster.state.topics["broken"].partitions == 5


def test_a_full_disk_is_answered_and_the_broker_keeps_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Cluster(nodes=1, data_dir=tmp_path) as cluster, connect(cluster) as conn:
        assert create(conn, [("disk", 1)]).topics[0].error_code == ErrorCode.NONE
        real = os.pwrite

        def full(fd: int, data: Any, offset: int) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "pwrite", full)
        answer = produce(conn, cluster, "disk", 0)
        assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert "No space left" in answer.error_message
        monkeypatch.setattr(os, "pwrite", real)
        assert produce(conn, cluster, "disk", 0).base_offset == 0
        monkeypatch.setattr(
            os, "pread", lambda *a: (_ for _ in ()).throw(OSError(5, "EIO"))
        )
        fetched = wire.fetch(conn, "disk", (0,), cluster=cluster)
        assert fetched.responses[0].partitions[0].error_code == (
            ErrorCode.KAFKA_STORAGE_ERROR
        )
        monkeypatch.undo()
        assert produce(conn, cluster, "disk", 0).base_offset == 1
    with Cluster(nodes=1, data_dir=tmp_path) as cluster:
        assert cluster.state.logs[("disk", 0)].high_watermark == 2


def test_idle_partitions_hold_no_open_files(tmp_path: Path) -> None:
    with (
        Cluster(nodes=1, data_dir=tmp_path, max_open_files=8) as cluster,
        connect(cluster) as conn,
    ):
        assert create(conn, [("wide", 40)]).topics[0].error_code == ErrorCode.NONE
        for p in range(40):
            assert produce(conn, cluster, "wide", p).error_code == ErrorCode.NONE
        assert len(cluster.state.files) <= 8
        for p in range(40):  # evicted files reopen on use
            assert produce(conn, cluster, "wide", p).base_offset == 1


def test_file_cache_evicts_and_retries_when_out_of_descriptors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = FileCache(max_open=4)
    owners = [object() for _ in range(6)]
    for i, owner in enumerate(owners):
        cache.fd(owner, tmp_path / f"{i}.log")
    assert len(cache) == 4
    real = os.open
    failures = [OSError(errno.EMFILE, "Too many open files")]

    def once(*args: Any) -> int:
        if failures:
            raise failures.pop()
        return real(*args)

    monkeypatch.setattr(os, "open", once)
    assert cache.fd(object(), tmp_path / "new.log") >= 0
    assert len(cache) <= 4
    cache.close_all()
    assert len(cache) == 0


def test_metadata_auto_creation_is_bounded_per_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(topic_admin, "MAX_PARTITIONS_PER_REQUEST", 6)
    with (
        Cluster(nodes=1, data_dir=tmp_path, num_partitions=2) as cluster,
        connect(cluster) as conn,
    ):
        names = [f"auto{i}" for i in range(5)]
        saves = count_saves(cluster)
        answer = conn.request(
            ApiKey.METADATA,
            topics=[{"name": n} for n in names],
            allow_auto_topic_creation=True,
        )
        codes = [t.error_code for t in answer.topics]
        assert (
            codes == [ErrorCode.NONE] * 3 + [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION] * 2
        )
        assert saves() == 1
        again = conn.request(
            ApiKey.METADATA,
            topics=[{"name": n} for n in names],
            allow_auto_topic_creation=True,
        )
        assert [t.error_code for t in again.topics] == [ErrorCode.NONE] * 5
