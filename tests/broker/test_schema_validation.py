"""Broker-side schema id validation (Confluent Server's
``confluent.key/value.schema.validation``) with confluent-kafka's producer, its
Avro serializer and the cluster's own registry."""

from __future__ import annotations

import itertools
import json
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import (
    MessageField,
    SerializationContext,
)

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.records import Compression, encode_batch
from tests.broker import wire

VALUE_ON = {"confluent.value.schema.validation": "true"}
USER = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "kproto.test",
        "fields": [{"name": "name", "type": "string"}],
    }
)
ORDER = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "kproto.test",
        "fields": [{"name": "id", "type": "long"}],
    }
)
_topics = itertools.count()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1, schema_registry=True) as c:
        yield c


@pytest.fixture
def registry(cluster: Cluster) -> SchemaRegistryClient:
    return SchemaRegistryClient(cluster.schema_registry_config())


@pytest.fixture
def topic(cluster: Cluster) -> Callable[..., str]:
    """Create a fresh one-partition topic with ``configs``; return its name."""

    def make(configs: dict[str, str] | None = None) -> str:
        name = f"sv{next(_topics)}"
        cluster.create_topic(name, 1, configs=configs)
        return name

    return make


def serializer(
    registry: SchemaRegistryClient, schema: str = USER, **conf: Any
) -> AvroSerializer:
    return AvroSerializer(registry, schema, conf=conf or None)


def framed(schema_id: int, payload: bytes = b"\x02a") -> bytes:
    """Confluent's wire format: magic 0, the 4-byte id, the payload."""
    return struct.pack(">bI", 0, schema_id) + payload


def send(
    cluster: Cluster, topic: str, messages: list[tuple[bytes | None, bytes | None]]
) -> list[KafkaError | None]:
    """Produce each ``(key, value)`` with confluent-kafka, one flush each (so one
    batch each); return the delivery errors."""
    errors: list[KafkaError | None] = []
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "retries": 0, "log_level": 2}
    )
    for key, value in messages:
        producer.produce(
            topic, value, key=key, on_delivery=lambda e, m: errors.append(e)
        )
        producer.flush(30)
    assert len(errors) == len(messages)
    return errors


def produce(cluster: Cluster, topic: str, records: list[Any], **kw: Any) -> Any:
    """One Produce of one batch of ``records``; the partition's answer."""
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=30) as conn:
        batch = encode_batch(records, **kw)
        response = wire.produce(conn, topic, {0: batch}, cluster=cluster)
    return response.responses[0].partition_responses[0]


def values(cluster: Cluster, topic: str) -> list[bytes | None]:
    return [r.value for r in cluster.records(topic)]


def code(error: KafkaError | None) -> int | None:
    return None if error is None else error.code()


# ------------------------------------------------------------------ values


def test_avro_serializer_values_are_accepted(
    cluster: Cluster, registry: SchemaRegistryClient, topic: Callable[..., str]
) -> None:
    name = topic(VALUE_ON)
    ser = serializer(registry)
    ctx = SerializationContext(name, MessageField.VALUE)
    good = [ser({"name": n}, ctx) for n in ("ann", "bob")]
    assert send(cluster, name, [(None, v) for v in good]) == [None, None]
    assert values(cluster, name) == good


def test_unregistered_id_and_plain_bytes_are_refused_nothing_stored(
    cluster: Cluster, registry: SchemaRegistryClient, topic: Callable[..., str]
) -> None:
    name = topic(VALUE_ON)
    good = serializer(registry)(
        {"name": "ann"}, SerializationContext(name, MessageField.VALUE)
    )
    errors = send(cluster, name, [(None, framed(999_999)), (None, b"plain json")])
    assert [code(e) for e in errors] == [KafkaError.INVALID_RECORD] * 2
    assert values(cluster, name) == []
    # one batch: the good, the unregistered, a tombstone, a plain value
    answer = produce(
        cluster,
        name,
        [(b"k", good), (b"k", framed(999_999)), (b"k", None), (b"k", b'{"a": 1}')],
    )
    assert answer.error_code == ErrorCode.INVALID_RECORD
    assert [e.batch_index for e in answer.record_errors] == [1, 3]
    first, plain = (e.batch_index_error_message for e in answer.record_errors)
    assert f"{name}-0" in first and "schema id 999999 is not registered" in first
    assert "starts with byte 0x7b" in plain
    assert "2 records failed schema validation" in answer.error_message
    assert values(cluster, name) == []
    # the good record and the tombstone alone are stored
    assert produce(cluster, name, [(b"k", good), (b"k", None)]).error_code == 0
    assert values(cluster, name) == [good, None]


def test_an_id_registered_under_another_subject_is_refused(
    cluster: Cluster, registry: SchemaRegistryClient, topic: Callable[..., str]
) -> None:
    name, other = topic(VALUE_ON), topic()
    # registered under "<other>-value" only (a schema no other subject has)
    ser = serializer(registry, ORDER.replace("Order", f"Order{other}"))
    value = ser({"id": 1}, SerializationContext(other, MessageField.VALUE))
    answer = produce(cluster, name, [(None, value)])
    assert answer.error_code == ErrorCode.INVALID_RECORD
    message = answer.record_errors[0].batch_index_error_message
    assert f"not registered under subject '{name}-value'" in message
    assert f"'{other}-value'" in message
    assert values(cluster, name) == []


def test_a_short_value_is_refused(cluster: Cluster, topic: Callable[..., str]) -> None:
    name = topic(VALUE_ON)
    answer = produce(cluster, name, [(None, b"\x00\x00\x01")])
    assert answer.error_code == ErrorCode.INVALID_RECORD
    assert (
        "of 3 bytes is too short" in answer.record_errors[0].batch_index_error_message
    )


def test_a_large_compressed_batch_is_checked_off_the_loop(
    cluster: Cluster, registry: SchemaRegistryClient, topic: Callable[..., str]
) -> None:
    """Past the inline bounds the walk (and its framing) runs on the validation
    threads; the result is the same."""
    name = topic(VALUE_ON)
    ser = serializer(registry)
    ctx = SerializationContext(name, MessageField.VALUE)
    good = [ser({"name": "x" * 100 + str(i)}, ctx) for i in range(3000)]
    bad = list(good)
    bad[2345] = b"plain"
    answer = produce(
        cluster, name, [(None, v) for v in bad], compression=Compression.GZIP
    )
    assert answer.error_code == ErrorCode.INVALID_RECORD
    assert [e.batch_index for e in answer.record_errors] == [2345]
    answer = produce(
        cluster, name, [(None, v) for v in good], compression=Compression.GZIP
    )
    assert answer.error_code == 0
    assert len(values(cluster, name)) == 3000


# ------------------------------------------------------------------ keys


def test_key_validation(
    cluster: Cluster, registry: SchemaRegistryClient, topic: Callable[..., str]
) -> None:
    name = topic({"confluent.key.schema.validation": "true"})
    key = serializer(registry)(
        {"name": "k"}, SerializationContext(name, MessageField.KEY)
    )
    assert (
        registry.get_latest_version(f"{name}-key").schema_id
        == struct.unpack(">I", key[1:5])[0]
    )
    errors = send(
        cluster,
        name,
        [(key, b"any value"), (None, b"null key passes"), (b"plain", b"v")],
    )
    assert [code(e) for e in errors] == [None, None, KafkaError.INVALID_RECORD]
    # an id registered for the values (only) does not do for the keys
    value = serializer(registry, ORDER.replace("Order", f"Order{name}"))(
        {"id": 1}, SerializationContext(name, MessageField.VALUE)
    )
    answer = produce(cluster, name, [(value, b"v")])
    assert answer.error_code == ErrorCode.INVALID_RECORD
    assert f"subject '{name}-key'" in answer.record_errors[0].batch_index_error_message
    assert values(cluster, name) == [b"any value", b"null key passes"]


# ------------------------------------------------------------------ strategies


def test_record_name_strategy(
    cluster: Cluster, registry: SchemaRegistryClient, topic: Callable[..., str]
) -> None:
    strategy = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
    name = topic({**VALUE_ON, "confluent.value.subject.name.strategy": strategy})
    from confluent_kafka.schema_registry import record_subject_name_strategy

    schema = ORDER.replace("Order", f"Order{name}")
    ctx = SerializationContext(name, MessageField.VALUE)
    by_record = serializer(
        registry, schema, **{"subject.name.strategy": record_subject_name_strategy}
    )({"id": 7}, ctx)
    assert registry.get_latest_version(f"kproto.test.Order{name}")
    assert produce(cluster, name, [(None, by_record)]).error_code == 0
    # the same schema also registered under "<topic>-value": the same id, which
    # the record's subject has: accepted
    by_topic = serializer(registry, schema)({"id": 8}, ctx)
    assert by_topic[:5] == by_record[:5]
    assert produce(cluster, name, [(None, by_topic)]).error_code == 0
    # a schema registered under another subject only is refused
    user_id = registry.register_schema(
        f"{name}-elsewhere", Schema(USER.replace("User", f"User{name}"), "AVRO")
    )
    answer = produce(cluster, name, [(None, framed(user_id))])
    assert answer.error_code == ErrorCode.INVALID_RECORD
    message = answer.record_errors[0].batch_index_error_message
    assert f"subject 'kproto.test.User{name}' (RecordNameStrategy" in message
    assert len(values(cluster, name)) == 2


def test_topic_record_name_strategy(
    cluster: Cluster, registry: SchemaRegistryClient, topic: Callable[..., str]
) -> None:
    strategy = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
    name = topic({**VALUE_ON, "confluent.value.subject.name.strategy": strategy})
    from confluent_kafka.schema_registry import topic_record_subject_name_strategy

    ctx = SerializationContext(name, MessageField.VALUE)
    value = serializer(
        registry,
        **{"subject.name.strategy": topic_record_subject_name_strategy},
    )({"name": "t"}, ctx)
    assert registry.get_latest_version(f"{name}-kproto.test.User")
    assert produce(cluster, name, [(None, value)]).error_code == 0


# ------------------------------------------------------------------ configs


def test_describe_and_alter_on_a_live_topic(
    cluster: Cluster, registry: SchemaRegistryClient, topic: Callable[..., str]
) -> None:
    name = topic()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)

    def described() -> dict[str, Any]:
        entries = admin.describe_configs([resource])[resource].result(30)
        return {k: v for k, v in entries.items() if k.startswith("confluent.")}

    entries = described()
    assert entries["confluent.value.schema.validation"].value == "false"
    assert entries["confluent.key.schema.validation"].value == "false"
    assert entries["confluent.value.subject.name.strategy"].value == (
        "io.confluent.kafka.serializers.subject.TopicNameStrategy"
    )
    assert entries["confluent.value.schema.validation"].is_default
    assert send(cluster, name, [(None, b"plain")]) == [None]  # off by default

    def alter(value: str) -> None:
        entry = ConfigEntry(
            "confluent.value.schema.validation",
            value,
            incremental_operation=AlterConfigOpType.SET,
        )
        target = ConfigResource(
            ConfigResource.Type.TOPIC, name, incremental_configs=[entry]
        )
        admin.incremental_alter_configs([target])[target].result(30)

    alter("true")
    assert described()["confluent.value.schema.validation"].value == "true"
    assert not described()["confluent.value.schema.validation"].is_default
    assert [code(e) for e in send(cluster, name, [(None, b"plain")])] == [
        KafkaError.INVALID_RECORD
    ]
    value = serializer(registry)(
        {"name": "a"}, SerializationContext(name, MessageField.VALUE)
    )
    assert send(cluster, name, [(None, value)]) == [None]
    alter("false")
    assert send(cluster, name, [(None, b"plain again")]) == [None]
    assert values(cluster, name) == [b"plain", value, b"plain again"]


def test_a_bad_strategy_is_an_invalid_config(
    cluster: Cluster, topic: Callable[..., str]
) -> None:
    from kproto.broker import TopicError

    name = topic()
    with pytest.raises(TopicError, match="subject.name.strategy"):
        cluster.alter_topic_configs(
            name, {"confluent.value.subject.name.strategy": "NoSuchStrategy"}
        )


def test_without_a_registry_a_validated_topic_refuses_produce() -> None:
    with Cluster(nodes=1) as cluster:
        cluster.create_topic("t", 1, configs=VALUE_ON)
        cluster.create_topic("open", 1)
        answer = produce(cluster, "t", [(None, framed(1))])
        assert answer.error_code == ErrorCode.INVALID_RECORD
        assert "no schema registry" in answer.error_message
        assert "confluent.value.schema.validation" in answer.error_message
        assert values(cluster, "t") == []
        assert produce(cluster, "open", [(None, b"x")]).error_code == 0


# ------------------------------------------------------------------ GUID headers


def test_schema_guid_headers(
    cluster: Cluster, registry: SchemaRegistryClient, topic: Callable[..., str]
) -> None:
    """confluent-kafka's ``header_schema_id_serializer``: the GUID in the
    ``__value_schema_id`` header, the payload bare."""
    from confluent_kafka.schema_registry import header_schema_id_serializer

    name = topic(VALUE_ON)
    headers: list[tuple[str, bytes]] = []
    ctx = SerializationContext(name, MessageField.VALUE, headers)
    value = serializer(
        registry, **{"schema.id.serializer": header_schema_id_serializer}
    )({"name": "g"}, ctx)
    assert value == b"\x02g" and headers[0][0] == "__value_schema_id"
    answer = produce(cluster, name, [(None, value, headers)])
    assert answer.error_code == 0, answer
    # an unknown GUID, and a header that is not magic 1 + 16 bytes
    unknown = [("__value_schema_id", b"\x01" + bytes(16))]
    short = [("__value_schema_id", b"\x01abc")]
    answer = produce(cluster, name, [(None, value, unknown), (None, value, short)])
    assert answer.error_code == ErrorCode.INVALID_RECORD
    first, second = (e.batch_index_error_message for e in answer.record_errors)
    assert "schema GUID 00000000-0000-0000-0000-000000000000 is not registered" in first
    assert "header is not magic byte 1 and a 16-byte GUID (4 bytes)" in second
    assert values(cluster, name) == [value]


def test_record_name_strategy_with_json_schema_titles(
    cluster: Cluster, registry: SchemaRegistryClient, topic: Callable[..., str]
) -> None:
    """JSON Schema's record name is its ``title``."""
    from confluent_kafka.schema_registry import record_subject_name_strategy
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    strategy = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
    name = topic({**VALUE_ON, "confluent.value.subject.name.strategy": strategy})
    schema = json.dumps(
        {
            "title": f"Point{name}",
            "type": "object",
            "properties": {"x": {"type": "integer"}},
        }
    )
    ser = JSONSerializer(
        schema, registry, conf={"subject.name.strategy": record_subject_name_strategy}
    )
    value = ser({"x": 1}, SerializationContext(name, MessageField.VALUE))
    assert registry.get_latest_version(f"Point{name}")
    assert send(cluster, name, [(None, value)]) == [None]
    untitled = registry.register_schema(
        f"{name}-value", Schema(json.dumps({"type": "object"}), "JSON")
    )
    answer = produce(cluster, name, [(None, framed(untitled, b"{}"))])
    assert answer.error_code == ErrorCode.INVALID_RECORD
    assert "has no record name, which RecordNameStrategy needs" in (
        answer.record_errors[0].batch_index_error_message
    )
