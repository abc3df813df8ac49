"""Avro values into Arrow on one core: kproto (C and Python) against fastavro and
confluent-kafka's ``AvroDeserializer``.

The record is issue 26's: ten fields (long, string, double, enum,
timestamp-millis, int, nullable string, boolean, string, float), about 50 bytes
each, written by fastavro's ``schemaless_writer`` and framed in Confluent's wire
format (magic byte 0, schema id) as one Arrow binary column, the shape
:func:`kproto.records.decode_arrow_columns` gives a topic's ``value``. Every
contender decodes the same bytes:

* ``kproto C`` / ``kproto Python``: :func:`kproto.avro.decode_avro` with the plan
  of schema id 1, then :func:`kproto.avro.arrow.to_arrow` (a ``StructArray``);
* ``fastavro``: ``schemaless_reader`` per value (after the 5-byte header), dicts;
* ``fastavro + from_pylist``: the same, then ``pa.Table.from_pylist``;
* ``confluent AvroDeserializer``: confluent-kafka 2.16's deserializer with a
  ``mock://`` ``SchemaRegistryClient`` holding the schema, dicts.

Before timing, the Arrow results of kproto (both paths) and of fastavro +
``from_pylist`` are checked equal. Interleaved rounds (each contender once per
round), the garbage collector off while timing; the median rate is reported.

Run with ``python -m benchmarks.avro_bench`` (``make bench-avro``).
"""

from __future__ import annotations

import datetime
import gc
import io
import json
import platform
import statistics
import sys
import time
from array import array
from collections.abc import Callable
from typing import Any

N = 20_000
ROUNDS = 5
C_REPEAT = 10  # the C path is timed over this many passes per round

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Trade",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "symbol", "type": "string"},
        {"name": "price", "type": "double"},
        {
            "name": "side",
            "type": {
                "type": "enum",
                "name": "Side",
                "symbols": ["BUY", "SELL", "HOLD"],
            },
        },
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "quantity", "type": "int"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "active", "type": "boolean"},
        {"name": "venue", "type": "string"},
        {"name": "fee", "type": "float"},
    ],
}
SCHEMA_ID = 1


def make_values() -> list[bytes]:
    import fastavro

    parsed = fastavro.parse_schema(SCHEMA)
    base = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    out = []
    for i in range(N):
        record = {
            "id": 1_000_000 + i,
            "symbol": ("AAPL", "MSFT", "GOOG", "AMZN")[i % 4],
            "price": 100.0 + i * 0.25,
            "side": ("BUY", "SELL", "HOLD")[i % 3],
            "ts": base + datetime.timedelta(milliseconds=i * 17),
            "quantity": i % 1000,
            "note": None if i % 2 else "limit",
            "active": i % 5 != 0,
            "venue": ("XNAS", "XNYS")[i % 2],
            "fee": 0.5 + (i % 7),
        }
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, record)
        out.append(b"\x00" + SCHEMA_ID.to_bytes(4, "big") + buf.getvalue())
    return out


def column(values: list[bytes]) -> tuple[bytes, bytes]:
    offsets = array("i", [0])
    for v in values:
        offsets.append(offsets[-1] + len(v))
    return offsets.tobytes(), b"".join(values)


def contenders(values: list[bytes]) -> dict[str, tuple[Callable[[], Any], int]]:
    import fastavro
    import pyarrow as pa
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from kproto import speedups
    from kproto.avro import avro_plan, decode_avro
    from kproto.avro.arrow import to_arrow

    offsets, data = column(values)
    plans = {SCHEMA_ID: avro_plan(json.dumps(SCHEMA))}
    parsed = fastavro.parse_schema(SCHEMA)

    def kproto_c() -> Any:
        with speedups.using(True):
            return to_arrow(decode_avro(plans, N, offsets, None, data))

    def kproto_py() -> Any:
        with speedups.using(False):
            return to_arrow(decode_avro(plans, N, offsets, None, data))

    def fastavro_dicts() -> list[Any]:
        read = fastavro.schemaless_reader
        return [read(io.BytesIO(v[5:]), parsed, None) for v in values]

    def fastavro_arrow() -> Any:
        return pa.Table.from_pylist(fastavro_dicts())

    client = SchemaRegistryClient.new_client({"url": "mock://avro-bench"})
    sid = client.register_schema("trades-value", Schema(json.dumps(SCHEMA), "AVRO"))
    assert sid == SCHEMA_ID, sid
    deserializer = AvroDeserializer(client)
    ctx = SerializationContext("trades", MessageField.VALUE)

    def confluent() -> list[Any]:
        return [deserializer(v, ctx) for v in values]

    table = fastavro_arrow()
    c_rows = kproto_c()
    py_rows = kproto_py()
    assert c_rows.equals(py_rows)
    # fastavro's timestamps carry datetime.timezone.utc, pyarrow's a zoneinfo UTC
    utc = c_rows.to_pylist()[0]["ts"].tzinfo
    want = [{**r, "ts": r["ts"].replace(tzinfo=utc)} for r in table.to_pylist()]
    assert c_rows.to_pylist() == want, "kproto and fastavro disagree"
    assert confluent()[:3] == fastavro_dicts()[:3]
    return {
        "kproto C": (kproto_c, C_REPEAT),
        "kproto Python": (kproto_py, 1),
        "fastavro schemaless_reader": (fastavro_dicts, 1),
        "fastavro + pa.Table.from_pylist": (fastavro_arrow, 1),
        "confluent AvroDeserializer": (confluent, 1),
    }


def main() -> int:
    values = make_values()
    runs = contenders(values)
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(ROUNDS):
        for name, (fn, repeat) in runs.items():
            gc.collect()
            gc.disable()
            t0 = time.process_time()
            for _ in range(repeat):
                fn()
            dt = time.process_time() - t0
            gc.enable()
            rates[name].append(N * repeat / dt)
    size = sum(len(v) for v in values) / N
    print(
        f"Avro -> Arrow, {N} records of {size:.1f} bytes (Confluent-framed), "
        f"median of {ROUNDS} interleaved rounds, CPU time on one core, "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, {datetime.date.today()}"
    )
    base = statistics.median(rates["fastavro schemaless_reader"])
    for name, rs in rates.items():
        med = statistics.median(rs)
        print(f"  {name:34s} {med:>13,.0f} records/s  {med / base:6.2f}x fastavro")
    return 0


if __name__ == "__main__":
    sys.exit(main())
