"""Schema evolution through the registry: compatibility levels enforced on register,
with confluent-kafka's client and its AvroSerializer, and verbose answers."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import requests
from confluent_kafka.schema_registry import (
    Schema,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kproto.broker import Cluster

Subject = Callable[[], str]


def user(namespace: str, *extra: dict[str, object]) -> str:
    fields: list[dict[str, object]] = [{"name": "name", "type": "string"}, *extra]
    return json.dumps(
        {"type": "record", "name": "User", "namespace": namespace, "fields": fields}
    )


@pytest.fixture
def client(registry_cluster: Cluster) -> SchemaRegistryClient:
    return SchemaRegistryClient(registry_cluster.schema_registry_config())


def test_backward_field_with_default_accepted_without_refused(
    client: SchemaRegistryClient, subject: Subject
) -> None:
    name = subject()
    ns = name.replace("-", "_")
    first = client.register_schema(name, Schema(user(ns), "AVRO"))
    with_default = user(ns, {"name": "age", "type": "int", "default": 0})
    second = client.register_schema(name, Schema(with_default, "AVRO"))
    assert second != first
    without_default = user(
        ns,
        {"name": "age", "type": "int", "default": 0},
        {"name": "email", "type": "string"},
    )
    with pytest.raises(SchemaRegistryError) as err:
        client.register_schema(name, Schema(without_default, "AVRO"))
    assert (err.value.http_status_code, err.value.error_code) == (409, 40901)
    assert "email" in err.value.error_message
    assert client.get_versions(name) == [1, 2]
    assert client.test_compatibility(name, Schema(without_default, "AVRO")) is False
    # NONE lets it through
    client.set_compatibility(name, "NONE")
    client.register_schema(name, Schema(without_default, "AVRO"))
    assert client.get_versions(name) == [1, 2, 3]


def test_verbose_messages_name_the_field(
    registry_cluster: Cluster, client: SchemaRegistryClient, subject: Subject
) -> None:
    name = subject()
    ns = name.replace("-", "_")
    client.register_schema(name, Schema(user(ns), "AVRO"))
    bad = user(ns, {"name": "zip", "type": "string"})
    response = requests.post(
        f"{registry_cluster.schema_registry_url}/compatibility/subjects/{name}/versions/latest",
        params={"verbose": "true"},
        json={"schema": bad},
        timeout=10,
    )
    body = response.json()
    assert body["is_compatible"] is False
    assert any("zip" in message for message in body["messages"])


def test_transitive_checks_every_version(
    client: SchemaRegistryClient, subject: Subject
) -> None:
    name = subject()
    ns = name.replace("-", "_")
    client.set_compatibility(name, "BACKWARD_TRANSITIVE")
    client.register_schema(name, Schema(user(ns, {"name": "a", "type": "int"}), "AVRO"))
    client.register_schema(name, Schema(user(ns), "AVRO"))  # drops a: backward
    # a as a string with a default reads v2's data, but not v1's int a
    again = user(ns, {"name": "a", "type": "string", "default": "x"})
    with pytest.raises(SchemaRegistryError) as err:
        client.register_schema(name, Schema(again, "AVRO"))
    assert err.value.error_code == 40901
    assert client.get_versions(name) == [1, 2]
    client.set_compatibility(name, "BACKWARD")  # only the latest counts now
    client.register_schema(name, Schema(again, "AVRO"))
    assert client.get_versions(name) == [1, 2, 3]


def test_avro_serializer_evolution(
    client: SchemaRegistryClient, subject: Subject
) -> None:
    topic = subject().removesuffix("-value")
    ns = topic.replace("-", "_")
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1 = AvroSerializer(client, user(ns))
    old_bytes = v1({"name": "ada"}, ctx)
    assert old_bytes is not None and old_bytes[0] == 0
    v2_schema = user(ns, {"name": "age", "type": "int", "default": 7})
    v2 = AvroSerializer(client, v2_schema)
    new_bytes = v2({"name": "bob", "age": 3}, ctx)
    assert new_bytes is not None
    # old data read with the new schema: the default fills the new field
    reader = AvroDeserializer(client, v2_schema)
    assert reader(old_bytes, ctx) == {"name": "ada", "age": 7}
    assert reader(new_bytes, ctx) == {"name": "bob", "age": 3}
    v3 = AvroSerializer(
        client,
        user(
            ns,
            {"name": "age", "type": "int", "default": 7},
            {"name": "nick", "type": "string"},
        ),
    )
    with pytest.raises(Exception) as err:
        v3({"name": "cy", "age": 1, "nick": "c"}, ctx)
    assert "nick" in str(err.value)
    assert client.get_versions(f"{topic}-value") == [1, 2]


def test_avro_serializer_guid_in_headers(
    registry_cluster: Cluster, client: SchemaRegistryClient, subject: Subject
) -> None:
    from confluent_kafka.schema_registry import (
        dual_schema_id_deserializer,
        header_schema_id_serializer,
    )

    topic = subject().removesuffix("-value")
    schema = user(topic.replace("-", "_"))
    headers: list[tuple[str, bytes]] = []
    ctx = SerializationContext(topic, MessageField.VALUE, headers)
    serializer = AvroSerializer(
        client, schema, conf={"schema.id.serializer": header_schema_id_serializer}
    )
    # (over 5 bytes: confluent's deserializer checks a length before the headers)
    data = serializer({"name": "ada lovelace"}, ctx)
    assert data is not None and data[:1] != b"\0"  # no prefix: the GUID is a header
    ((name, guid),) = headers
    assert name == "__value_schema_id" and len(guid) == 17
    reader = AvroDeserializer(  # a new client: the schema comes by GUID from the server
        SchemaRegistryClient(registry_cluster.schema_registry_config()),
        conf={"schema.id.deserializer": dual_schema_id_deserializer},
    )
    assert reader(data, ctx) == {"name": "ada lovelace"}
