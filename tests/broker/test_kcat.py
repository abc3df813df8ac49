"""Debian's kcat (librdkafka 2.0.2) against the broker: produce with every codec,
consume, metadata listing (``-L``) and offsets for times (``-Q``).

Older librdkafka compresses gzip, snappy and lz4 only when the broker's
ApiVersions lists Produce v0 (librdkafka issue 4956); the broker advertises Produce
from v0 as Kafka 4 does (KAFKA-18659), so each batch below is stored compressed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable

import pytest

from kproto.broker import Cluster
from kproto.records import Compression, decode_batches
from tests.broker.conftest import segment_files

KCAT = shutil.which("kcat")

pytestmark = [
    pytest.mark.skipif(
        KCAT is None,
        reason="kcat is not installed (apt-get install kcat; .ci/run installs it)",
    ),
    pytest.mark.timeout(120),
]


def kcat(cluster: Cluster, *args: str, stdin: str | None = None) -> str:
    """Run kcat against ``cluster`` (bounded in time); return its stdout."""
    assert KCAT is not None
    done = subprocess.run(
        [KCAT, "-b", cluster.bootstrap_servers, "-q", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# compressible: 60 lines sharing most of their bytes, so librdkafka does not fall
# back to an uncompressed batch because compressing did not make it smaller
LINES = [f"line-{i:03d}-" + "x" * 100 for i in range(60)]


@pytest.mark.parametrize("codec", ["lz4", "gzip", "snappy", "zstd"])
def test_produce_compressed_then_consume(
    cluster3: Cluster, topic: Callable[..., str], codec: str
) -> None:
    name = topic(1)
    kcat(cluster3, "-P", "-t", name, "-p", "0", "-z", codec, stdin="\n".join(LINES))
    files = segment_files(cluster3.data_dir, name)
    batches = [b for f in files for b in decode_batches(f.read_bytes())]
    assert batches
    assert {b.compression for b in batches} == {Compression[codec.upper()]}
    assert [r.value for r in cluster3.records(name, 0)] == [
        line.encode() for line in LINES
    ]
    out = kcat(cluster3, "-C", "-t", name, "-o", "beginning", "-e", "-f", "%o %s\n")
    assert out.splitlines() == [f"{i} {line}" for i, line in enumerate(LINES)]


def test_metadata_listing(cluster3: Cluster, topic: Callable[..., str]) -> None:
    name = topic(3)
    listing = json.loads(kcat(cluster3, "-L", "-J", "-t", name))
    assert sorted(b["id"] for b in listing["brokers"]) == sorted(cluster3.state.nodes)
    (described,) = listing["topics"]
    assert described["topic"] == name
    leaders = cluster3.state.topics[name].leaders
    assert [(p["partition"], p["leader"]) for p in described["partitions"]] == list(
        enumerate(leaders)
    )


def test_offsets_for_times(cluster3: Cluster, topic: Callable[..., str]) -> None:
    name = topic(1)
    kcat(cluster3, "-P", "-t", name, "-p", "0", stdin="\n".join(LINES[:10]))
    stored = cluster3.records(name, 0)
    middle = stored[5]

    def query(timestamp: int) -> int:
        # {"<topic>": {"topic": "<topic>", "0": {"partition": 0, "offset": N}}}
        listing = json.loads(kcat(cluster3, "-Q", "-J", "-t", f"{name}:0:{timestamp}"))
        offset: int = listing[name]["0"]["offset"]
        return offset

    assert query(0) == 0
    # the first record whose timestamp is at least the one asked (Kafka's
    # ListOffsets by timestamp); records of one batch may share a timestamp
    first_at = min(r.offset for r in stored if r.timestamp >= middle.timestamp)
    assert query(middle.timestamp) == first_at
    assert query(middle.timestamp + 10**9) == -1  # none that late
