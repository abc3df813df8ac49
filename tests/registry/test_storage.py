"""The registry in ``_schemas``: what is stored, restarts, compaction, golden records."""

from __future__ import annotations

import json
from pathlib import Path

import requests
from confluent_kafka import Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from kproto.broker import Cluster
from kproto.registry.rest import CONTENT_TYPE
from kproto.registry.schemas_topic import SCHEMAS_TOPIC

HEADERS = {"Content-Type": CONTENT_TYPE}


def register(cluster: Cluster, subject: str, schema: str) -> int:
    response = requests.post(
        f"{cluster.schema_registry_url}/subjects/{subject}/versions",
        data=json.dumps({"schema": schema}),
        headers=HEADERS,
        timeout=10,
    )
    assert response.status_code == 200, response.text
    result: int = response.json()["id"]
    return result


def get(cluster: Cluster, path: str) -> requests.Response:
    return requests.get(cluster.schema_registry_url + path, timeout=10)


def put(cluster: Cluster, path: str, body: dict[str, str]) -> None:
    response = requests.put(
        cluster.schema_registry_url + path,
        data=json.dumps(body),
        headers=HEADERS,
        timeout=10,
    )
    assert response.status_code == 200, response.text


def delete(cluster: Cluster, path: str) -> None:
    response = requests.delete(cluster.schema_registry_url + path, timeout=10)
    assert response.status_code == 200, response.text


def test_topic_created_compacted_one_partition(tmp_path: Path) -> None:
    with Cluster(data_dir=tmp_path, schema_registry=True) as cluster:
        info = cluster.state.topics[SCHEMAS_TOPIC]
        assert info.partitions == 1
        assert info.configs["cleanup.policy"] == "compact"


def test_records_written_in_confluent_shapes(tmp_path: Path) -> None:
    with Cluster(data_dir=tmp_path, schema_registry=True) as cluster:
        register(cluster, "a", '"string"')
        put(cluster, "/config", {"compatibility": "NONE"})
        put(cluster, "/mode/a", {"mode": "READONLY"})
        delete(cluster, "/mode/a")
        delete(cluster, "/subjects/a")
        delete(cluster, "/subjects/a?permanent=true")
        records = [(r.key, r.value) for r in cluster.records(SCHEMAS_TOPIC)]
    assert records == [
        (
            b'{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}',
            b'{"subject":"a","version":1,"id":1,"schemaType":"AVRO","schema":"\\"string\\"","deleted":false}',
        ),
        (b'{"keytype":"CONFIG","magic":0}', b'{"compatibilityLevel":"NONE"}'),
        (
            b'{"keytype":"MODE","subject":"a","magic":0}',
            b'{"subject":"a","mode":"READONLY"}',
        ),
        (b'{"keytype":"MODE","subject":"a","magic":0}', None),
        (
            b'{"keytype":"DELETE_SUBJECT","subject":"a","magic":0}',
            b'{"subject":"a","version":1}',
        ),
        (b'{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}', None),
        (b'{"keytype":"DELETE_SUBJECT","subject":"a","magic":0}', None),
    ]


def test_restart_keeps_ids_versions_configs(tmp_path: Path) -> None:
    with Cluster(data_dir=tmp_path, schema_registry=True) as cluster:
        ids = [
            register(
                cluster,
                f"s{i}",
                json.dumps({"type": "fixed", "name": f"F{i}", "size": i + 1}),
            )
            for i in range(5)
        ]
        assert (
            register(
                cluster, "again", json.dumps({"type": "fixed", "name": "F2", "size": 3})
            )
            == ids[2]
        )
        put(cluster, "/config/s1", {"compatibility": "FULL"})
        put(cluster, "/mode", {"mode": "READONLY"})
        put(cluster, "/mode", {"mode": "READWRITE"})
        delete(cluster, "/subjects/s3")
        delete(cluster, "/subjects/s4")
        delete(cluster, "/subjects/s4?permanent=true")
    with Cluster(data_dir=tmp_path, schema_registry=True) as cluster:
        client = SchemaRegistryClient(cluster.schema_registry_config())
        assert client.get_subjects() == ["again", "s0", "s1", "s2"]
        assert client.get_subjects(deleted=True) == ["again", "s0", "s1", "s2", "s3"]
        for i in range(3):
            assert client.get_latest_version(f"s{i}").schema_id == ids[i]
        assert client.get_compatibility("s1") == "FULL"
        assert get(cluster, "/mode").json() == {"mode": "READWRITE"}
        # the next id follows the largest stored one, even a deleted subject's
        assert client.register_schema("new", Schema('"boolean"', "AVRO")) == ids[-1] + 1
        assert client.get_schema(ids[3]).schema_str  # soft-deleted: still by id
        assert get(cluster, f"/schemas/ids/{ids[4]}").status_code == 404  # permanent


def test_restart_after_compaction(tmp_path: Path) -> None:
    with Cluster(
        data_dir=tmp_path, schema_registry=True, segment_bytes=1024
    ) as cluster:
        for level in ("FULL", "NONE", "FORWARD", "BACKWARD_TRANSITIVE") * 10:
            put(cluster, "/config", {"compatibility": level})
        first = register(cluster, "x", '"int"')
        before = len(cluster.records(SCHEMAS_TOPIC))
        cluster.compact(SCHEMAS_TOPIC, force=True)
        after = len(cluster.records(SCHEMAS_TOPIC))
        assert after < before
    with Cluster(data_dir=tmp_path, schema_registry=True) as cluster:
        assert get(cluster, "/config").json() == {
            "compatibilityLevel": "BACKWARD_TRANSITIVE"
        }
        assert get(cluster, "/subjects/x/versions/1").json()["id"] == first


# A _schemas topic as Confluent Schema Registry writes it (from Confluent's
# documented record formats; schemaType left out for AVRO, fields this registry
# does not know, a NOOP, a CONTEXT key it skips, a global config without subject).
GOLDEN_SCHEMAS = [
    (b'{"keytype":"NOOP","magic":0}', None),
    (b'{"keytype":"CONFIG","magic":0}', b'{"compatibilityLevel":"FULL"}'),
    (
        b'{"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}',
        b'{"subject":"orders-value","version":1,"id":21,"md5":"aGVsbG8=",'
        b'"schema":"{\\"type\\":\\"record\\",\\"name\\":\\"Order\\",\\"fields\\":[{\\"name\\":\\"id\\",\\"type\\":\\"long\\"}]}","deleted":false}',
    ),
    (
        b'{"keytype":"SCHEMA","subject":"common","version":1,"magic":1}',
        b'{"subject":"common","version":1,"id":22,"schemaType":"PROTOBUF",'
        b'"schema":"syntax = \\"proto3\\";\\nmessage Money { int64 units = 1; }\\n","deleted":false}',
    ),
    (
        b'{"keytype":"SCHEMA","subject":"payments-value","version":1,"magic":1}',
        b'{"subject":"payments-value","version":1,"id":23,"schemaType":"PROTOBUF",'
        b'"references":[{"name":"common.proto","subject":"common","version":1}],'
        b'"schema":"syntax = \\"proto3\\";\\nimport \\"common.proto\\";\\nmessage Payment { Money amount = 1; }\\n","deleted":false}',
    ),
    (b'{"keytype":"CONTEXT","tenant":"default","context":".","magic":0}', b"{}"),
    (
        b'{"keytype":"CONFIG","subject":"orders-value","magic":0}',
        b'{"subject":"orders-value","compatibilityLevel":"NONE"}',
    ),
    (
        b'{"keytype":"MODE","subject":"payments-value","magic":0}',
        b'{"subject":"payments-value","mode":"READONLY"}',
    ),
    (
        b'{"keytype":"SCHEMA","subject":"old-value","version":1,"magic":1}',
        b'{"subject":"old-value","version":1,"id":20,"schema":"\\"string\\"","deleted":false}',
    ),
    (
        b'{"keytype":"DELETE_SUBJECT","subject":"old-value","magic":0}',
        b'{"subject":"old-value","version":1}',
    ),
    (b"not json at all", b"{}"),
]


def test_golden_confluent_records_load(tmp_path: Path) -> None:
    with Cluster(data_dir=tmp_path) as cluster:
        cluster.create_topic(SCHEMAS_TOPIC, 1, configs={"cleanup.policy": "compact"})
        # written by a Kafka producer, as Confluent's KafkaStore writes them
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        for key, value in GOLDEN_SCHEMAS:
            producer.produce(SCHEMAS_TOPIC, key=key, value=value)
        assert producer.flush(10) == 0
    with Cluster(data_dir=tmp_path, schema_registry=True) as cluster:
        client = SchemaRegistryClient(cluster.schema_registry_config())
        assert client.get_subjects() == ["common", "orders-value", "payments-value"]
        assert client.get_subjects(deleted=True) == [
            "common",
            "old-value",
            "orders-value",
            "payments-value",
        ]
        order = client.get_latest_version("orders-value")
        assert (order.schema_id, order.schema.schema_type) == (21, "AVRO")
        payment = client.get_schema(23)
        assert payment.schema_type == "PROTOBUF"
        assert [(r.name, r.subject, r.version) for r in payment.references] == [
            ("common.proto", "common", 1)
        ]
        assert get(cluster, "/subjects/common/versions/1/referencedby").json() == [23]
        assert client.get_compatibility() == "FULL"
        assert client.get_compatibility("orders-value") == "NONE"
        assert client.get_mode("payments-value") == "READONLY"
        assert client.register_schema("fresh", Schema('"double"', "AVRO")) == 24


def test_no_topic_no_acknowledgement(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient

    with Cluster(data_dir=tmp_path, schema_registry=True) as cluster:
        register(cluster, "kept", '"string"')
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        for future in admin.delete_topics([SCHEMAS_TOPIC]).values():
            future.result(timeout=10)
        response = requests.post(
            f"{cluster.schema_registry_url}/subjects/lost/versions",
            data=json.dumps({"schema": '"int"'}),
            headers=HEADERS,
            timeout=10,
        )
        assert response.status_code == 500
        assert response.json()["error_code"] == 50001
        # nothing of the refused registration is visible
        assert get(cluster, "/subjects").json() == ["kept"]
