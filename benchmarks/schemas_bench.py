"""Schema registry formats: parsing, canonical text, normalization and compatibility
checks of :mod:`kproto.registry.schemas`, per operation, for the 10-field record of
issue 25's benchmark (long, string, double, enum, timestamp-millis, int, nullable
string, boolean, string, float) in Avro, JSON Schema and Protobuf.

Yardsticks beside kproto's Avro parse: fastavro's ``parse_schema`` of the same schema
(which validates but gives no canonical text); beside the JSON Schema parse:
``jsonschema``'s ``Draft7Validator.check_schema`` (the meta-schema check alone).
Protobuf text is compiled by protoc in kproto's worker process; every round uses new
texts (a comment differs) so that the compile cache does not answer.

Median over rounds, the cyclic garbage collector off while timing. Run with
``python -m benchmarks.schemas_bench``.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from collections.abc import Callable

ROUNDS = 7
N = 300  # operations per round (protoc compiles: N // 10)

AVRO = json.dumps(
    {
        "type": "record",
        "name": "Rec",
        "namespace": "bench",
        "fields": [
            {"name": "a", "type": "long"},
            {"name": "b", "type": "string"},
            {"name": "c", "type": "double"},
            {
                "name": "d",
                "type": {"type": "enum", "name": "E", "symbols": ["X", "Y", "Z"]},
            },
            {"name": "e", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "f", "type": "int"},
            {"name": "g", "type": ["null", "string"], "default": None},
            {"name": "h", "type": "boolean"},
            {"name": "i", "type": "string"},
            {"name": "j", "type": "float"},
        ],
    }
)
JSON = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "bench.Rec",
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "string"},
            "c": {"type": "number"},
            "d": {"enum": ["X", "Y", "Z"]},
            "e": {"type": "integer"},
            "f": {"type": "integer"},
            "g": {"type": ["null", "string"]},
            "h": {"type": "boolean"},
            "i": {"type": "string"},
            "j": {"type": "number"},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }
)
PROTO = """syntax = "proto3";
package bench;

import "google/protobuf/timestamp.proto";

message Rec {
  int64 a = 1;
  string b = 2;
  double c = 3;
  E d = 4;
  google.protobuf.Timestamp e = 5;
  int32 f = 6;
  optional string g = 7;
  bool h = 8;
  string i = 9;
  float j = 10;
}

enum E {
  X = 0;
  Y = 1;
  Z = 2;
}
"""


def _time(fn: Callable[[], object], n: int) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - start) / n
    finally:
        gc.enable()


def main() -> int:
    import fastavro
    import jsonschema

    from kproto.registry.schemas import check_compatibility, parse_schema

    avro = parse_schema("AVRO", AVRO)
    js = parse_schema("JSON", JSON)
    proto = parse_schema("PROTOBUF", PROTO)
    serialized = proto.formatted("serialized")
    counter = iter(range(10**9))

    def new_proto() -> object:
        return parse_schema("PROTOBUF", PROTO + f"// {next(counter)}\n")

    cases: list[tuple[str, Callable[[], object], int]] = [
        ("avro parse", lambda: parse_schema("AVRO", AVRO), N),
        ("avro parse, new=False", lambda: parse_schema("AVRO", AVRO, new=False), N),
        ("  fastavro.parse_schema", lambda: fastavro.parse_schema(json.loads(AVRO)), N),
        ("avro normalize", avro.normalize, N),
        (
            "avro compatibility FULL",
            lambda: check_compatibility(avro, [avro], "FULL"),
            N,
        ),
        ("json parse", lambda: parse_schema("JSON", JSON), N),
        ("json parse, new=False", lambda: parse_schema("JSON", JSON, new=False), N),
        (
            "  jsonschema check_schema",
            lambda: jsonschema.Draft7Validator.check_schema(json.loads(JSON)),
            N,
        ),
        ("json normalize", js.normalize, N),
        ("json compatibility FULL", lambda: check_compatibility(js, [js], "FULL"), N),
        ("protobuf parse, new text (protoc)", new_proto, N // 10),
        ("protobuf parse, cached text", lambda: parse_schema("PROTOBUF", PROTO), N),
        (
            "protobuf parse, base64 descriptor",
            lambda: parse_schema("PROTOBUF", serialized),
            N,
        ),
        ("protobuf normalize", proto.normalize, N),
        (
            "protobuf compatibility FULL",
            lambda: check_compatibility(proto, [proto], "FULL"),
            N,
        ),
    ]
    results: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for _ in range(ROUNDS):
        for name, fn, n in cases:
            results[name].append(_time(fn, n))
    print(f"{'operation':38} {'us/op':>10} {'ops/s':>10}")
    for name, _, _ in cases:
        median = statistics.median(results[name])
        print(f"{name:38} {median * 1e6:10.1f} {1 / median:10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
