"""confluent-kafka's SchemaRegistryClient against Cluster(schema_registry=True)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import requests
from confluent_kafka.schema_registry import (
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryError,
)

from kproto.broker import Cluster

Subject = Callable[[], str]
Fresh = Callable[[], SchemaRegistryClient]
Rest = Callable[..., Any]

USER_V1 = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "kproto.test",
        "fields": [{"name": "name", "type": "string"}],
    }
)
USER_V2 = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "kproto.test",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "age", "type": "int", "default": 0},
        ],
    }
)


@pytest.fixture
def client(registry_cluster: Cluster) -> SchemaRegistryClient:
    return SchemaRegistryClient(registry_cluster.schema_registry_config())


@pytest.fixture
def fresh(registry_cluster: Cluster) -> Callable[[], SchemaRegistryClient]:
    """A new client each call: nothing cached, every answer from the server."""
    return lambda: SchemaRegistryClient(registry_cluster.schema_registry_config())


@pytest.fixture
def rest(registry_cluster: Cluster) -> Callable[..., Any]:
    """GET a path of the registry; return the JSON body."""

    def get(path: str, params: dict[str, str] | None = None) -> Any:
        response = requests.get(
            f"{registry_cluster.schema_registry_url}/{path}", params=params, timeout=10
        )
        response.raise_for_status()
        return response.json()

    return get


def test_register_and_read_back(
    client: SchemaRegistryClient, subject: Subject, fresh: Fresh
) -> None:
    name = subject()
    schema_id = client.register_schema(name, Schema(USER_V1, "AVRO"))
    assert schema_id >= 1
    other = fresh()
    got = other.get_schema(schema_id)
    assert json.loads(got.schema_str) == json.loads(USER_V1)
    assert got.schema_type == "AVRO"
    latest = other.get_latest_version(name)
    assert (latest.schema_id, latest.version, latest.subject) == (schema_id, 1, name)
    assert other.get_version(name, 1).schema_id == schema_id
    assert other.get_versions(name) == [1]
    assert name in other.get_subjects()
    assert other.get_schema_types() == ["JSON", "PROTOBUF", "AVRO"]


def test_same_schema_same_id_new_schema_next_id(
    client: SchemaRegistryClient, subject: Subject
) -> None:
    a, b = subject(), subject()
    own = USER_V1.replace("kproto.test", "kproto.same_id")  # no other test has it
    first = client.register_schema(a, Schema(own, "AVRO"))
    assert client.register_schema(b, Schema(own, "AVRO")) == first
    assert client.register_schema(a, Schema(own, "AVRO")) == first
    second = client.register_schema(a, Schema(USER_V2, "AVRO"))
    assert second > first
    assert client.get_versions(a) == [1, 2]
    assert client.get_versions(b) == [1]
    assert sorted(client.get_subjects_by_schema_id(first)) == sorted([a, b])
    pairs = {(v.subject, v.version) for v in client.get_schema_versions(first)}
    assert pairs == {(a, 1), (b, 1)}


def test_lookup(client: SchemaRegistryClient, subject: Subject, fresh: Fresh) -> None:
    name = subject()
    schema_id = client.register_schema(name, Schema(USER_V1, "AVRO"))
    client.register_schema(name, Schema(USER_V2, "AVRO"))
    # a differently spaced text of version 1 finds it by its canonical form
    spaced = json.dumps(json.loads(USER_V1), indent=4)
    found = fresh().lookup_schema(name, Schema(spaced, "AVRO"))
    assert (found.schema_id, found.version, found.subject) == (schema_id, 1, name)
    with pytest.raises(SchemaRegistryError) as err:
        client.lookup_schema(name, Schema('{"type":"long"}', "AVRO"))
    assert err.value.error_code == 40403
    with pytest.raises(SchemaRegistryError) as err:
        client.lookup_schema(subject(), Schema(USER_V1, "AVRO"))
    assert err.value.error_code == 40401


def test_delete_version_soft_then_permanent(
    client: SchemaRegistryClient, subject: Subject
) -> None:
    name = subject()
    client.register_schema(name, Schema(USER_V1, "AVRO"))
    client.register_schema(name, Schema(USER_V2, "AVRO"))
    with pytest.raises(SchemaRegistryError) as err:
        client.delete_version(name, 2, permanent=True)
    assert err.value.error_code == 40407
    assert client.delete_version(name, 2) == 2
    assert client.get_versions(name) == [1]
    with pytest.raises(SchemaRegistryError) as err:
        client.delete_version(name, 2)
    assert err.value.error_code == 40406
    assert client.get_versions(name, deleted=True) == [1, 2]
    assert client.delete_version(name, 2, permanent=True) == 2
    assert client.get_versions(name, deleted=True) == [1]
    with pytest.raises(SchemaRegistryError) as err:
        client.get_version(name, 2)
    assert err.value.error_code == 40402


def test_delete_subject_soft_then_permanent(
    client: SchemaRegistryClient, subject: Subject, fresh: Fresh
) -> None:
    name = subject()
    schema_id = client.register_schema(name, Schema(USER_V1, "AVRO"))
    client.register_schema(name, Schema(USER_V2, "AVRO"))
    with pytest.raises(SchemaRegistryError) as err:
        client.delete_subject(name, permanent=True)
    assert err.value.error_code == 40405
    assert client.delete_subject(name) == [1, 2]
    assert name not in client.get_subjects()
    assert name in client.get_subjects(deleted=True)
    assert name in client.get_subjects(deleted_only=True)
    with pytest.raises(SchemaRegistryError) as err:
        client.get_latest_version(name)
    assert err.value.error_code == 40401
    with pytest.raises(SchemaRegistryError) as err:
        client.delete_subject(name)
    assert err.value.error_code == 40404
    # a soft-deleted schema still decodes old data by id
    other = fresh()
    assert json.loads(other.get_schema(schema_id).schema_str) == json.loads(USER_V1)
    assert client.delete_subject(name, permanent=True) == [1, 2]
    assert name not in client.get_subjects(deleted=True)
    # re-registered after the permanent delete: versions start again at 1
    client.register_schema(name, Schema(USER_V1, "AVRO"))
    assert client.get_versions(name) == [1]


def test_config_global_and_per_subject(
    client: SchemaRegistryClient, subject: Subject, rest: Rest
) -> None:
    name = subject()
    client.register_schema(name, Schema(USER_V1, "AVRO"))
    assert client.get_compatibility() == "BACKWARD"
    with pytest.raises(SchemaRegistryError) as err:
        client.get_compatibility(name)
    assert err.value.error_code == 40408
    assert client.set_compatibility(name, "FULL_TRANSITIVE") == {
        "compatibility": "FULL_TRANSITIVE"
    }
    assert client.get_compatibility(name) == "FULL_TRANSITIVE"
    assert client.get_config(name).compatibility_level.value == "FULL_TRANSITIVE"
    deleted = client.delete_config(name)
    assert deleted.compatibility_level.value == "FULL_TRANSITIVE"
    assert rest(f"config/{name}", {"defaultToGlobal": "true"}) == {
        "compatibilityLevel": "BACKWARD"
    }
    with pytest.raises(SchemaRegistryError) as err:
        client.set_compatibility(name, "SIDEWAYS")
    assert err.value.error_code == 42203


def test_mode_and_read_only(client: SchemaRegistryClient, subject: Subject) -> None:
    name = subject()
    client.register_schema(name, Schema(USER_V1, "AVRO"))
    assert client.update_mode(name, "READONLY") == "READONLY"
    assert client.get_mode(name) == "READONLY"
    with pytest.raises(SchemaRegistryError) as err:
        client.register_schema(name, Schema(USER_V2, "AVRO"))
    assert err.value.error_code == 42205
    with pytest.raises(SchemaRegistryError) as err:
        client.delete_subject(name)
    assert err.value.error_code == 42205
    assert client.delete_mode(name) == "READONLY"
    client.register_schema(name, Schema(USER_V2, "AVRO"))
    with pytest.raises(SchemaRegistryError) as err:
        client.update_mode(name, "SIDEWAYS")
    assert err.value.error_code == 42204
    # IMPORT is refused over a subject with schemas
    with pytest.raises(SchemaRegistryError) as err:
        client.update_mode(name, "IMPORT")
    assert err.value.error_code == 42205


def test_test_compatibility(client: SchemaRegistryClient, subject: Subject) -> None:
    name = subject()
    new = Schema(USER_V2, "AVRO")
    assert client.test_compatibility(name, new) is True  # no versions yet
    client.register_schema(name, Schema(USER_V1, "AVRO"))
    assert client.test_compatibility(name, new) is True
    assert client.test_compatibility(name, new, version=1) is True
    assert client.test_compatibility_all_versions(name, new) is True
    with pytest.raises(SchemaRegistryError) as err:
        client.test_compatibility(name, new, version=7)
    assert err.value.error_code == 40402


def test_references(
    client: SchemaRegistryClient, subject: Subject, fresh: Fresh, rest: Rest
) -> None:
    address, user = subject(), subject()
    address_schema = json.dumps(
        {
            "type": "record",
            "name": "Address",
            "namespace": "kproto.test",
            "fields": [{"name": "city", "type": "string"}],
        }
    )
    client.register_schema(address, Schema(address_schema, "AVRO"))
    user_schema = json.dumps(
        {
            "type": "record",
            "name": "Person",
            "namespace": "kproto.test",
            "fields": [{"name": "home", "type": "kproto.test.Address"}],
        }
    )
    ref = SchemaReference("kproto.test.Address", address, 1)
    user_id = client.register_schema(user, Schema(user_schema, "AVRO", [ref]))
    got = fresh().get_schema(user_id)
    assert [(r.name, r.subject, r.version) for r in got.references] == [
        ("kproto.test.Address", address, 1)
    ]
    assert rest(f"subjects/{address}/versions/1/referencedby") == [user_id]
    with pytest.raises(SchemaRegistryError) as err:
        client.delete_version(address, 1)
    assert err.value.error_code == 42206
    with pytest.raises(SchemaRegistryError) as err:
        client.delete_subject(address)
    assert err.value.error_code == 42206
    # a reference to a version that does not exist is an invalid schema
    bad = SchemaReference("kproto.test.Address", address, 9)
    with pytest.raises(SchemaRegistryError) as err:
        client.register_schema(subject(), Schema(user_schema, "AVRO", [bad]))
    assert err.value.error_code == 42201
    # once the referrer is gone, the referenced version may go
    client.delete_subject(user)
    assert client.delete_version(address, 1) == 1


def test_json_and_protobuf_types(
    client: SchemaRegistryClient, subject: Subject, fresh: Fresh
) -> None:
    json_schema = '{"type": "object", "properties": {"a": {"type": "integer"}}}'
    json_id = client.register_schema(subject(), Schema(json_schema, "JSON"))
    proto = 'syntax = "proto3";\npackage kproto.test;\n\nmessage Pet {\n  string name = 1;\n}\n'
    proto_id = client.register_schema(subject(), Schema(proto, "PROTOBUF"))
    other = fresh()
    assert other.get_schema(json_id).schema_type == "JSON"
    got = other.get_schema(proto_id)
    assert got.schema_type == "PROTOBUF"
    assert "message Pet" in got.schema_str


def test_invalid_schema(client: SchemaRegistryClient, subject: Subject) -> None:
    with pytest.raises(SchemaRegistryError) as err:
        client.register_schema(subject(), Schema("{not json", "AVRO"))
    assert err.value.error_code == 42201
    assert err.value.http_status_code == 422
