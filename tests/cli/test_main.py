"""The kproto command line, run in-process."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from kproto.cli import main
from kproto.framing import encode_request
from kproto.records import (
    Compression,
    ControlRecordType,
    encode_batch,
    encode_control_batch,
)
from kproto.schema.api_versions.v0 import ApiVersionsResponse
from kproto.schema.api_versions.v0.response import ApiVersion
from kproto.schema.metadata.v12 import MetadataRequest
from kproto.schema.metadata.v12.request import MetadataRequestTopic
from kproto.schema.response_header.v0 import ResponseHeader
from kproto.serial import encode


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    parts = [
        encode_batch(
            [(b"k0", b"v0", [("h", b"x")], 1000), (None, None, [], 1001)],
            compression=Compression.GZIP,
        ),
        encode_batch(
            [(b"k2", b"v2", [], 2000)],
            base_offset=2,
            compression=Compression.ZSTD,
            producer_id=7,
            producer_epoch=1,
            base_sequence=0,
            is_transactional=True,
        ),
        encode_control_batch(
            ControlRecordType.COMMIT,
            coordinator_epoch=3,
            producer_id=7,
            producer_epoch=1,
            base_offset=3,
            timestamp=3000,
        ),
        encode_batch([(b"old", b"m1", [], 4000)], magic=1, base_offset=4),
    ]
    path = tmp_path / "topic-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(b"".join(parts))
    return path


def test_dump_log_text(segment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump-log", "--format", "kproto", str(segment)]) == 0
    out = capsys.readouterr().out
    assert "compression=gzip" in out and "compression=zstd" in out
    assert "key=k0 value=v0" in out and "headers=[h=x]" in out
    assert "key=null value=null" in out
    assert "control=COMMIT coordinator_epoch=3" in out
    assert "magic=1" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("Summary:") and "batches=4" in last and "records=5" in last
    assert "crc_failures=0" in last and "gzip=1" in last


def test_dump_log_json(segment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump-log", "--json", str(segment)]) == 0
    cap = capsys.readouterr()
    rows = [json.loads(line) for line in cap.out.splitlines()]
    assert [r["offset"] for r in rows] == [0, 1, 2, 3, 4]
    contract = {  # CONTRACT.md "Command line"
        "offset": 0,
        "timestamp": 1000,
        "key": base64.b64encode(b"k0").decode(),
        "value": base64.b64encode(b"v0").decode(),
        "headers": [["h", base64.b64encode(b"x").decode()]],
        "base_offset": 0,
        "magic": 2,
        "compression": "gzip",
        "is_control": False,
        "is_transactional": False,
        "producer_id": -1,
    }
    assert {k: rows[0][k] for k in contract} == contract
    assert (rows[0]["file"], rows[0]["topic"], rows[0]["partition"]) == (
        str(segment),
        "topic",
        0,
    )
    assert rows[0]["is_valid"] is True and rows[0]["error"] is None
    assert rows[1]["key"] is None and rows[1]["value"] is None
    assert rows[2]["is_transactional"] and rows[2]["producer_id"] == 7
    assert rows[3]["is_control"] and rows[4]["magic"] == 1
    assert "Summary:" in cap.err and "records=5" in cap.err


def test_dump_log_undecodable_batch(
    segment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = bytearray(segment.read_bytes())
    data[61] ^= 0xFF  # the first batch's gzip magic: neither CRC nor records
    segment.write_bytes(bytes(data))
    assert main(["dump-log", "--json", str(segment)]) == 0
    cap = capsys.readouterr()
    assert "crc_failures=1" in cap.err and "corrupt batch at position 0" in cap.err
    rows = [json.loads(line) for line in cap.out.splitlines()]
    # The broken batch stays in place as one row with the error and no record.
    assert rows[0]["is_valid"] is False and "gzip" in rows[0]["error"]
    assert rows[0]["offset"] is None and rows[0]["base_offset"] == 0
    assert [r["offset"] for r in rows[1:]] == [2, 3, 4]  # the others still decode
    assert main(["dump-log", "--json", "--fail-on-corrupt", str(segment)]) == 1
    capsys.readouterr()
    assert main(["dump-log", "--no-crc-check", str(segment)]) == 0
    out = capsys.readouterr().out
    assert "isvalid: unchecked" in out and "| error: " in out


def test_dump_log_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dump-log", str(tmp_path / "nope.log")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_decode_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    req = MetadataRequest(topics=(MetadataRequestTopic(name="a"),))
    frame = encode_request(req, correlation_id=42, client_id="me")
    for data in (frame, frame[4:]):
        f = tmp_path / "req.bin"
        f.write_bytes(data)
        assert (
            main(
                [
                    "decode",
                    "--api-key",
                    "Metadata",
                    "--api-version",
                    "12",
                    "--request",
                    str(f),
                ]
            )
            == 0
        )
        out = json.loads(capsys.readouterr().out)
        assert (
            out["header"]["correlation_id"] == 42 and out["header"]["client_id"] == "me"
        )
        assert out["body"]["topics"][0]["name"] == "a"
        assert out["trailing_bytes"] == 0
        assert out["size"] == (len(frame) - 4 if data is frame else None)


def test_decode_response(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = ApiVersionsResponse(
        api_keys=(ApiVersion(api_key=3, min_version=0, max_version=12),)
    )
    f = tmp_path / "resp.bin"
    f.write_bytes(encode(ResponseHeader(correlation_id=5)) + encode(body))
    assert (
        main(["decode", "--api-key", "18", "--api-version", "0", "--response", str(f)])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["header"] == {"correlation_id": 5}
    assert out["body"]["api_keys"] == [
        {"api_key": 3, "min_version": 0, "max_version": 12}
    ]
    f.write_bytes(b"\x00\x00")
    assert (
        main(["decode", "--api-key", "18", "--api-version", "0", "--response", str(f)])
        == 2
    )
    assert "cannot decode" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, expect",
    [
        (
            ["Metadata"],
            [
                "MetadataRequest v13 (api_key 3)",
                "MetadataResponse v13",
                "topic_id: uuid",
            ],
        ),
        (
            ["MetadataRequest", "--version", "4"],
            ["MetadataRequest v4", "allow_auto_topic_creation: bool"],
        ),
        (["OffsetCommitValue"], ["OffsetCommitValue v", "offset: int64"]),
        (["FETCH"], ["tag 0", "FetchRequest v"]),
    ],
)
def test_describe(
    argv: list[str], expect: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["describe", *argv]) == 0
    out = capsys.readouterr().out
    for text in expect:
        assert text in out
    if argv[0] == "MetadataRequest":
        assert "MetadataResponse" not in out


@pytest.mark.parametrize(
    ("argv", "title"),
    [
        (
            ["OffsetCommitValue", "--version", "3"],
            "OffsetCommitValue v3 (coordinator-value record type 1, versions 0-4)",
        ),
        (["PartitionRecord"], "PartitionRecord v2 (metadata record type 3, versions"),
        (["LeaderChangeMessage"], "LeaderChangeMessage v1 (data message, versions 0-"),
    ],
)
def test_describe_names_record_types_not_api_keys(
    argv: list[str], title: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record or data message has no API key: its title says what it is."""
    assert main(["describe", *argv]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(title)
    assert "api_key" not in first


def test_describe_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", "NoSuchThing"]) == 2
    assert main(["describe", "Metadata", "--version", "99"]) == 2
    assert "unknown message" in capsys.readouterr().err


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for cmd in ("dump-log", "decode", "describe"):
        assert cmd in out
