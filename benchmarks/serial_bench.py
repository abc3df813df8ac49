"""Entity serialization: kproto against kio 0.6.5 and kafka-python 3.0.12.

Two workloads, measured in one process with interleaved rounds (every library and
operation once per round), reporting the median over rounds:

(a) a large flexible ``MetadataResponse`` v12: 20 brokers and 1000 topics of 12
    partitions each, every partition with 3 replicas and 3 in-sync replicas (the shape
    of kio's own benchmark). Encode writes the body to an ``io.BytesIO``; decode reads
    it back from one.
(b) a tiny ``ApiVersionsRequest`` v3 (client software name and version), per message
    through ``io.BytesIO``: encode writes N messages one after another into a stream,
    decode reads N messages one after another out of one.

kafka-python's schema classes encode to ``bytes`` and decode from a whole buffer (its
``decode`` reads a stream to the end), so its messages are written with
``stream.write(msg.encode(...))`` and read with ``decode(stream.read(size))``. kio's
native reader takes ``(buffer, offset)`` and returns ``(entity, size)``, so it reads
from the stream's ``getvalue()`` (read-only, not copied) and advances the offset itself.

The cyclic garbage collector is disabled while timing (as :mod:`timeit` does) and run
between measurements. Before timing, every library's bytes are checked to be identical and every decoded
entity to re-encode to the same bytes.

Run with ``python -m benchmarks`` (or ``python -m benchmarks.serial_bench``).
"""

from __future__ import annotations

import gc
import io
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

ROUNDS = 9
LARGE_REPEAT = 2  # operations per round for (a)
TINY_N = 20_000  # messages per round for (b)

N_BROKERS = 20
N_TOPICS = 1000
N_PARTITIONS = 12


def _replicas(t: int, p: int) -> tuple[int, int, int]:
    first = (t + p) % N_BROKERS
    return (first, (first + 1) % N_BROKERS, (first + 2) % N_BROKERS)


def _topic_id(t: int) -> uuid.UUID:
    return uuid.UUID(int=(0x5EED << 64) | (t + 1))


# --------------------------------------------------------------------------- kproto


def kproto_metadata() -> Any:
    from kproto.schema.metadata.v12 import MetadataResponse
    from kproto.schema.metadata.v12.response import (
        MetadataResponseBroker,
        MetadataResponsePartition,
        MetadataResponseTopic,
    )

    return MetadataResponse(
        throttle_time_ms=0,
        brokers=tuple(
            MetadataResponseBroker(
                node_id=b,
                host=f"broker-{b}.kafka.example.com",
                port=9092,
                rack=f"rack-{b % 3}",
            )
            for b in range(N_BROKERS)
        ),
        cluster_id="kproto-bench-cluster",
        controller_id=1,
        topics=tuple(
            MetadataResponseTopic(
                error_code=0,
                name=f"topic-{t:04d}",
                topic_id=_topic_id(t),
                is_internal=False,
                partitions=tuple(
                    MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=_replicas(t, p)[0],
                        leader_epoch=7,
                        replica_nodes=_replicas(t, p),
                        isr_nodes=_replicas(t, p),
                        offline_replicas=(),
                    )
                    for p in range(N_PARTITIONS)
                ),
            )
            for t in range(N_TOPICS)
        ),
    )


def kproto_api_versions() -> Any:
    from kproto.schema.api_versions.v3 import ApiVersionsRequest

    return ApiVersionsRequest(
        client_software_name="kproto", client_software_version="0.1.0"
    )


# ----------------------------------------------------------------------------- kio


def kio_metadata() -> Any:
    import datetime

    from kio.schema.errors import ErrorCode
    from kio.schema.metadata.v12.response import (
        MetadataResponse,
        MetadataResponseBroker,
        MetadataResponsePartition,
        MetadataResponseTopic,
    )
    from kio.schema.types import BrokerId, TopicName
    from kio.static.primitive import i32, i32Timedelta

    return MetadataResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        brokers=tuple(
            MetadataResponseBroker(
                node_id=BrokerId(b),
                host=f"broker-{b}.kafka.example.com",
                port=i32(9092),
                rack=f"rack-{b % 3}",
            )
            for b in range(N_BROKERS)
        ),
        cluster_id="kproto-bench-cluster",
        controller_id=BrokerId(1),
        topics=tuple(
            MetadataResponseTopic(
                error_code=ErrorCode.none,
                name=TopicName(f"topic-{t:04d}"),
                topic_id=_topic_id(t),
                is_internal=False,
                partitions=tuple(
                    MetadataResponsePartition(
                        error_code=ErrorCode.none,
                        partition_index=i32(p),
                        leader_id=BrokerId(_replicas(t, p)[0]),
                        leader_epoch=i32(7),
                        replica_nodes=tuple(BrokerId(r) for r in _replicas(t, p)),
                        isr_nodes=tuple(BrokerId(r) for r in _replicas(t, p)),
                        offline_replicas=(),
                    )
                    for p in range(N_PARTITIONS)
                ),
            )
            for t in range(N_TOPICS)
        ),
    )


def kio_api_versions() -> Any:
    from kio.schema.api_versions.v3.request import ApiVersionsRequest

    return ApiVersionsRequest(
        client_software_name="kproto", client_software_version="0.1.0"
    )


# ---------------------------------------------------------------------- kafka-python


def kafka_metadata() -> Any:
    from kafka.protocol.metadata import MetadataResponse

    broker_cls = MetadataResponse.MetadataResponseBroker
    topic_cls = MetadataResponse.MetadataResponseTopic
    partition_cls = topic_cls.MetadataResponsePartition
    return MetadataResponse[12](
        throttle_time_ms=0,
        brokers=[
            broker_cls(
                node_id=b,
                host=f"broker-{b}.kafka.example.com",
                port=9092,
                rack=f"rack-{b % 3}",
            )
            for b in range(N_BROKERS)
        ],
        cluster_id="kproto-bench-cluster",
        controller_id=1,
        topics=[
            topic_cls(
                error_code=0,
                name=f"topic-{t:04d}",
                topic_id=_topic_id(t),
                is_internal=False,
                partitions=[
                    partition_cls(
                        error_code=0,
                        partition_index=p,
                        leader_id=_replicas(t, p)[0],
                        leader_epoch=7,
                        replica_nodes=list(_replicas(t, p)),
                        isr_nodes=list(_replicas(t, p)),
                        offline_replicas=[],
                    )
                    for p in range(N_PARTITIONS)
                ],
                authorized_operations=None,
            )
            for t in range(N_TOPICS)
        ],
    )


def kafka_api_versions() -> Any:
    from kafka.protocol.metadata import ApiVersionsRequest

    return ApiVersionsRequest[3](
        client_software_name="kproto", client_software_version="0.1.0"
    )


# --------------------------------------------------------------------------- cases


def _python(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` on kproto's pure-Python path (kproto.speedups switched off)."""
    from kproto import speedups

    def run(*args: Any) -> Any:
        with speedups.using(False):
            return fn(*args)

    return run


Op = Callable[[], Any]


def _large_ops() -> dict[str, dict[str, Op]]:
    from kafka.protocol.metadata import MetadataResponse as KafkaMeta
    from kio.schema.metadata.v12.response import MetadataResponse as KioMeta
    from kio.serial import entity_reader as kio_reader
    from kio.serial import entity_writer as kio_writer

    from kproto.schema.metadata.v12 import MetadataResponse
    from kproto.serial import entity_reader, entity_writer

    ours, theirs, kp = kproto_metadata(), kio_metadata(), kafka_metadata()
    w, r = entity_writer(MetadataResponse), entity_reader(MetadataResponse)
    kw, kr = kio_writer(KioMeta), kio_reader(KioMeta)

    out = io.BytesIO()
    w(out, ours)
    data = out.getvalue()
    out = io.BytesIO()
    kw(out, theirs)
    assert out.getvalue() == data, "kio encodes MetadataResponse v12 differently"
    assert bytes(kp.encode(version=12)) == data, "kafka-python encodes it differently"
    assert r(io.BytesIO(data)) == ours
    assert kr(data, 0) == (theirs, len(data))
    back = KafkaMeta.decode(data, version=12)
    assert len(back.topics) == N_TOPICS and back.topics[-1].name == ours.topics[-1].name
    assert list(back.topics[-1].partitions[-1].isr_nodes) == list(
        ours.topics[-1].partitions[-1].isr_nodes
    )

    def kproto_enc() -> Any:
        w(io.BytesIO(), ours)

    def kproto_dec() -> Any:
        return r(io.BytesIO(data))

    def kio_enc() -> Any:
        kw(io.BytesIO(), theirs)

    def kio_dec() -> Any:
        return kr(io.BytesIO(data).getvalue(), 0)[0]

    def kafka_enc() -> Any:
        io.BytesIO().write(kp.encode(version=12))

    def kafka_dec() -> Any:
        return KafkaMeta.decode(io.BytesIO(data).getvalue(), version=12)

    print(f"(a) MetadataResponse v12: {len(data):,} bytes encoded", file=sys.stderr)
    return {
        "kproto": {"encode": kproto_enc, "decode": kproto_dec},
        "kproto-python": {"encode": _python(kproto_enc), "decode": _python(kproto_dec)},
        "kio": {"encode": kio_enc, "decode": kio_dec},
        "kafka-python": {"encode": kafka_enc, "decode": kafka_dec},
    }


def _tiny_ops() -> dict[str, dict[str, Callable[[int], Any]]]:
    from kafka.protocol.metadata import ApiVersionsRequest as KafkaReq
    from kio.schema.api_versions.v3.request import ApiVersionsRequest as KioReq
    from kio.serial import entity_reader as kio_reader
    from kio.serial import entity_writer as kio_writer

    from kproto.schema.api_versions.v3 import ApiVersionsRequest
    from kproto.serial import entity_reader, entity_writer

    ours, theirs, kp = kproto_api_versions(), kio_api_versions(), kafka_api_versions()
    w, r = entity_writer(ApiVersionsRequest), entity_reader(ApiVersionsRequest)
    kw, kr = kio_writer(KioReq), kio_reader(KioReq)

    out = io.BytesIO()
    w(out, ours)
    one = out.getvalue()
    out = io.BytesIO()
    kw(out, theirs)
    assert out.getvalue() == one, "kio encodes ApiVersionsRequest v3 differently"
    assert bytes(kp.encode(version=3)) == one, "kafka-python encodes it differently"
    size = len(one)
    stream_bytes = one * TINY_N
    check = io.BytesIO(one * 2)
    assert r(check) == ours and r(check) == ours and check.tell() == 2 * size
    assert kr(one * 2, size) == (theirs, size)

    def kproto_enc(n: int) -> Any:
        s = io.BytesIO()
        for _ in range(n):
            w(s, ours)

    def kproto_dec(n: int) -> Any:
        s = io.BytesIO(stream_bytes)
        for _ in range(n):
            r(s)

    def kio_enc(n: int) -> Any:
        s = io.BytesIO()
        for _ in range(n):
            kw(s, theirs)

    def kio_dec(n: int) -> Any:
        s = io.BytesIO(stream_bytes)
        view, pos = s.getvalue(), s.tell()
        for _ in range(n):
            _, used = kr(view, pos)
            pos += used
        s.seek(pos)

    def kafka_enc(n: int) -> Any:
        s = io.BytesIO()
        write = s.write
        for _ in range(n):
            write(kp.encode(version=3))

    def kafka_dec(n: int) -> Any:
        s = io.BytesIO(stream_bytes)
        read, dec = s.read, KafkaReq.decode
        for _ in range(n):
            dec(read(size), version=3)

    print(f"(b) ApiVersionsRequest v3: {size} bytes per message", file=sys.stderr)
    return {
        "kproto": {"encode": kproto_enc, "decode": kproto_dec},
        "kproto-python": {"encode": _python(kproto_enc), "decode": _python(kproto_dec)},
        "kio": {"encode": kio_enc, "decode": kio_dec},
        "kafka-python": {"encode": kafka_enc, "decode": kafka_dec},
    }


def _measure(rounds: int = ROUNDS) -> dict[tuple[str, str, str], float]:
    """Return the median seconds per operation for (workload, library, operation)."""
    large, tiny = _large_ops(), _tiny_ops()
    clock = time.perf_counter
    gc_was_enabled = gc.isenabled()
    # As timeit does: the cyclic collector is off while timing. The three large entity
    # trees alive here would otherwise make every full collection triggered by a
    # decode's allocations walk ~100k objects, and charge that to whoever ran then.
    gc.disable()
    try:
        return _rounds(large, tiny, rounds, clock)
    finally:
        if gc_was_enabled:
            gc.enable()


def _rounds(
    large: dict[str, dict[str, Op]],
    tiny: dict[str, dict[str, Callable[[int], Any]]],
    rounds: int,
    clock: Callable[[], float],
) -> dict[tuple[str, str, str], float]:
    samples: dict[tuple[str, str, str], list[float]] = {}
    # One warm-up round (compiles kproto's functions, fills kio's caches) is discarded.
    for round_no in range(rounds + 1):
        for lib, ops in large.items():
            for op_name, op in ops.items():
                gc.collect()
                t0 = clock()
                for _ in range(LARGE_REPEAT):
                    op()
                elapsed = (clock() - t0) / LARGE_REPEAT
                if round_no:
                    samples.setdefault(("a", lib, op_name), []).append(elapsed)
        for lib, loops in tiny.items():
            for op_name, loop in loops.items():
                gc.collect()
                t0 = clock()
                loop(TINY_N)
                elapsed = (clock() - t0) / TINY_N
                if round_no:
                    samples.setdefault(("b", lib, op_name), []).append(elapsed)
    return {key: statistics.median(vals) for key, vals in samples.items()}


def _table(results: dict[tuple[str, str, str], float]) -> str:
    from kproto import speedups

    lines = [
        "| workload | op | kproto | kproto pure Python | kio 0.6.5 | kafka-python 3.0.12 "
        "| kproto / kio (time) | kio / kproto | kafka-python / kproto |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    names = {
        "a": "(a) MetadataResponse v12, 1000 topics x 12 partitions",
        "b": "(b) ApiVersionsRequest v3, per message",
    }
    for workload, unit, scale in (("a", "ms", 1e3), ("b", "µs", 1e6)):
        for op in ("encode", "decode"):
            ours = results[(workload, "kproto", op)]
            pure = results[(workload, "kproto-python", op)]
            kio_t = results[(workload, "kio", op)]
            kafka_t = results[(workload, "kafka-python", op)]
            lines.append(
                f"| {names[workload]} | {op} | {ours * scale:.2f} {unit} "
                f"| {pure * scale:.2f} {unit} "
                f"| {kio_t * scale:.2f} {unit} | {kafka_t * scale:.2f} {unit} "
                f"| {ours / kio_t:.2f} | {kio_t / ours:.2f}x | {kafka_t / ours:.2f}x |"
            )
    lines.append("")
    lines.append(f"kproto C extension: {speedups.reason()}")
    return "\n".join(lines)


def main() -> int:
    results = _measure()
    print(
        f"## Entity serialization (median of {ROUNDS} interleaved rounds, Python "
        f"{sys.version.split()[0]})\n"
    )
    print(_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
