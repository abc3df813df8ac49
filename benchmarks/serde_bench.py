"""kproto's registry-backed deserializers beside confluent-kafka's, on the same bytes.

``make bench-serde`` (``python -m benchmarks.serde_bench [--records N] [--rounds R]``):
N values of a 10-field record (long, string, double, enum, timestamp-millis, int,
nullable string, boolean, string, float) are written once per format by
confluent-kafka's AvroSerializer, JSONSerializer and ProtobufSerializer (over a
``.proto`` compiled here with grpc_tools.protoc) through the registry of
``Cluster(schema_registry=True)``; then each deserializer reads all N, in one thread
pinned to one core, timed by process CPU time. The deserializers are interleaved over
R rounds (the order rotates each round); the median records/s and the ratio
kproto/confluent per format are printed. Both sides' registry clients are warm (one
untimed read first), so the figures are decoding, not HTTP. Not a test: nothing is
asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

AVRO = {
    "type": "record",
    "name": "Trade",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "symbol", "type": "string"},
        {"name": "price", "type": "double"},
        {
            "name": "side",
            "type": {"type": "enum", "name": "Side", "symbols": ["BUY", "SELL"]},
        },
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "quantity", "type": "int"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "active", "type": "boolean"},
        {"name": "venue", "type": "string"},
        {"name": "fee", "type": "float"},
    ],
}

JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Trade",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "symbol": {"type": "string"},
        "price": {"type": "number"},
        "side": {"enum": ["BUY", "SELL"]},
        "at": {"type": "integer", "description": "timestamp-millis"},
        "quantity": {"type": "integer"},
        "note": {"type": ["string", "null"]},
        "active": {"type": "boolean"},
        "venue": {"type": "string"},
        "fee": {"type": "number"},
    },
    "required": [
        "id",
        "symbol",
        "price",
        "side",
        "at",
        "quantity",
        "active",
        "venue",
        "fee",
    ],
}

PROTO = """
syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";
message Trade {
  enum Side { BUY = 0; SELL = 1; }
  int64 id = 1;
  string symbol = 2;
  double price = 3;
  Side side = 4;
  google.protobuf.Timestamp at = 5;
  int32 quantity = 6;
  optional string note = 7;
  bool active = 8;
  string venue = 9;
  float fee = 10;
}
"""


def trades(n: int) -> list[dict[str, Any]]:
    base = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
    return [
        {
            "id": 10_000_000_000 + i,
            "symbol": f"SYM{i % 500}",
            "price": 100.0 + (i % 1000) / 8,
            "side": "SELL" if i % 3 else "BUY",
            "at": base + dt.timedelta(milliseconds=i * 7),
            "quantity": i % 10_000,
            "note": None if i % 2 else f"note {i}",
            "active": i % 5 != 0,
            "venue": "XNAS" if i % 2 else "XLON",
            "fee": 0.25 + (i % 4),
        }
        for i in range(n)
    ]


def compile_proto(out: Path) -> Any:
    import grpc_tools
    from grpc_tools import protoc

    (out / "bench_trade.proto").write_text(PROTO)
    include = Path(grpc_tools.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{out}",
        f"-I{include}",
        f"--python_out={out}",
        "bench_trade.proto",
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    sys.path.insert(0, str(out))
    return importlib.import_module("bench_trade_pb2")


def encode_all(
    url: str, values: list[dict[str, Any]], pb: Any
) -> dict[str, list[bytes]]:
    """Each format's bytes, written by confluent-kafka's serializers."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": url})
    out: dict[str, list[bytes]] = {}
    avro = AvroSerializer(client, json.dumps(AVRO))
    ctx = SerializationContext("bench-avro", MessageField.VALUE)
    out["avro"] = [avro(v, ctx) for v in values]
    js = JSONSerializer(json.dumps(JSON_SCHEMA), client)
    ctx = SerializationContext("bench-json", MessageField.VALUE)
    out["json"] = [
        js({**v, "at": int(v["at"].timestamp() * 1000)}, ctx) for v in values
    ]
    proto = ProtobufSerializer(pb.Trade, client, {})
    ctx = SerializationContext("bench-proto", MessageField.VALUE)
    messages = []
    for v in values:
        m = pb.Trade(
            id=v["id"],
            symbol=v["symbol"],
            price=v["price"],
            side=pb.Trade.SELL if v["side"] == "SELL" else pb.Trade.BUY,
            quantity=v["quantity"],
            active=v["active"],
            venue=v["venue"],
            fee=v["fee"],
        )
        m.at.FromDatetime(v["at"])
        if v["note"] is not None:
            m.note = v["note"]
        messages.append(proto(m, ctx))
    out["protobuf"] = messages
    return out


def deserializers(
    url: str, pb: Any
) -> dict[tuple[str, str], tuple[Callable[..., Any], Any]]:
    """``(format, implementation) -> (deserializer, its context)``."""
    from confluent_kafka.schema_registry import SchemaRegistryClient as CClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer as CAvro
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CJson
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CProto
    from confluent_kafka.serialization import MessageField as CField
    from confluent_kafka.serialization import SerializationContext as CContext

    from kproto.registry.client import SchemaRegistryClient
    from kproto.serde import (
        AvroDeserializer,
        JSONDeserializer,
        MessageField,
        ProtobufDeserializer,
        SerializationContext,
    )

    ours = SchemaRegistryClient(url)
    theirs = CClient({"url": url})

    def k(topic: str) -> SerializationContext:
        return SerializationContext(topic, MessageField.VALUE)

    def c(topic: str) -> CContext:
        return CContext(topic, CField.VALUE)

    return {
        ("avro", "kproto"): (AvroDeserializer(ours), k("bench-avro")),
        ("avro", "confluent"): (CAvro(theirs), c("bench-avro")),
        ("json", "kproto"): (
            JSONDeserializer(schema_registry_client=ours),
            k("bench-json"),
        ),
        ("json", "confluent"): (
            CJson(None, schema_registry_client=theirs),
            c("bench-json"),
        ),
        ("protobuf", "kproto"): (
            ProtobufDeserializer(pb.Trade, None, ours),
            k("bench-proto"),
        ),
        ("protobuf", "kproto (classes from the registry)"): (
            ProtobufDeserializer(None, None, ours),
            k("bench-proto"),
        ),
        ("protobuf", "confluent"): (CProto(pb.Trade, {}, theirs), c("bench-proto")),
    }


def run_once(deserialize: Callable[..., Any], ctx: Any, data: list[bytes]) -> float:
    """Records/s of one pass over ``data`` (process CPU time)."""
    start = time.process_time()
    for item in data:
        deserialize(item, ctx)
    return len(data) / max(time.process_time() - start, 1e-9)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    from kproto.broker import Cluster

    with (
        tempfile.TemporaryDirectory() as tmp,
        Cluster(nodes=1, schema_registry=True) as cluster,
    ):
        pb = compile_proto(Path(tmp))
        url = cluster.schema_registry_url
        data = encode_all(url, trades(args.records), pb)
        candidates = deserializers(url, pb)
        for (fmt, _), (deserialize, ctx) in candidates.items():
            deserialize(data[fmt][0], ctx)  # warm: schema fetched and parsed
        results: dict[tuple[str, str], list[float]] = {key: [] for key in candidates}
        keys = list(candidates)
        for r in range(args.rounds):
            order = keys[r % len(keys) :] + keys[: r % len(keys)]
            for key in order:
                deserialize, ctx = candidates[key]
                results[key].append(run_once(deserialize, ctx, data[key[0]]))

    print(
        f"Deserializers, {args.records} records of the 10-field record, median of "
        f"{args.rounds} interleaved rounds, one core (process CPU time):"
    )
    print(f"{'format':<10} {'deserializer':<36} {'records/s':>11} {'vs confluent':>13}")
    for fmt in ("avro", "json", "protobuf"):
        base = statistics.median(results[(fmt, "confluent")])
        for (f, impl), rates in results.items():
            if f != fmt:
                continue
            rate = statistics.median(rates)
            print(f"{fmt:<10} {impl:<36} {rate:>11,.0f} {rate / base:>12.2f}x")


if __name__ == "__main__":
    main()
