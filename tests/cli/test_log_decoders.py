"""``kproto dump-log``'s kafka-dump-log.sh decoders and directory arguments.

The expected strings are Kafka's own: the assertions of ``DumpLogSegmentsTest``
(``testOffsetsMessageParser``, ``testTransactionLogMessageParser``, Kafka 4.x
tools module) and a line of ``kafka-dump-log.sh --offsets-decoder`` output published
with KAFKA-16733 (apache/kafka#17282), rebuilt here byte for byte.
"""

from __future__ import annotations

import io
import json
import struct
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from kproto.cli import main
from kproto.cli._log_decoders import control_record_text, decode_record
from kproto.index import data_type
from kproto.records import ControlRecordType, Record, encode_batch
from kproto.serial import entity_writer

# KAFKA-16733's example: the first record of a __consumer_offsets-0 segment.
PUBLISHED_LINE = (
    "| offset: 0 CreateTime: 1727354207209 keySize: 50 valueSize: 42 sequence: 0 "
    'headerKeys: [] key: {"type":"10","data":{"groupId":"console-share-consumer",'
    '"memberId":"Tsnir8MZRt27WL47QhcKVA"}} payload: {"version":"0","data":'
    '{"rackId":null,"clientId":"console-share-consumer","clientHost":"/127.0.0.1",'
    '"subscribedTopicNames":["T1"]}}'
)


def encoded(name: str, version: int, prefix: int, **fields: Any) -> bytes:
    """``prefix`` as int16, then ``name`` at ``version`` (Kafka's
    ``toCoordinatorTypePrefixedBytes`` / ``toVersionPrefixedBytes``)."""
    cls = data_type(name, version)
    out = io.BytesIO()
    out.write(struct.pack(">h", prefix))
    entity_writer(cls)(out, cls(**fields))
    return out.getvalue()


def record(key: bytes | None, value: bytes | None, offset: int = 0) -> Record:
    return Record(offset=offset, timestamp=-1, key=key, value=value)


def offsets(key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
    return decode_record("offsets", record(key, value))


def member_metadata() -> tuple[bytes, bytes]:
    key = encoded(
        "ShareGroupMemberMetadataKey",
        10,
        10,
        group_id="console-share-consumer",
        member_id="Tsnir8MZRt27WL47QhcKVA",
    )
    value = encoded(
        "ShareGroupMemberMetadataValue",
        0,
        0,
        rack_id=None,
        client_id="console-share-consumer",
        client_host="/127.0.0.1",
        subscribed_topic_names=("T1",),
    )
    return key, value


def test_offsets_parser_as_kafka_test() -> None:
    key = encoded("ConsumerGroupMetadataKey", 3, 3, group_id="group")
    value = encoded("ConsumerGroupMetadataValue", 0, 0, epoch=10)
    assert offsets(key, value) == (
        '{"type":"3","data":{"groupId":"group"}}',
        '{"version":"0","data":{"epoch":10}}',
    )
    assert offsets(key, None) == ('{"type":"3","data":{"groupId":"group"}}', "<DELETE>")
    assert offsets(struct.pack(">h", 32767), b"") == (
        "Unknown record type 32767 at offset 0, skipping.",
        None,
    )
    text, payload = offsets(None, b"x")
    assert payload is None and "message had a missing key" in str(text)
    # A value that does not decode is reported in place of the key.
    bad, none = offsets(key, struct.pack(">h", 0) + b"\x01")
    assert none is None and str(bad).startswith("Error at offset 0, skipping. ")


def nested(cls: type, name: str) -> Any:
    """The nested struct class ``name`` generated beside ``cls``."""
    return getattr(sys.modules[cls.__module__], name)


def _consumer_group_value(subscription: bytes, assignment: bytes) -> bytes:
    cls = data_type("GroupMetadataValue", 4)
    member_cls = nested(cls, "MemberMetadata")
    out = io.BytesIO()
    out.write(struct.pack(">h", 4))
    entity_writer(cls)(
        out,
        cls(
            protocol_type="consumer",
            generation=10,
            protocol="range",
            leader="member",
            current_state_timestamp=-1,
            members=(
                member_cls(
                    member_id="member",
                    group_instance_id="instance",
                    client_id="client",
                    client_host="host",
                    rebalance_timeout=1000,
                    session_timeout=100,
                    subscription=subscription,
                    assignment=assignment,
                ),
            ),
        ),
    )
    return out.getvalue()


def _consumer_protocol(name: str, version: int, **fields: Any) -> bytes:
    topic_cls = nested(data_type(name, version), "TopicPartition")
    key = "owned_partitions" if "owned_partitions" in fields else "assigned_partitions"
    fields[key] = tuple(topic_cls(topic=t, partitions=p) for t, p in fields[key])
    return encoded(name, version, version, **fields)


def test_group_metadata_decodes_consumer_protocol_as_kafka_test() -> None:
    key = encoded("GroupMetadataKey", 2, 2, group="group")
    subscription = _consumer_protocol(
        "ConsumerProtocolSubscription",
        3,
        topics=("foo",),
        user_data=None,
        owned_partitions=[("foo", (0,))],
        generation_id=0,
        rack_id="rack",
    )
    assignment = _consumer_protocol(
        "ConsumerProtocolAssignment",
        3,
        assigned_partitions=[("foo", (0,))],
        user_data=None,
    )
    expected_head = (
        '{"version":"4","data":{"protocolType":"consumer","generation":10,'
        '"protocol":"range","leader":"member","currentStateTimestamp":-1,'
        '"members":[{"memberId":"member","groupInstanceId":"instance",'
        '"clientId":"client","clientHost":"host","rebalanceTimeout":1000,'
        '"sessionTimeout":100,'
    )
    assert offsets(key, _consumer_group_value(subscription, assignment)) == (
        '{"type":"2","data":{"group":"group"}}',
        expected_head
        + '"subscription":{"topics":["foo"],"userData":null,"ownedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"generationId":0,"rackId":"rack"},'
        '"assignment":{"assignedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"userData":null}}]}}',
    )
    # Malformed embedded bytes stay base64, as Kafka's replaceField leaves them.
    assert offsets(key, _consumer_group_value(b"Subscription", b"Assignment")) == (
        '{"type":"2","data":{"group":"group"}}',
        expected_head + '"subscription":"U3Vic2NyaXB0aW9u",'
        '"assignment":"QXNzaWdubWVudA=="}]}}',
    )


def test_transaction_log_parser_as_kafka_test() -> None:
    key = encoded("TransactionLogKey", 0, 0, transactional_id="txnId")
    value = encoded("TransactionLogValue", 0, 0, producer_id=123)
    assert decode_record("transaction-log", record(key, value)) == (
        '{"type":"0","data":{"transactionalId":"txnId"}}',
        '{"version":"0","data":{"producerId":123,"producerEpoch":0,'
        '"transactionTimeoutMs":0,"transactionStatus":0,"transactionPartitions":[],'
        '"transactionLastUpdateTimestampMs":0,"transactionStartTimestampMs":0}}',
    )


def test_share_group_state_parser() -> None:
    topic_id = uuid.UUID(bytes=bytes(range(16)))
    key = encoded(
        "ShareSnapshotKey", 0, 0, group_id="gs1", topic_id=topic_id, partition=0
    )
    text, _ = decode_record("share-group-state", record(key, None))
    # Kafka's Uuid.toString: URL-safe base64 without padding.
    assert text == (
        '{"type":"0","data":{"groupId":"gs1","topicId":"AAECAwQFBgcICQoLDA0ODw",'
        '"partition":0}}'
    )


def test_cluster_metadata_parser() -> None:
    cls = data_type("TopicRecord", 0)
    out = io.BytesIO()
    out.write(bytes([1, 2, 0]))  # frame version 1, record type 2, version 0
    entity_writer(cls)(out, cls(name="t", topic_id=uuid.UUID(int=1)))
    key, value = decode_record("cluster-metadata", record(None, out.getvalue()))
    assert key is None
    assert value == (
        '{"type":"TOPIC_RECORD","version":0,"data":{"name":"t",'
        '"topicId":"AAAAAAAAAAAAAAAAAAAAAQ"}}'
    )
    _, bad = decode_record("cluster-metadata", record(None, bytes([2, 2, 0])))
    assert bad is not None and bad.startswith("Error at 0, skipping. ")
    assert "unknown frame version 2" in bad


def _segment(
    folder: Path, base: int, pairs: list[tuple[bytes, bytes | None]], ts: int
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{base:020d}.log"
    path.write_bytes(
        encode_batch(
            [(k, v, [], ts) for k, v in pairs],
            base_offset=base,
            producer_id=-1,
            base_sequence=0,
            partition_leader_epoch=0,
        )
    )
    return path


def test_published_offsets_decoder_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A __consumer_offsets-N directory gets the offsets decoder by itself; its
    record line equals the one kafka-dump-log.sh printed."""
    folder = tmp_path / "__consumer_offsets-0"
    _segment(folder, 0, [member_metadata()], 1727354207209)
    for argv in (
        ["dump-log", str(folder)],
        ["dump-log", "--offsets-decoder", str(folder)],
    ):
        assert main(argv) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == f"Dumping {folder / '00000000000000000000.log'}"
        assert lines[3] == PUBLISHED_LINE
    assert main(["dump-log", "--no-decoder", str(folder)]) == 0
    assert '"type"' not in capsys.readouterr().out


def test_directories_in_kafka_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("t-10", "t-2", "a-0"):
        for base in (5, 0):
            _segment(tmp_path / name, base, [(b"k", name.encode())], 1)
    (tmp_path / "t-2" / "00000000000000000000.index").write_bytes(b"")
    assert main(["dump-log", str(tmp_path)]) == 0
    dumped = [
        line.split()[-1]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("Dumping")
    ]
    assert [Path(p).parent.name + "/" + Path(p).name[-6:] for p in dumped] == [
        f"{d}/{b}.log" for d in ("a-0", "t-2", "t-10") for b in ("00", "05")
    ]


def test_directory_without_segments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dump-log", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kproto: error: ")
    assert "no .log segment files" in err[0]


def test_decoders_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["dump-log", "--offsets-decoder", "--transaction-log-decoder", "x"])
    assert exc.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_kraft_control_records_print_as_kafka() -> None:
    """DumpLogSegments.printControlRecord: `` LeaderChange: {json}``."""
    value = encoded(
        "LeaderChangeMessage",
        0,
        0,
        leader_id=1,
        voters=(nested(data_type("LeaderChangeMessage", 0), "Voter")(voter_id=1),),
        granting_voters=(),
    )
    assert control_record_text(ControlRecordType.LEADER_CHANGE, value) == (
        ' LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],'
        '"grantingVoters":[]}'
    )
    assert control_record_text(ControlRecordType.LEADER_CHANGE, b"\x00") is None
    assert control_record_text(ControlRecordType.COMMIT, value) is None


def test_json_rows_carry_the_decoded_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "__consumer_offsets-3"
    key, value = member_metadata()
    _segment(folder, 0, [(key, value), (key, None)], 1)
    assert main(["dump-log", "--json", str(folder)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["decoded"] for r in rows] == [
        {
            "key": {
                "type": "10",
                "data": {
                    "groupId": "console-share-consumer",
                    "memberId": "Tsnir8MZRt27WL47QhcKVA",
                },
            },
            "value": {
                "version": "0",
                "data": {
                    "rackId": None,
                    "clientId": "console-share-consumer",
                    "clientHost": "/127.0.0.1",
                    "subscribedTopicNames": ["T1"],
                },
            },
        },
        {"key": rows[0]["decoded"]["key"], "value": "<DELETE>"},
    ]
    assert rows[0]["topic"] == "__consumer_offsets" and rows[0]["partition"] == 3
