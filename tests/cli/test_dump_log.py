"""``kproto dump-log`` against lines captured from Kafka's own kafka-dump-log.sh.

The captured lines come from published ``kafka-dump-log.sh --deep-iteration
--print-data-log`` runs (Kafka 3.x, ``DumpLogSegments``); the segments below are
rebuilt from the values those lines show, and their CRCs and sizes come out equal to
the captured ones, so the whole line can be compared byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kproto.cli import main
from kproto.records import (
    Compression,
    ControlRecordType,
    encode_batch,
    encode_control_batch,
)

# A transactional batch and its commit marker, as kafka-dump-log.sh prints them.
CAPTURED_TXN = """\
Log starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1680383687941 size: 82 magic: 2 compresscodec: none crc: 2785707995 isvalid: true
| offset: 0 CreateTime: 1680383687941 keySize: -1 valueSize: 14 sequence: 0 headerKeys: [] payload: tset a si siht
baseOffset: 1 lastOffset: 1 count: 1 baseSequence: -1 lastSequence: -1 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 82 CreateTime: 1680383688163 size: 78 magic: 2 compresscodec: none crc: 3360473936 isvalid: true
| offset: 1 CreateTime: 1680383688163 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0
"""  # noqa: E501

# An idempotent producer's keyed record.
CAPTURED_KEYED = """\
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1720108310684 size: 74 magic: 2 compresscodec: none crc: 990125471 isvalid: true
| offset: 0 CreateTime: 1720108310684 keySize: 1 valueSize: 5 sequence: 0 headerKeys: [] key: 1 payload: hello
"""  # noqa: E501

IDEMPOTENT = {"producer_id": 0, "producer_epoch": 0, "partition_leader_epoch": 0}


def _txn_segment(folder: Path) -> Path:
    data = encode_batch(
        [(None, b"tset a si siht", [], 1680383687941)],
        base_sequence=0,
        is_transactional=True,
        **IDEMPOTENT,
    ) + encode_control_batch(
        ControlRecordType.COMMIT,
        coordinator_epoch=0,
        base_offset=1,
        timestamp=1680383688163,
        **IDEMPOTENT,
    )
    path = folder / "output-topic-0" / "00000000000000000000.log"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


def test_matches_kafka_dump_log_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _txn_segment(tmp_path)
    assert main(["dump-log", str(path)]) == 0
    assert capsys.readouterr().out == f"Dumping {path}\n" + CAPTURED_TXN

    keyed = tmp_path / "my-topic-0" / "00000000000000000000.log"
    keyed.parent.mkdir()
    keyed.write_bytes(
        encode_batch(
            [(b"1", b"hello", [], 1720108310684)], base_sequence=0, **IDEMPOTENT
        )
    )
    assert main(["dump-log", str(keyed)]) == 0
    out = capsys.readouterr().out.splitlines(keepends=True)
    assert "".join(out[2:]) == CAPTURED_KEYED


def test_crc_failure_shown_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _txn_segment(tmp_path)
    data = bytearray(path.read_bytes())
    data[70] ^= 0x01  # a byte of the first record's value: the CRC no longer matches
    path.write_bytes(bytes(data))
    assert main(["dump-log", str(path)]) == 0  # reported, not a failure by default
    cap = capsys.readouterr()
    lines = cap.out.splitlines()
    expected = CAPTURED_TXN.splitlines()
    assert lines[2] == expected[1].replace("isvalid: true", "isvalid: false")
    assert lines[3] == expected[2].replace("tset", "tseu")  # its record, in place
    assert lines[4:] == expected[3:]
    assert "fails its checksum" in cap.err and "crc_failures=1" in cap.err

    assert main(["dump-log", "--fail-on-corrupt", str(path)]) == 1
    capsys.readouterr()
    assert main(["dump-log", "--json", str(path)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["offset"], r["is_valid"]) for r in rows] == [(0, False), (1, True)]


def test_trailing_bytes_and_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _txn_segment(tmp_path)
    path.write_bytes(path.read_bytes() + b"\x00" * 30)
    assert main(["dump-log", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.endswith(
        "Found 30 invalid bytes at the end of 00000000000000000000.log\n"
    )
    assert main(["dump-log", "--fail-on-corrupt", str(path)]) == 1


def test_json_carries_every_batch_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "orders-12" / "00000000000000000100.log"
    path.parent.mkdir()
    path.write_bytes(
        encode_batch(
            [(b"k", b"v", [("trace", b"1"), ("span", None)], 5000)] * 3,
            base_offset=100,
            compression=Compression.LZ4,
            producer_id=9,
            producer_epoch=2,
            base_sequence=2**31 - 2,  # the sequence wraps at int32 max
            partition_leader_epoch=4,
        )
    )
    assert main(["dump-log", "--json", str(path)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["sequence"] for r in rows] == [2**31 - 2, 2**31 - 1, 0]
    row = rows[0]
    assert (row["file"], row["topic"], row["partition"]) == (str(path), "orders", 12)
    assert row["headers"] == [["trace", "MQ=="], ["span", None]]
    assert {
        k: row[k] for k in ("base_offset", "last_offset", "count", "compression")
    } == {
        "base_offset": 100,
        "last_offset": 102,
        "count": 3,
        "compression": "lz4",
    }
    assert row["last_sequence"] == 0 and row["partition_leader_epoch"] == 4
    assert row["size"] == row["batch_length"] + 12 == path.stat().st_size
    assert row["timestamp_type"] == "CREATE_TIME" and row["delete_horizon_ms"] is None
    assert main(["dump-log", str(path)]) == 0
    text = capsys.readouterr().out
    assert "Log starting offset: 100" in text
    assert "baseSequence: 2147483646 lastSequence: 0" in text
    assert "headerKeys: [trace,span] key: k payload: v" in text


def test_legacy_message_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.log"
    path.write_bytes(encode_batch([(b"a", b"b", [], 7)], magic=1, base_offset=5))
    assert main(["dump-log", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("offset: 5 position: 0 CreateTime: 7 size: ")
    assert lines[1].endswith(
        "magic: 1 compresscodec: none crc: " + lines[1].split("crc: ")[1]
    )
    assert lines[2].startswith(
        "| offset: 5 CreateTime: 7 keySize: 1 valueSize: 1 isValid: true crc: "
    )
    assert lines[2].endswith(" key: a payload: b")


def test_python_dash_m(tmp_path: Path) -> None:
    path = _txn_segment(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "kproto", "dump-log", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"Dumping {path}\n" + CAPTURED_TXN
