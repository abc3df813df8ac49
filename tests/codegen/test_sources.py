"""Staging the schema inputs: copy, download fallback, lock checks, merge rule."""

from __future__ import annotations

import hashlib
import io
import subprocess
import zipfile
from pathlib import Path

import pytest

from codegen import sources

SHARED = Path(__file__).resolve().parents[3] / "shared" / "kafka-schema"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason="../shared/kafka-schema absent"
)

TRUNK = "kafka-trunk-2024-10-25/clients/MetadataRequest.json"
TRUNK_META = "kafka-trunk-2024-10-25/metadata/TopicRecord.json"
SUBSET = "kafka-4.1-subset/MetadataRequest.json"
NEWEST = "kafka-trunk-2026-08-23/ShareFetchRequest.json"
NEWEST_STORAGE = "kafka-trunk-2026-08-23/ProducerSnapshot.json"
ERRORS = "errors-2026-08-23.json"


def _lock(files: list[str]) -> sources.Lock:
    real = sources.Lock.load()
    return sources.Lock(
        sources=[s for s in real.sources if s["kind"] != "local-only"],
        files={rel: real.files[rel] for rel in files},
    )


@needs_shared
def test_download_fallback_fetches_pinned_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    urls: list[str] = []

    class FakeResponse:
        def __init__(self, content: bytes) -> None:
            self.status_code = 200
            self.content = content

    class FakeSession:
        def get(self, url: str, timeout: float) -> FakeResponse:
            urls.append(url)
            name = url.rsplit("/", 1)[1]
            module = url.split("/")[6]
            if "/d79bd502ec7fa49335afa422f442af80ed0ab8f6/" in url:
                return FakeResponse(
                    (SHARED / "kafka-trunk-2026-08-23" / name).read_bytes()
                )
            return FakeResponse(
                (SHARED / "kafka-trunk-2024-10-25" / module / name).read_bytes()
            )

    def fake_pip(cmd: list[str], check: bool) -> None:
        assert cmd[1:4] == ["-m", "pip", "download"] and "kafka-python==3.0.12" in cmd
        dest = Path(cmd[cmd.index("-d") + 1])
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr(
                "kafka/protocol/schemas/resources/MetadataRequest.json",
                (SHARED / SUBSET).read_bytes(),
            )
        (dest / "kafka_python-3.0.12-py2.py3-none-any.whl").write_bytes(buf.getvalue())

    import requests

    monkeypatch.setattr(requests, "Session", FakeSession)
    monkeypatch.setattr(subprocess, "run", fake_pip)
    monkeypatch.setattr(sources, "SCHEMA_DIR", tmp_path)
    lock = _lock([TRUNK, TRUNK_META, SUBSET, NEWEST, NEWEST_STORAGE])
    sources._download(lock)
    sources.verify(tmp_path, lock)
    newest = "d79bd502ec7fa49335afa422f442af80ed0ab8f6"
    assert (
        f"https://raw.githubusercontent.com/apache/kafka/{newest}/clients/src/main/"
        "resources/common/message/ShareFetchRequest.json" in urls
    )
    # storage files have no common/ folder upstream: the lock keeps the exact path.
    assert (
        f"https://raw.githubusercontent.com/apache/kafka/{newest}/storage/src/main/"
        "resources/message/ProducerSnapshot.json" in urls
    )
    commit = "1eb7644349cb07139d6a3c1ad1986979647cac99"
    assert (
        f"https://raw.githubusercontent.com/apache/kafka/{commit}/clients/src/main/resources/"
        "common/message/MetadataRequest.json" in urls
    )
    assert any(
        "/metadata/src/main/resources/common/metadata/TopicRecord.json" in u
        for u in urls
    )


def test_error_table_is_not_downloadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "SCHEMA_DIR", tmp_path)
    real = sources.Lock.load()
    lock = sources.Lock(
        sources=[s for s in real.sources if s["kind"] == "local-only"],
        files={ERRORS: real.files[ERRORS]},
    )
    with pytest.raises(sources.SourceError, match=ERRORS):
        sources._download(lock)


def test_lock_pins_every_input_with_sha256() -> None:
    lock = sources.Lock.load()
    # 287 + 110 + 247 definitions and the error table.
    assert len(lock.files) == 645
    assert all(len(h) == 64 and int(h, 16) >= 0 for h in lock.files.values())
    assert [s["folder"] for s in lock.sources][:3] == [
        "kafka-trunk-2026-08-23",
        "kafka-4.1-subset",
        "kafka-trunk-2024-10-25",
    ]
    newest = lock.sources[0]
    assert len(newest["paths"]) == 287
    assert all(
        rel.split("/", 1)[1] in newest["paths"]
        for rel in lock.files
        if rel.startswith("kafka-trunk-2026-08-23/")
    )


@needs_shared
def test_lock_matches_the_shared_checksums() -> None:
    lines = (SHARED / "SHA256SUMS").read_text().splitlines()
    listed = {
        p.removeprefix("./"): h for h, p in (line.split(None, 1) for line in lines)
    }
    for rel, digest in sources.Lock.load().files.items():
        assert listed[rel] == digest
        assert hashlib.sha256((SHARED / rel).read_bytes()).hexdigest() == digest


@needs_shared
def test_merge_takes_each_version_from_the_newest_source() -> None:
    merged = sources.load_messages(sources.stage(SHARED))
    produce = merged["ProduceRequest"]
    assert produce.versions == range(0, 14)
    assert produce.by_version[0].source.startswith("kafka-trunk-2024")
    assert produce.by_version[2].source.startswith("kafka-trunk-2024")
    assert produce.by_version[3].source.startswith("kafka-trunk-2026")
    assert produce.by_version[13].source.startswith("kafka-trunk-2026")
    # Share-group APIs: v0 (KIP-932 early access, unstable) only in the 2024 trunk.
    share_fetch = merged["ShareFetchRequest"]
    assert share_fetch.versions == range(0, 3)
    assert share_fetch.by_version[0].source.startswith("kafka-trunk-2024")
    assert share_fetch.by_version[1].source.startswith("kafka-trunk-2026")
    assert share_fetch.unstable == {0}
    assert merged["InitProducerIdRequest"].unstable == {6}
    # Dropped lowest versions come from older sources.
    assert merged["AlterPartitionRequest"].versions == range(0, 4)
    assert (
        merged["AlterPartitionRequest"]
        .by_version[0]
        .source.startswith("kafka-trunk-2024")
    )
    # Removed APIs ("validVersions": "none" upstream) keep their old versions.
    assert merged["LeaderAndIsrRequest"].versions == range(0, 8)
    # Deleted upstream since 2024: still generated from the 2024 source.
    assert "ShareGroupPartitionMetadataKey" in merged
    # New APIs 88-94.
    keys = {m.api_key for m in merged.values() if m.type == "request"}
    assert keys == set(range(95))
    requests = [m for m in merged.values() if m.type == "request"]
    responses = [m for m in merged.values() if m.type == "response"]
    assert sum(len(m.versions) for m in requests) == 368
    assert sum(len(m.versions) for m in responses) == 368
    # Coordinator keys keep "version = record type" whichever file they came from.
    key = merged["GroupMetadataKey"]
    assert key.versions == range(2, 3) and key.api_key == 2
    assert key.by_version[2].source.startswith("kafka-trunk-2026")
    assert merged["OffsetCommitKey"].versions == range(0, 2)
    assert merged["LegacyOffsetCommitKey"].versions == range(0, 1)
    # Storage records are their own id space (apiKey 0 is also RegisterBrokerRecord).
    assert merged["RemoteLogSegmentMetadataRecord"].module == "storage"
    assert merged["RegisterBrokerRecord"].module == "metadata"
    assert merged["FetchRequest"].versions == range(0, 19)
    assert merged["MetadataResponse"].versions == range(0, 14)
    # api_key 74 was renamed upstream; the newest name wins for every version.
    assert "ListClientMetricsResourcesRequest" not in merged
    assert merged["ListConfigResourcesRequest"].versions[0] == 0


def test_unknown_source_kind_is_ignored_only_when_it_has_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "SCHEMA_DIR", tmp_path)
    sources._download(sources.Lock(sources=[], files={}))  # nothing to do, no network
    assert list(tmp_path.iterdir()) == []
