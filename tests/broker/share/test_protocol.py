"""Share groups (KIP-932) at the wire: ShareGroupHeartbeat membership and
assignment, share-session rules, the offset and group admin APIs, advertised
versions, and the ``__share_group_state`` records (written, replayed, decoded)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.broker.share.support import (
    DEADLINE_S,
    SHARE_CONFIGS,
    deliveries,
    fresh,
    new_topic,
    poll_until,
    produce,
    share_consumer,
    share_request,
    share_topic,
    start_offsets,
)
from tests.broker.wire import heartbeat, join_share_group
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(120)


# -- the protocol ---------------------------------------------------------------------


def test_heartbeat_assigns_every_partition_and_fences(cluster: Cluster) -> None:
    topic, group = fresh("hb"), fresh("g")
    cluster.create_topic(topic, 3)
    topic_id = cluster.state.topics[topic].topic_id
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:

        def beat(member: str, epoch: int, topics: list[str] | None = None) -> Any:
            api = ApiKey.SHARE_GROUP_HEARTBEAT
            return heartbeat(
                conn, api, group, member, epoch, subscribed_topic_names=topics
            )

        one = beat("m1", 0, [topic])
        assert (one.error_code, one.member_epoch, one.heartbeat_interval_ms) == (
            0,
            1,
            200,
        )
        (tp,) = one.assignment.topic_partitions
        assert (tp.topic_id, list(tp.partitions)) == (topic_id, [0, 1, 2])
        two = beat("m2", 0, [topic])
        assert two.member_epoch == 2
        assert list(two.assignment.topic_partitions[0].partitions) == [1]
        # m1 learns its smaller assignment and the new epoch on its next heartbeat
        again = beat("m1", 1)
        assert again.member_epoch == 2
        assert list(again.assignment.topic_partitions[0].partitions) == [0, 2]
        # unchanged: no assignment sent
        assert beat("m1", 2).assignment is None
        assert beat("m1", 1).error_code == ErrorCode.FENCED_MEMBER_EPOCH
        assert beat("nobody", 2).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert beat("m3", 0).error_code == ErrorCode.INVALID_REQUEST
        assert beat("", 0, [topic]).error_code == ErrorCode.INVALID_REQUEST
        described = conn.request(ApiKey.SHARE_GROUP_DESCRIBE, group_ids=[group, "none"])
        found, missing = described.groups
        assert (found.group_state, found.group_epoch, found.assignor_name) == (
            "Stable",
            2,
            "simple",
        )
        members = {m.member_id: m for m in found.members}
        assert list(members["m2"].assignment.topic_partitions[0].partitions) == [1]
        assert list(members["m2"].subscribed_topic_names) == [topic]
        assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        left = beat("m2", -1)
        assert (left.error_code, left.member_epoch) == (0, -1)
        assert list(beat("m1", 2).assignment.topic_partitions[0].partitions) == [
            0,
            1,
            2,
        ]


def test_share_session_rules(cluster: Cluster) -> None:
    topic, group = new_topic(cluster, "ss", 3), fresh("g")
    topic_id = cluster.state.topics[topic].topic_id
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:

        def fetch(epoch: int, acks: list[dict[str, Any]] | None = None) -> Any:
            return share_request(
                conn,
                ApiKey.SHARE_FETCH,
                group,
                "m",
                epoch,
                [share_topic(topic_id, acks or [])],
            )

        accept = [{"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}]
        assert fetch(1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert fetch(0, accept).error_code == ErrorCode.INVALID_REQUEST
        first = fetch(0)
        assert first.error_code == 0
        assert first.acquisition_lock_timeout_ms == 30_000
        (part,) = first.responses[0].partitions
        assert [
            (a.first_offset, a.last_offset, a.delivery_count)
            for a in part.acquired_records
        ] == [(0, 2, 1)]
        assert fetch(5).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        # epoch 1 with an acknowledgement piggybacked: accepted, nothing new
        second = fetch(1, accept)
        (part,) = second.responses[0].partitions
        assert (part.acknowledge_error_code, list(part.acquired_records)) == (0, [])
        ack = share_request(conn, ApiKey.SHARE_ACKNOWLEDGE, group, "m", 0, [])
        assert ack.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        again = share_request(
            conn,
            ApiKey.SHARE_ACKNOWLEDGE,
            group,
            "m",
            2,
            [share_topic(topic_id, accept)],
        )
        # offset 0 was accepted already: no longer acquired
        assert (
            again.responses[0].partitions[0].error_code
            == ErrorCode.INVALID_RECORD_STATE
        )
        # closing the session (epoch -1) releases offsets 1-2 for redelivery
        closed = fetch(-1)
        assert closed.error_code == 0
        assert fetch(3).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        reopened = fetch(0)
        (part,) = reopened.responses[0].partitions
        assert [
            (a.first_offset, a.last_offset, a.delivery_count)
            for a in part.acquired_records
        ] == [(1, 2, 2)]


def test_share_group_offsets_admin(cluster: Cluster) -> None:
    topic, group = new_topic(cluster, "adm", 10, 2), fresh("g")
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        join = join_share_group(conn, group, "m", [topic])
        assert join.error_code == 0
        assert start_offsets(cluster, group, topic) == {0: 0, 1: 0}
        alter = {
            "group_id": group,
            "topics": [
                {
                    "topic_name": topic,
                    "partitions": [{"partition_index": 1, "start_offset": 3}],
                }
            ],
        }
        busy = conn.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, **alter)
        assert busy.error_code == ErrorCode.NON_EMPTY_GROUP
        conn.request(
            ApiKey.SHARE_GROUP_HEARTBEAT, group_id=group, member_id="m", member_epoch=-1
        )
        done = conn.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, **alter)
        assert done.error_code == 0
        assert done.responses[0].partitions[0].error_code == 0
        assert start_offsets(cluster, group, topic) == {0: 0, 1: 3}
        alter["topics"][0]["partitions"][0]["start_offset"] = 99
        too_far = conn.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, **alter)
        assert (
            too_far.responses[0].partitions[0].error_code
            == ErrorCode.OFFSET_OUT_OF_RANGE
        )
        deleted = conn.request(
            ApiKey.DELETE_SHARE_GROUP_OFFSETS,
            group_id=group,
            topics=[{"topic_name": topic}],
        )
        assert (deleted.error_code, deleted.responses[0].error_code) == (0, 0)
        assert start_offsets(cluster, group, topic) == {}
        # ListGroups lists share groups (type "share"); DeleteGroups deletes them
        listed = conn.request(
            ApiKey.LIST_GROUPS, states_filter=[], types_filter=["share"]
        )
        entry = [g for g in listed.groups if g.group_id == group]
        assert [(g.protocol_type, g.group_state, g.group_type) for g in entry] == [
            ("share", "Empty", "share")
        ]
        classic_only = conn.request(
            ApiKey.LIST_GROUPS, states_filter=[], types_filter=["classic"]
        )
        assert group not in {g.group_id for g in classic_only.groups}
        gone = conn.request(ApiKey.DELETE_GROUPS, groups_names=[group])
        assert gone.results[0].error_code == 0
        again = conn.request(ApiKey.DELETE_GROUPS, groups_names=[group])
        assert again.results[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_state_records_are_kafkas(cluster: Cluster) -> None:
    """``__share_group_state`` holds ShareSnapshot records as Kafka's share
    coordinator writes them (dump-log's share-group-state decoder reads them)."""
    from kproto.broker.share.records import decode_state_record

    group = fresh("g")
    topic = fresh("rec")
    cluster.create_topic(topic, 1)
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        join_share_group(conn, group, "m", [topic])
    time.sleep(0.2)
    topic_id = cluster.state.topics[topic].topic_id
    found = []
    for p in range(5):
        try:
            records = cluster.records("__share_group_state", p)
        except KeyError:
            continue
        for r in records:
            decoded = decode_state_record(r.key, r.value)
            if decoded.group_id == group:
                found.append((p, decoded))
    assert found, "no ShareSnapshot record written"
    p, record = found[-1]
    assert record.snapshot and record.topic_id == topic_id and record.partition == 0
    assert record.value.start_offset == 0 and isinstance(topic_id, uuid.UUID)
    # kproto dump-log --share-group-state-decoder prints them as Kafka's tool does
    from kproto.cli._log_decoders import decode_record

    last = [
        r for r in cluster.records("__share_group_state", p) if group.encode() in r.key
    ][-1]
    key_text, value_text = decode_record("share-group-state", last)
    assert f'"groupId":"{group}"' in key_text and '"type":"0"' in key_text
    assert '"startOffset":0' in value_text and '"stateBatches":[]' in value_text


def test_api_versions_advertise_the_stable_share_versions(cluster: Cluster) -> None:
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        conn.negotiate()
        versions = conn.broker_api_versions
    assert versions is not None
    assert versions[ApiKey.SHARE_GROUP_HEARTBEAT] == (1, 1)
    assert versions[ApiKey.SHARE_GROUP_DESCRIBE] == (1, 1)
    assert versions[ApiKey.SHARE_FETCH] == (1, 2)
    assert versions[ApiKey.SHARE_ACKNOWLEDGE] == (1, 2)
    assert versions[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS] == (0, 1)
    assert versions[ApiKey.ALTER_SHARE_GROUP_OFFSETS] == (0, 0)
    assert versions[ApiKey.DELETE_SHARE_GROUP_OFFSETS] == (0, 0)


def test_share_session_limit() -> None:
    configs = dict(SHARE_CONFIGS, **{"group.share.max.share.sessions": 1})
    with Cluster(share_configs=configs) as cluster:
        info = cluster.state.nodes[1]
        with Connection(info.host, info.port, timeout_s=10) as conn:

            def open_session(member: str) -> Any:
                return share_request(
                    conn,
                    ApiKey.SHARE_FETCH,
                    "g",
                    member,
                    0,
                    [],
                    max_bytes=1024,
                    max_records=10,
                    batch_size=10,
                )

            assert open_session("a").error_code == 0
            assert open_session("a").error_code == 0  # replacing its own
            refused = open_session("b")
            assert refused.error_code == ErrorCode.SHARE_SESSION_LIMIT_REACHED


def test_replay_applies_share_updates_after_the_snapshot(tmp_path: Path) -> None:
    """Kafka's share coordinator writes ShareUpdate deltas between snapshots; a
    restart applies them on top of the last ShareSnapshot."""
    import io

    import attrs

    from kproto.broker.share.records import (
        SHARE_STATE_TOPIC,
        UPDATE_TYPE,
        state_partition_for,
    )
    from kproto.index import data_type
    from kproto.meta import WIRE
    from kproto.records import encode_batch
    from kproto.serial import entity_writer

    with Cluster(data_dir=tmp_path, share_configs=SHARE_CONFIGS) as cluster:
        cluster.create_topic("upd", 1)
        produce(cluster, "upd", 6)
        info = cluster.state.nodes[1]
        with Connection(info.host, info.port, timeout_s=10) as conn:
            join_share_group(conn, "gu", "m", ["upd"])
        topic_id = cluster.state.topics["upd"].topic_id
        partition = state_partition_for("gu", topic_id, 0, 5)
        # the initial snapshot (SPSO 0) is written in the background: wait for it
        eventually(
            lambda: cluster.records(SHARE_STATE_TOPIC, partition),  # KeyError: not yet
            DEADLINE_S,
            interval_s=0.05,
        )

        def encoded(name: str, version: int, **fields: Any) -> bytes:
            cls = data_type(name, version)
            buf = io.BytesIO()
            buf.write(version.to_bytes(2, "big"))
            entity_writer(cls)(buf, cls(**fields))
            return buf.getvalue()

        key = encoded(
            "ShareUpdateKey", UPDATE_TYPE, group_id="gu", topic_id=topic_id, partition=0
        )
        value_cls = data_type("ShareUpdateValue", 0)
        element = (
            attrs.fields_dict(value_cls)["state_batches"].metadata[WIRE].element.entity
        )
        value = encoded(
            "ShareUpdateValue",
            0,
            snapshot_epoch=0,
            leader_epoch=0,
            start_offset=2,
            state_batches=(
                element(
                    first_offset=2, last_offset=2, delivery_state=2, delivery_count=1
                ),
                element(
                    first_offset=3, last_offset=3, delivery_state=0, delivery_count=3
                ),
            ),
        )

        def append() -> None:
            plog = cluster.state.partition_log(SHARE_STATE_TOPIC, partition)
            assert plog is not None
            plog.append_batches(encode_batch([(key, value, (), 0)]))

        cluster._on_loop(append)
    with Cluster(data_dir=tmp_path, share_configs=SHARE_CONFIGS) as cluster:
        assert start_offsets(cluster, "gu", "upd") == {0: 3}  # 2 was acknowledged
        consumer = share_consumer(cluster, "gu", topics=["upd"])
        try:
            got = poll_until(consumer, lambda got: len(got) >= 3)
            assert deliveries(got) == [(3, 4), (4, 1), (5, 1)]
            consumer.commit_sync(10)
        finally:
            consumer.close()


def test_a_classic_group_id_is_not_a_share_group(cluster: Cluster) -> None:
    topic, group = fresh("cls"), fresh("g")
    cluster.create_topic(topic, 1)
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        committed = conn.request(
            ApiKey.OFFSET_COMMIT,
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                {
                    "topic_id": cluster.state.topics[topic].topic_id,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 0,
                            "committed_leader_epoch": -1,
                            "committed_metadata": None,
                        }
                    ],
                }
            ],
        )
        assert committed.topics[0].partitions[0].error_code == 0
        answer = join_share_group(conn, group, "m", [topic])
    assert answer.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert answer.error_message == f"Group {group} is not a share group."


def test_a_refused_member_that_goes_quiet_is_still_removed() -> None:
    """A heartbeat answered with an error (FENCED_MEMBER_EPOCH here) leaves the
    member's session timeout running, as Kafka's GroupMetadataManager does: the
    member is removed when it stays quiet, and the other member gets its
    partitions."""
    configs = dict(SHARE_CONFIGS, **{"group.share.session.timeout.ms": 600})
    with Cluster(share_configs=configs) as cluster:
        cluster.create_topic("fenced", 2)
        info = cluster.state.nodes[1]
        with Connection(info.host, info.port, timeout_s=10) as conn:

            def beat(member: str, epoch: int) -> Any:
                return conn.request(
                    ApiKey.SHARE_GROUP_HEARTBEAT,
                    group_id="g",
                    member_id=member,
                    member_epoch=epoch,
                    subscribed_topic_names=["fenced"] if epoch == 0 else None,
                )

            assert beat("refused", 0).error_code == ErrorCode.NONE
            live = beat("live", 0)
            assert beat("refused", 99).error_code == ErrorCode.FENCED_MEMBER_EPOCH
            epoch = live.member_epoch

            def live_has_both() -> bool:
                nonlocal epoch
                answer = beat("live", epoch)
                epoch = answer.member_epoch
                return answer.assignment is not None and list(
                    answer.assignment.topic_partitions[0].partitions
                ) == [0, 1]

            eventually(live_has_both, DEADLINE_S, interval_s=0.2, retry_on=())
            assert beat("refused", epoch).error_code == ErrorCode.UNKNOWN_MEMBER_ID
