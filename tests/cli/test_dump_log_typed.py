"""``kproto dump-log --key-decoder/--value-decoder`` on segments the in-process
broker wrote: Confluent-framed values (written by confluent-kafka's serializers)
decoded by schema id in every layout, the contract's ``--json`` keys kept beside the
decoded value, a record that does not decode printed with its error while the dump
goes on, and the registry's absence as one error line."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentRegistry
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSer
from confluent_kafka.schema_registry.json_schema import (
    JSONSerializer as ConfluentJSONSer,
)
from confluent_kafka.serialization import MessageField, SerializationContext

from kproto.broker import Cluster
from kproto.cli import main
from kproto.client import Client

USER = {
    "type": "record",
    "name": "User",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}
CONTRACT_KEYS = {
    "offset",
    "timestamp",
    "key",
    "value",
    "headers",
    "base_offset",
    "magic",
    "compression",
    "is_control",
    "is_transactional",
    "producer_id",
}


@pytest.fixture(scope="module")
def written(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Cluster, Path, int]]:
    data_dir = tmp_path_factory.mktemp("data")
    with Cluster(nodes=1, schema_registry=True, data_dir=data_dir) as cluster:
        registry = ConfluentRegistry({"url": cluster.schema_registry_url})
        ctx = SerializationContext("users", MessageField.VALUE)
        avro = ConfluentAvroSer(registry, json.dumps(USER))
        records = [
            (struct.pack(">q", 1), avro({"id": 1, "email": "a@x"}, ctx)),
            (struct.pack(">q", 2), b"not framed"),
            (struct.pack(">q", 3), avro({"id": 3, "email": None}, ctx)),
        ]
        schema_id = struct.unpack(">I", records[0][1][1:5])[0]  # type: ignore[index]
        as_json = ConfluentJSONSer(
            json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}}),
            registry,
        )
        with Client(cluster.bootstrap_servers) as client:
            client.produce("users", records, partition=0)
            client.produce(
                "counts",
                [
                    (
                        None,
                        as_json(
                            {"n": 5}, SerializationContext("counts", MessageField.VALUE)
                        ),
                    )
                ],
                partition=0,
            )
        yield cluster, data_dir, schema_id


def dump(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["dump-log", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_keeps_the_contract_and_adds_the_decoded_value(
    written: tuple[Cluster, Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, data_dir, schema_id = written
    code, out, _ = dump(
        capsys,
        str(data_dir / "users-0"),
        "--json",
        "--key-decoder=long",
        "--value-decoder=avro",
        f"--schema-registry={cluster.schema_registry_url}",
    )
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert all(CONTRACT_KEYS <= set(row) for row in rows)
    assert base64.b64decode(rows[0]["key"]) == struct.pack(">q", 1)
    assert [row["decoded"] for row in rows] == [
        {
            "key": 1,
            "value": {"id": 1, "email": {"string": "a@x"}},
            "value_schema_id": schema_id,
        },
        {
            "key": 2,
            "value": None,
            "value_error": "Unknown magic byte 110 (0 or 1 expected) "
            "(topic 'users', partition 0, offset 1)",
        },
        {"key": 3, "value": {"id": 3, "email": None}, "value_schema_id": schema_id},
    ]


def test_kafka_and_kproto_layouts_print_the_decoded_value(
    written: tuple[Cluster, Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, data_dir, _ = written
    registry = f"--schema-registry={cluster.schema_registry_url}"
    code, out, _ = dump(
        capsys, str(data_dir / "users-0"), "--value-decoder=avro", registry
    )
    assert code == 0
    records = [line for line in out.splitlines() if line.startswith("| offset")]
    assert records[0].endswith(' payload: {"id":1,"email":{"string":"a@x"}}')
    assert " key: \x00" in records[0]  # the key stays text (Kafka's StringDecoder)
    assert records[1].endswith(
        " payload: Error at offset 1: Unknown magic byte 110 (0 or 1 expected) "
        "(topic 'users', partition 0, offset 1)"
    )
    code, out, _ = dump(
        capsys,
        str(data_dir / "counts-0"),
        "--format=kproto",
        "--value-decoder=json",
        registry,
    )
    assert code == 0
    assert out.splitlines()[2].endswith(' key=null value={"n":5}')


def test_errors(
    written: tuple[Cluster, Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    _, data_dir, _ = written
    path = str(data_dir / "users-0")
    code, out, err = dump(capsys, path, "--value-decoder=avro")
    assert (code, out) == (2, "")
    assert err == "kproto: error: --schema-registry URL is needed for this format\n"
    code, _, err = dump(
        capsys, path, "--value-decoder=avro", "--schema-registry=http://127.0.0.1:9"
    )
    assert code == 2
    assert err.startswith(
        "kproto: error: schema registry unreachable: GET http://127.0.0.1:9/"
    )
    assert err.count("\n") == 1
    code, _, err = dump(capsys, path, "--value-decoder=long", "--offsets-decoder")
    assert code == 2
    assert err == (
        "kproto: error: --key-decoder/--value-decoder and the internal topics' "
        "decoders are exclusive\n"
    )
