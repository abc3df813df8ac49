"""``kproto decode``: strict size prefix, header-derived api key/version, --records."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from kproto.cli import main
from kproto.framing import encode_request
from kproto.records import Compression, encode_batch
from kproto.schema.metadata.v12 import MetadataRequest
from kproto.schema.metadata.v12.request import MetadataRequestTopic
from kproto.schema.produce.v9 import ProduceRequest
from kproto.schema.produce.v9.request import PartitionProduceData, TopicProduceData


def _decode(
    tmp_path: Path, data: bytes, *argv: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    f = tmp_path / "frame.bin"
    f.write_bytes(data)
    status = main(["decode", *argv, str(f)])
    cap = capsys.readouterr()
    return status, cap.out, cap.err


def test_request_api_key_and_version_from_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = encode_request(
        MetadataRequest(topics=(MetadataRequestTopic(name="a"),)),
        correlation_id=7,
        client_id="c",
    )
    for data in (frame, frame[4:]):  # with and without the size prefix
        status, out, _ = _decode(tmp_path, data, "--request", capsys=capsys)
        assert status == 0
        result = json.loads(out)
        assert (result["api_key"], result["api_version"]) == (3, 12)
        assert result["type"] == "MetadataRequest"
        assert result["body"]["topics"][0]["name"] == "a"
        assert result["header"]["correlation_id"] == 7


@pytest.mark.parametrize("cut", [1, 10])
def test_truncated_frame_is_named(
    tmp_path: Path, cut: int, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = encode_request(
        MetadataRequest(topics=(MetadataRequestTopic(name="topic"),)),
        correlation_id=1,
        client_id="c",
    )
    size = len(frame) - 4
    status, _, err = _decode(tmp_path, frame[:-cut], "--request", capsys=capsys)
    assert status == 2
    assert f"frame size says {size}, {size - cut} bytes present" in err
    # A response has no header to recognise: the hint names the same numbers.
    status, _, err = _decode(
        tmp_path,
        frame[:-cut],
        "--response",
        "--api-key",
        "3",
        "--api-version",
        "12",
        capsys=capsys,
    )
    assert status == 2 and f"frame size says {size}, {size - cut} bytes present" in err
    status, _, err = _decode(
        tmp_path, frame[:-cut], "--request", "--size-prefix", "no", capsys=capsys
    )
    assert status == 2 and "api_key 0 (Produce)" in err  # the size read as a header


def test_response_needs_api_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = _decode(tmp_path, b"\x00" * 8, "--response", capsys=capsys)
    assert status == 2 and "--api-key and --api-version" in err


def test_records_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batch = encode_batch(
        [(b"k", b"v1", [("h", b"x")], 1000), (None, b"v2", [], 1001)],
        base_offset=0,
        compression=Compression.GZIP,
    )
    request = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=(
            TopicProduceData(
                name="t",
                partition_data=(
                    PartitionProduceData(index=0, records=batch + batch[:20]),
                    PartitionProduceData(index=1, records=None),
                ),
            ),
        ),
    )
    frame = encode_request(request, correlation_id=3, client_id="c")
    status, out, _ = _decode(tmp_path, frame, "--request", "--records", capsys=capsys)
    assert status == 0
    parts = json.loads(out)["body"]["topic_data"][0]["partition_data"]
    assert parts[1]["records"] is None
    decoded = parts[0]["records"]
    assert decoded["partial_tail_bytes"] == 20
    (b,) = decoded["batches"]
    assert (b["compression"], b["count"], b["is_valid"]) == ("gzip", 2, True)
    assert [r["value"] for r in b["records"]] == [
        base64.b64encode(v).decode() for v in (b"v1", b"v2")
    ]
    assert b["records"][0]["headers"] == [["h", base64.b64encode(b"x").decode()]]
    # Without --records the field stays base64, as kproto.json renders it.
    status, out, _ = _decode(tmp_path, frame, "--request", capsys=capsys)
    plain = json.loads(out)["body"]["topic_data"][0]["partition_data"][0]["records"]
    assert base64.b64decode(plain) == batch + batch[:20]
