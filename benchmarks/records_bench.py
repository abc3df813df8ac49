"""Benchmark kproto.records against kafka-python (pure Python) and aiokafka (C).

Run from the repository root::

    python -m benchmarks.records_bench [--rounds N] [--records N]

A batch of 1000 records (16-byte keys, 200-byte values, 2 headers) is decoded
(iterating every record and touching key, value and headers) and encoded, for
no compression and each codec. The implementations run in interleaved rounds, in
an order shuffled every round (seeded): in a fixed order a decoder that always ran
right after the encoders found colder caches and paid for it. The median CPU time
per operation (the process's, so other load on a shared machine does not count) is
reported, in milliseconds. kproto's decoders
run on both paths of :mod:`kproto.speedups` (the C record loops and pure Python) when
the extension is built; "C / aiokafka" is kproto's C-path time divided by aiokafka's
(target: <= 0.8), "ratio" kafka-python's time divided by kproto's.

A last table gives records per second on one core (CPU time, ``time.process_time``)
for uncompressed batches decoded into Arrow buffers by ``decode_arrow_columns`` (C and
pure Python), beside ``decode_columns`` and aiokafka's C decode (records built and
key, value and headers touched), over a run of 20 batches (target: >= 5M records/s).

kafka-python 3.0.12's ``kafka.record.default_records`` is pure Python;
aiokafka 0.14.0's ``aiokafka.record.default_records`` resolves to its Cython
extension (``aiokafka.record._crecords``), which this script checks.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from kproto import speedups
from kproto.records import (
    Compression,
    decode_arrow_columns,
    decode_batches,
    decode_columns,
    encode_batch,
)

CODECS = [
    Compression.NONE,
    Compression.GZIP,
    Compression.SNAPPY,
    Compression.LZ4,
    Compression.ZSTD,
]


def make_records(n: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]], int]]:
    """n records: 16-byte keys, 200-byte (compressible) values, 2 headers."""
    t0 = 1_700_000_000_000
    out = []
    for i in range(n):
        key = b"user-%011d" % (i * 7919 % 10**11)
        noise = os.urandom(24).hex().encode()
        value = (
            b'{"id":%d,"event":"click","page":"/item/%d","sid":"' % (i, i % 113)
        ) + noise
        value = (value + b'","pad":"' + b"x" * 200)[:198] + b'"}'
        headers = [
            ("trace-id", os.urandom(8).hex().encode()),
            ("content-type", b"json"),
        ]
        out.append((key, value, headers, t0 + i))
    return out


def _time(fn: Callable[[], Any]) -> float:
    """The process's CPU time (seconds) spent in ``fn()``; a ``native`` attribute on
    ``fn`` selects the kproto path (switched outside the timed call)."""
    native = getattr(fn, "native", None)
    with speedups.using(native) if native is not None else contextlib.nullcontext():
        t = time.process_time()
        fn()
        return time.process_time() - t


def run(rounds: int, n: int) -> str:
    from aiokafka.record import default_records as aio_default
    from kafka.record.default_records import DefaultRecordBatch as KpBatch
    from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder

    aio_batch = aio_default.DefaultRecordBatch
    aio_builder = aio_default.DefaultRecordBatchBuilder
    assert "_crecords" in aio_batch.__module__, "aiokafka C extension not in use"

    records = make_records(n)
    paths = [True, False] if speedups.available() else [False]
    lines_dec = [
        "| codec | kproto C decode ms | kproto Python decode ms | kproto C columns ms "
        "| kproto Python columns ms | kafka-python ms | aiokafka (C) ms "
        "| C / aiokafka | ratio (kafka-python / kproto C) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines_enc = [
        "| codec | kproto C encode ms | kproto Python encode ms | kafka-python ms "
        "| aiokafka (C) ms | C / aiokafka | ratio (kafka-python / kproto C) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for codec in CODECS:
        data = encode_batch(records, compression=codec)

        def kproto_decode(data: bytes = data) -> None:
            for batch in decode_batches(data):
                for r in batch.records:
                    r.key  # noqa: B018
                    r.value  # noqa: B018
                    r.headers  # noqa: B018

        def kproto_columns(data: bytes = data) -> None:
            decode_columns(data)

        def on(native: bool, fn: Callable[[], None]) -> Callable[[], None]:
            def run() -> None:
                fn()

            run.native = native  # type: ignore[attr-defined]
            return run

        def kp_decode(data: bytes = data) -> None:
            for r in KpBatch(data):
                r.key  # noqa: B018
                r.value  # noqa: B018
                r.headers  # noqa: B018

        def aio_decode(data: bytes = data) -> None:
            for r in aio_batch(data):
                r.key  # noqa: B018
                r.value  # noqa: B018
                r.headers  # noqa: B018

        def kproto_encode(codec: Compression = codec) -> None:
            encode_batch(records, compression=codec)

        def kp_encode(codec: int = int(codec)) -> None:
            b = KpBuilder(2, codec, False, -1, -1, -1, 1 << 30)
            for i, (k, v, h, ts) in enumerate(records):
                b.append(i, ts, k, v, h)
            b.build()

        def aio_encode(codec: int = int(codec)) -> None:
            b = aio_builder(2, codec, False, -1, -1, -1, 1 << 30)
            for i, (k, v, h, ts) in enumerate(records):
                b.append(i, ts, k, v, h)
            b.build()

        fns = {
            "kproto_decode_c": on(True, kproto_decode) if paths[0] else kproto_decode,
            "kproto_decode_py": on(False, kproto_decode),
            "kproto_columns_c": (
                on(True, kproto_columns) if paths[0] else kproto_columns
            ),
            "kproto_columns_py": on(False, kproto_columns),
            "kp_decode": kp_decode,
            "aio_decode": aio_decode,
            "kproto_encode_c": on(True, kproto_encode) if paths[0] else kproto_encode,
            "kproto_encode_py": on(False, kproto_encode),
            "kp_encode": kp_encode,
            "aio_encode": aio_encode,
        }
        for fn in fns.values():  # warm up
            _time(fn)
        times: dict[str, list[float]] = {name: [] for name in fns}
        order = list(fns.items())
        shuffle = random.Random(codec).shuffle
        gc.disable()
        try:
            for _ in range(rounds):
                shuffle(order)  # no implementation always runs after the same one
                for name, fn in order:
                    times[name].append(_time(fn))
        finally:
            gc.enable()
        med = {name: statistics.median(v) * 1000 for name, v in times.items()}
        c = "c" if paths[0] else "py"  # without the extension both columns are Python
        lines_dec.append(
            f"| {codec.label} | {med['kproto_decode_' + c]:.2f} "
            f"| {med['kproto_decode_py']:.2f} | {med['kproto_columns_' + c]:.2f} "
            f"| {med['kproto_columns_py']:.2f} "
            f"| {med['kp_decode']:.2f} | {med['aio_decode']:.2f} "
            f"| {med['kproto_decode_' + c] / med['aio_decode']:.2f} "
            f"| {med['kp_decode'] / med['kproto_decode_' + c]:.2f}x |"
        )
        lines_enc.append(
            f"| {codec.label} | {med['kproto_encode_' + c]:.2f} "
            f"| {med['kproto_encode_py']:.2f} | {med['kp_encode']:.2f} "
            f"| {med['aio_encode']:.2f} "
            f"| {med['kproto_encode_' + c] / med['aio_encode']:.2f} "
            f"| {med['kp_encode'] / med['kproto_encode_' + c]:.2f}x |"
        )
    lines_arrow = arrow_rates(rounds, records)
    head = (
        f"{n} records/batch, 16-byte keys, 200-byte values, 2 headers; median of "
        f"{rounds} interleaved rounds (CPU time); kproto C extension: {speedups.reason()}\n"
    )
    return (
        head
        + "\nDecode\n\n"
        + "\n".join(lines_dec)
        + "\n\nEncode\n\n"
        + "\n".join(lines_enc)
        + "\n\nInto Arrow buffers (uncompressed; records/s on one core, CPU time)\n\n"
        + "\n".join(lines_arrow)
    )


def arrow_rates(rounds: int, records: list[Any], batches: int = 20) -> list[str]:
    """Records/s (CPU time) of decode_arrow_columns, decode_columns and aiokafka on
    ``batches`` uncompressed batches of ``records``, median of interleaved rounds."""
    from aiokafka.record import default_records as aio_default

    batch = [
        encode_batch(records, base_offset=i * len(records)) for i in range(batches)
    ]
    data = b"".join(batch)
    total = len(records) * batches

    def on(native: bool, fn: Callable[[bytes], Any]) -> Callable[[], None]:
        def run() -> None:
            with speedups.using(native):
                fn(data)

        return run

    def aio() -> None:
        for b in batch:
            for r in aio_default.DefaultRecordBatch(b):
                r.key  # noqa: B018
                r.value  # noqa: B018
                r.headers  # noqa: B018

    fns: dict[str, Callable[[], None]] = {}
    for native in [True, False] if speedups.available() else [False]:
        path = "C" if native else "Python"
        fns[f"kproto decode_arrow_columns ({path})"] = on(native, decode_arrow_columns)
        fns[f"kproto decode_columns ({path})"] = on(native, decode_columns)
    fns["aiokafka (C) decode"] = aio
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    # Interleaved blocks, the first call of each block not counted: the fresh output
    # pages one decoder's buffers need depend on what the previous decoder freed
    # (glibc trims its heap after large frees), so each is measured in its own
    # steady state, as a task decoding chunk after chunk runs.
    gc.disable()
    try:
        for _ in range(3):
            for name, fn in fns.items():
                fn()
                for _ in range(max(2, rounds // 3)):
                    t = time.process_time()
                    fn()
                    cpu[name].append(time.process_time() - t)
    finally:
        gc.enable()
    lines = ["| decoder | records/s (one core) |", "|---|---:|"]
    for name, times in cpu.items():
        lines.append(f"| {name} | {total / statistics.median(times):,.0f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--records", type=int, default=1000)
    args = parser.parse_args()
    print(run(args.rounds, args.records))


if __name__ == "__main__":
    main()
