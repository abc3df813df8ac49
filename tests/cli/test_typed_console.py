"""``kproto produce`` / ``consume`` with ``--key-format`` / ``--value-format`` against
the in-process broker and registry: Avro's JSON encoding as kafka-avro-console-*
reads and prints it, Protobuf's and JSON Schema's JSON, Kafka's primitives, the
bytes interoperating with confluent-kafka's serializers, bad lines reported by
number and not sent, and registry errors as one line."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentRegistry
from confluent_kafka.schema_registry.avro import AvroDeserializer as ConfluentAvroDe
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSer
from confluent_kafka.schema_registry.json_schema import (
    JSONDeserializer as ConfluentJSONDe,
)
from confluent_kafka.serialization import MessageField, SerializationContext

from kproto.broker import Cluster
from kproto.client import Client

from .conftest import Kproto

USER = {
    "type": "record",
    "name": "User",
    "namespace": "example",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
        {
            "name": "at",
            "type": {"type": "long", "logicalType": "timestamp-millis"},
            "default": 0,
        },
    ],
}

ORDER_PROTO = """syntax = "proto3";
package example;
message Order {
  int64 order_id = 1;
  string customer_name = 2;
  repeated string items = 3;
  message Line { string sku = 1; }
}
message Other { int32 x = 1; }
"""

ORDER_JSON = {
    "title": "Order",
    "type": "object",
    "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1, schema_registry=True) as cluster:
        yield cluster


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "user.avsc").write_text(json.dumps(USER))
    (tmp_path / "order.proto").write_text(ORDER_PROTO)
    (tmp_path / "order.json").write_text(json.dumps(ORDER_JSON))
    (tmp_path / "broken.avsc").write_text('{"type": "record", "name": "X"')
    (tmp_path / "broken.proto").write_text('syntax = "proto3";\nmessage {')
    return tmp_path


def opts(cluster: Cluster) -> list[str]:
    return [
        f"--bootstrap-server={cluster.bootstrap_servers}",
        f"--schema-registry={cluster.schema_registry_url}",
    ]


def values(cluster: Cluster, topic: str) -> list[bytes | None]:
    with Client(cluster.bootstrap_servers) as client:
        return [r.value for r in client.iter_records(topic, 0, 0)]


def test_avro_lines_in_avro_json_encoding_and_printed_back(
    cluster: Cluster, files: Path, kproto: Kproto
) -> None:
    lines = [
        '{"id": 1, "name": {"string": "ann"}, "tags": ["a", "b"], "at": 1700000000000}',
        '{"id": 2, "name": null, "tags": [], "at": 0}',
    ]
    code, _, err = kproto(
        "produce",
        "users",
        *opts(cluster),
        "--value-format=avro",
        f"--value-schema={files / 'user.avsc'}",
        stdin="\n".join(lines) + "\n",
    )
    assert (code, err) == (0, "")
    # confluent-kafka's AvroDeserializer reads what was sent
    confluent = ConfluentAvroDe(ConfluentRegistry({"url": cluster.schema_registry_url}))
    ctx = SerializationContext("users", MessageField.VALUE)
    read = [confluent(v, ctx) for v in values(cluster, "users")]
    assert [(r["id"], r["name"], r["tags"]) for r in read] == [
        (1, "ann", ["a", "b"]),
        (2, None, []),
    ]
    assert int(read[0]["at"].timestamp() * 1000) == 1700000000000
    # and consume prints Avro's JSON encoding (unions wrapped), compact
    code, out, err = kproto(
        "consume",
        "users",
        *opts(cluster),
        "--from-beginning",
        "--value-format=avro",
    )
    assert code == 0
    assert out.splitlines() == [
        '{"id":1,"name":{"string":"ann"},"tags":["a","b"],"at":1700000000000}',
        '{"id":2,"name":null,"tags":[],"at":0}',
    ]
    assert err == "Processed a total of 2 messages\n"


def test_consume_prints_confluent_written_avro_with_schema_ids_and_keys(
    cluster: Cluster, kproto: Kproto
) -> None:
    registry = ConfluentRegistry({"url": cluster.schema_registry_url})
    serialize = ConfluentAvroSer(registry, json.dumps(USER))
    ctx = SerializationContext("written", MessageField.VALUE)
    value = serialize({"id": 7, "name": "bo", "tags": [], "at": 5}, ctx)
    schema_id = struct.unpack(">I", value[1:5])[0]
    with Client(cluster.bootstrap_servers) as client:
        client.produce(
            "written", [(struct.pack(">q", 42), value), (None, None)], partition=0
        )
    argv = [
        "consume",
        "written",
        *opts(cluster),
        "--from-beginning",
        "--key-format=long",
        "--value-format=avro",
    ]
    code, out, _ = kproto(
        *argv, "--property=print.key=true", "--property=print.schema.ids=true"
    )
    assert code == 0
    assert out.splitlines() == [
        f'42\t{{"id":7,"name":{{"string":"bo"}},"tags":[],"at":5}}\t{schema_id}',
        "null\tnull\tnull",
    ]
    code, out, _ = kproto(*argv, "--json", "--max-messages=1")
    row = json.loads(out)
    assert row["key"] == 42 and row["value_schema_id"] == schema_id
    assert row["value"] == {"id": 7, "name": {"string": "bo"}, "tags": [], "at": 5}


def test_bad_lines_are_reported_by_number_and_not_sent(
    cluster: Cluster, files: Path, kproto: Kproto
) -> None:
    stdin = "\n".join(
        [
            "1\t" + '{"id": 1}',
            "2\t" + '{"id": "not a long"}',
            "x\t" + '{"id": 3}',
            "4\t" + "{not json",
            "5\t" + '{"id": 5, "name": "unwrapped union"}',
            "6\t" + '{"id": 6}',
        ]
    )
    code, _, err = kproto(
        "produce",
        "checked",
        *opts(cluster),
        "--key-separator=\t",
        "--key-format=long",
        "--value-format=avro",
        f"--value-schema={files / 'user.avsc'}",
        stdin=stdin + "\n",
    )
    assert code == 1
    lines = err.splitlines()
    assert [line.split(":")[1:3] for line in lines[:-1]] == [
        [" error", " stdin line 2"],
        [" error", " stdin line 3"],
        [" error", " stdin line 4"],
        [" error", " stdin line 5"],
    ]
    assert all(line.startswith("kproto: error: ") for line in lines)
    assert "key: not a long" in lines[1] and "not JSON" in lines[2]
    assert lines[-1] == "kproto: error: 4 line(s) not sent: 2, 3, 4, 5"
    with Client(cluster.bootstrap_servers) as client:
        sent = [struct.unpack(">q", r.key)[0] for r in client.iter_records("checked", 0, 0)]  # type: ignore[arg-type]
    assert sent == [1, 6]


def test_produce_with_a_schema_id_and_with_the_latest_version(
    cluster: Cluster, files: Path, kproto: Kproto
) -> None:
    registry = ConfluentRegistry({"url": cluster.schema_registry_url})
    from confluent_kafka.schema_registry import Schema as ConfluentSchema

    schema_id = registry.register_schema(
        "other-subject", ConfluentSchema(json.dumps(USER), "AVRO")
    )
    argv = ["produce", "by-id", *opts(cluster), "--value-format=avro"]
    code, _, err = kproto(
        *argv,
        f"--value-schema-id={schema_id}",
        stdin='{"id": 1, "name": null, "tags": [], "at": 0}\n',
    )
    assert (code, err) == (0, "")
    assert values(cluster, "by-id")[0][:5] == b"\x00" + struct.pack(">I", schema_id)  # type: ignore[index]
    # the subject's latest version when no schema is given; none: the registry's error
    code, _, err = kproto(*argv, stdin='{"id": 2}\n')
    assert code == 2
    assert err == (
        "kproto: error: schema registry: Subject 'by-id-value' not found. "
        "(error_code 40401)\n"
    )
    registry.register_schema("by-id-value", ConfluentSchema(json.dumps(USER), "AVRO"))
    code, _, err = kproto(
        *argv,
        stdin='{"id": 2, "name": null, "tags": [], "at": 0}\n',
    )
    assert (code, err) == (0, "")
    assert len(values(cluster, "by-id")) == 2


def test_protobuf_from_a_proto_file_printed_as_protobuf_json(
    cluster: Cluster, files: Path, kproto: Kproto
) -> None:
    code, _, err = kproto(
        "produce",
        "orders-pb",
        *opts(cluster),
        "--value-format=protobuf",
        f"--value-schema={files / 'order.proto'}",
        stdin='{"orderId": "5", "customerName": "ann", "items": ["x"]}\n'
        '{"order_id": 6}\n'
        '{"orderId": 7, "nope": 1}\n',
    )
    assert code == 1
    assert err.startswith(
        "kproto: error: stdin line 3: value: not JSON of example.Order"
    )
    raw = values(cluster, "orders-pb")
    assert [v[5] for v in raw] == [0, 0]  # type: ignore[index]  # message index [0]: Order
    code, out, _ = kproto(
        "consume",
        "orders-pb",
        *opts(cluster),
        "--from-beginning",
        "--value-format=protobuf",
    )
    assert code == 0
    # Protobuf's JSON mapping: lowerCamelCase, int64 as strings, defaults printed
    assert [json.loads(line) for line in out.splitlines()] == [
        {"orderId": "5", "customerName": "ann", "items": ["x"]},
        {"orderId": "6", "customerName": "", "items": []},
    ]
    # another message of the file by name; an unknown one named
    code, _, err = kproto(
        "produce",
        "orders-pb-other",
        *opts(cluster),
        "--value-format=protobuf",
        f"--value-schema={files / 'order.proto'}",
        "--value-message=Nope",
        stdin='{"x": 1}\n',
    )
    assert code == 2
    assert err == (
        f"kproto: error: --value-schema {files / 'order.proto'}: no message 'Nope' "
        "in order.proto\n"
    )


def test_json_schema_values_validated_and_read_by_confluent(
    cluster: Cluster, files: Path, kproto: Kproto
) -> None:
    code, _, err = kproto(
        "produce",
        "orders-js",
        *opts(cluster),
        "--value-format=json",
        f"--value-schema={files / 'order.json'}",
        stdin='{"id": 1, "item": "pen"}\n{"item": "no id"}\n',
    )
    assert code == 1
    assert err.splitlines()[0].startswith("kproto: error: stdin line 2: value: ")
    assert "'id' is a required property" in err
    registry = ConfluentRegistry({"url": cluster.schema_registry_url})
    confluent = ConfluentJSONDe(None, schema_registry_client=registry)
    ctx = SerializationContext("orders-js", MessageField.VALUE)
    assert [confluent(v, ctx) for v in values(cluster, "orders-js")] == [
        {"id": 1, "item": "pen"}
    ]
    code, out, _ = kproto(
        "consume",
        "orders-js",
        *opts(cluster),
        "--from-beginning",
        "--value-format=json",
    )
    assert out == '{"id":1,"item":"pen"}\n'


def test_primitives_roundtrip(cluster: Cluster, kproto: Kproto) -> None:
    bs = f"--bootstrap-server={cluster.bootstrap_servers}"
    uid = "123e4567-e89b-12d3-a456-426614174000"
    stdin = f"{uid}\t2.5\n{uid}\t-1e300\n{uid}\tNaNx\n"
    code, _, err = kproto(
        "produce",
        "prims",
        bs,
        "--key-separator=\t",
        "--key-format=uuid",
        "--value-format=double",
        stdin=stdin,
    )
    assert code == 1 and "stdin line 3: value: not a double" in err
    assert values(cluster, "prims") == [
        struct.pack(">d", 2.5),
        struct.pack(">d", -1e300),
    ]
    code, out, _ = kproto(
        "consume",
        "prims",
        bs,
        "--from-beginning",
        "--key-format=uuid",
        "--value-format=double",
        "--property=print.key=true",
    )
    assert out.splitlines() == [f"{uid}\t2.5", f"{uid}\t-1e+300"]
    code, _, err = kproto(
        "produce",
        "ints",
        bs,
        "--value-format=int",
        stdin="1\n2147483648\n\n-2147483648\n",
    )
    assert code == 1 and "stdin line 2: value: 2147483648 does not fit an int" in err
    assert values(cluster, "ints") == [
        struct.pack(">i", 1),
        struct.pack(">i", -(2**31)),
    ]
    code, _, err = kproto(
        "produce",
        "bin",
        bs,
        "--value-format=binary",
        stdin="AAEC\n",
    )
    assert code == 0 and values(cluster, "bin") == [b"\x00\x01\x02"]
    code, out, _ = kproto(
        "consume",
        "bin",
        bs,
        "--from-beginning",
        "--value-format=binary",
        "--json",
    )
    assert json.loads(out)["value"] == "AAEC"


def test_a_value_that_does_not_decode_stops_or_is_skipped(
    cluster: Cluster, kproto: Kproto
) -> None:
    with Client(cluster.bootstrap_servers) as client:
        client.produce(
            "mixed", [(None, b"plain text"), (None, b"\x00\x00\x00\x03\xe7")]
        )
    argv = [
        "consume",
        "mixed",
        *opts(cluster),
        "--from-beginning",
        "--value-format=avro",
    ]
    code, out, err = kproto(*argv)
    assert (code, out) == (2, "")
    assert err == (
        "kproto: error: Unknown magic byte 112 (0 or 1 expected) "
        "(topic 'mixed', partition 0, offset 0)\n"
    )
    code, out, err = kproto(*argv, "--skip-message-on-error")
    assert (code, out) == (0, "")
    lines = err.splitlines()
    assert lines[0].endswith("offset 0) (skipped)")
    assert "offset 1, schema id 999" in lines[1] and lines[1].endswith("(skipped)")
    assert lines[-1] == "Skipped 2 messages that did not decode"


def test_usage_and_registry_errors_are_one_line(
    cluster: Cluster, files: Path, kproto: Kproto
) -> None:
    bs = f"--bootstrap-server={cluster.bootstrap_servers}"
    cases = [
        (
            ["produce", "t", bs, "--value-format=avro"],
            "--schema-registry URL is needed for this format",
        ),
        (
            ["produce", "t", bs, f"--value-schema={files / 'user.avsc'}"],
            "--value-schema needs --value-format",
        ),
        (
            [
                "produce",
                "t",
                *opts(cluster),
                "--value-format=avro",
                f"--value-schema={files / 'broken.avsc'}",
            ],
            f"--value-schema {files / 'broken.avsc'}: not JSON: Expecting ','",
        ),
        (
            [
                "produce",
                "t",
                *opts(cluster),
                "--value-format=avro",
                f"--value-schema={files / 'missing.avsc'}",
            ],
            f"{files / 'missing.avsc'}: No such file or directory",
        ),
        (
            [
                "produce",
                "t",
                *opts(cluster),
                "--value-format=protobuf",
                f"--value-schema={files / 'broken.proto'}",
            ],
            f"--value-schema {files / 'broken.proto'}: ",
        ),
        (
            [
                "produce",
                "t",
                *opts(cluster),
                "--value-format=avro",
                "--value-schema-id=4242",
            ],
            "schema registry: Schema 4242 not found",
        ),
        (
            [
                "produce",
                "t",
                bs,
                "--schema-registry=http://127.0.0.1:9",
                "--registry-timeout-ms=2000",
                "--value-format=avro",
                f"--value-schema={files / 'user.avsc'}",
            ],
            "schema registry unreachable: POST http://127.0.0.1:9/subjects/t-value/versions",
        ),
        (
            ["consume", "t", bs, "--value-format=json", "--schema-registry=ftp://x"],
            "--schema-registry: registry url must be http:// or https://",
        ),
        (
            [
                "consume",
                "t",
                *opts(cluster),
                "--value-format=json",
                "--registry-user=bob",
            ],
            "--registry-user: expected USER:PASSWORD",
        ),
    ]
    for argv, expected in cases:
        code, out, err = kproto(*argv, stdin='{"id": 1}\n')
        assert code == 2, argv
        assert err.startswith(f"kproto: error: {expected}"), (argv, err)
        assert err.count("\n") == 1, err


def test_protobuf_by_schema_id_and_latest_with_an_avro_key(
    cluster: Cluster, files: Path, kproto: Kproto
) -> None:
    (files / "key.avsc").write_text('"string"')
    argv = ["produce", "pb-ids", *opts(cluster), "--value-format=protobuf"]
    code, _, err = kproto(
        *argv,
        f"--value-schema={files / 'order.proto'}",
        stdin='{"orderId": 1}\n',
    )
    assert (code, err) == (0, "")
    schema_id = (
        ConfluentRegistry({"url": cluster.schema_registry_url})
        .get_latest_version("pb-ids-value")
        .schema_id
    )
    # by id: the registered descriptor's first message; without a schema: the latest
    code, _, err = kproto(
        *argv,
        f"--value-schema-id={schema_id}",
        stdin='{"items": ["a"], "orderId": 2}\n',
    )
    assert (code, err) == (0, "")
    code, _, err = kproto(
        *argv,
        "--key-format=avro",
        f"--key-schema={files / 'key.avsc'}",
        "--key-separator=\t",
        stdin='"k"\t{"orderId": 3}\n',
    )
    assert (code, err) == (0, "")
    code, out, _ = kproto(
        "consume",
        "pb-ids",
        *opts(cluster),
        "--from-beginning",
        "--key-format=avro",
        "--value-format=protobuf",
        "--property=print.key=true",
    )
    # fields in field-number order, as Java's JsonFormat prints them
    assert out.splitlines() == [
        'null\t{"orderId":"1","customerName":"","items":[]}',
        'null\t{"orderId":"2","customerName":"","items":["a"]}',
        '"k"\t{"orderId":"3","customerName":"","items":[]}',
    ]
    # a schema id of another type is named
    code, _, err = kproto(
        "produce",
        "pb-ids",
        *opts(cluster),
        "--value-format=avro",
        f"--value-schema-id={schema_id}",
    )
    assert code == 2
    assert err == f"kproto: error: schema id {schema_id} is PROTOBUF, not AVRO\n"
