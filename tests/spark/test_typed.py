"""Typed ``key`` / ``value`` columns (``keyFormat`` / ``valueFormat``) of the
``kproto-kafka`` and ``kproto-segments`` sources against the in-process broker and
its Schema Registry, checked against confluent-kafka's serializers.

One cluster (with its registry) for the module; each test uses its own topics.
"""

from __future__ import annotations

import datetime
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kproto.broker import Cluster
from kproto.records import encode_batch
from kproto.spark import KafkaDataSource, SegmentDataSource
from tests.spark.streams import read_stream

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import (  # noqa: E402
    AvroDeserializer,
    AvroSerializer,
)
from confluent_kafka.serialization import (  # noqa: E402
    MessageField,
    SerializationContext,
    StringSerializer,
)

SIDE: dict[str, Any] = {"type": "enum", "name": "Side", "symbols": ["BUY", "SELL"]}
V1: dict[str, Any] = {
    "type": "record",
    "name": "Trade",
    "namespace": "kproto.test",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "symbol", "type": "string"},
        {"name": "side", "type": SIDE},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
V2: dict[str, Any] = {
    **V1,
    "fields": [*V1["fields"], {"name": "qty", "type": "int", "default": 1}],
}
T0 = datetime.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.UTC)


@pytest.fixture(scope="module")
def cluster(spark: SparkSession) -> Iterator[Cluster]:
    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(SegmentDataSource)
    with Cluster(nodes=1, schema_registry=True) as c:
        yield c


def _trade(i: int, v2: bool = False) -> dict[str, Any]:
    t = {
        "id": i,
        "symbol": f"S{i % 7}",
        "side": "BUY" if i % 2 else "SELL",
        "ts": T0 + datetime.timedelta(seconds=i),
        "note": None if i % 3 else f"n{i}",
        "tags": [f"t{j}" for j in range(i % 3)],
    }
    if v2:
        t["qty"] = i * 10
    return t


def _produce(
    cluster: Cluster, topic: str, values: list[bytes | None], keys: list[Any]
) -> None:
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for k, v in zip(keys, values, strict=True):
        producer.produce(topic, v, key=k)
    assert producer.flush(30) == 0


def _reader(spark: SparkSession, cluster: Cluster, topic: str, **options: str) -> Any:
    r = (
        spark.read.format("kproto-kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("subscribe", topic)
        .option("schemaRegistryUrl", cluster.schema_registry_url)
    )
    for k, v in options.items():
        r = r.option(k, v)
    return r


def _avro_stream(spark: SparkSession, cluster: Cluster, topic: str) -> Any:
    """A stream of ``topic`` from its start, values read as Avro through the
    cluster's schema registry."""
    return read_stream(
        spark,
        cluster.bootstrap_servers,
        subscribe=topic,
        valueFormat="avro",
        schemaRegistryUrl=cluster.schema_registry_url,
    )


def _write(df: Any, cluster: Cluster, topic: str, **options: str) -> None:
    """Append ``df`` to ``topic`` through the kproto-kafka sink, with the cluster's
    schema registry and ``options``."""
    w = (
        df.write.format("kproto-kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("topic", topic)
        .option("schemaRegistryUrl", cluster.schema_registry_url)
    )
    for k, v in options.items():
        w = w.option(k, v)
    w.mode("append").save()


def _plain(value: Any) -> Any:
    """Spark's Row values and confluent's dicts in one shape (naive UTC times)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.UTC).replace(tzinfo=None)
    return value


def _values(df: DataFrame) -> list[Any]:
    rows = df.orderBy("partition", "offset").collect()
    return [_plain(r.asDict(recursive=True)["value"]) for r in rows]


def test_avro_read_equals_confluent_deserializer_across_two_versions(
    spark: SparkSession, cluster: Cluster
) -> None:
    topic = "trades"
    cluster.create_topic(topic, 1)
    sr = SchemaRegistryClient({"url": cluster.schema_registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1 = AvroSerializer(sr, json.dumps(V1))
    v2 = AvroSerializer(sr, json.dumps(V2))  # a field added with a default
    values = [v1(_trade(i), ctx) for i in range(15)]
    values += [v2(_trade(i, v2=True), ctx) for i in range(15, 30)]
    keys = [StringSerializer()(f"k{i}") for i in range(30)]
    _produce(cluster, topic, values, keys)

    df = _reader(spark, cluster, topic, keyFormat="string", valueFormat="avro").load()
    assert df.schema["value"].dataType.fieldNames() == [f["name"] for f in V2["fields"]]
    latest = AvroDeserializer(sr, json.dumps(V2))
    expected = [_plain(latest(v, ctx)) for v in values]
    assert expected[0]["qty"] == 1 and expected[29]["qty"] == 290
    assert _values(df) == expected
    assert [r.key for r in df.orderBy("offset").select("key").collect()] == [
        f"k{i}" for i in range(30)
    ]
    # an older version as the reader schema: the v2 records lose qty
    df1 = _reader(
        spark, cluster, topic, valueFormat="avro", valueSchemaVersion="1"
    ).load()
    assert _values(df1) == [
        {k: v for k, v in e.items() if k != "qty"} for e in expected
    ]


def test_permissive_and_failfast_on_a_corrupt_value(
    spark: SparkSession, cluster: Cluster
) -> None:
    topic = "trades-corrupt"
    cluster.create_topic(topic, 1)
    sr = SchemaRegistryClient({"url": cluster.schema_registry_url})
    ser = AvroSerializer(sr, json.dumps(V1))
    good = ser(_trade(1), SerializationContext(topic, MessageField.VALUE))
    assert good is not None
    unknown_id = b"\0\0\0\x7f\xff" + good[5:]
    _produce(cluster, topic, [good, good[:-3], unknown_id, None], [None] * 4)
    df = _reader(spark, cluster, topic, valueFormat="avro", mode="PERMISSIVE").load()
    rows = df.orderBy("offset").select("value", "_value_error").collect()
    assert _plain(rows[0].value.asDict(recursive=True)) == _plain(_trade(1))
    assert rows[0]._value_error is None
    sid = int.from_bytes(good[1:5], "big")
    assert rows[1].value is None
    assert rows[1]._value_error.startswith(
        f"value of {topic}-0 offset 1, schema id {sid}: byte "
    )
    assert rows[2].value is None
    assert rows[2]._value_error == (
        f"value of {topic}-0 offset 2, schema id 32767: schema id not found in the registry"
    )
    assert (rows[3].value, rows[3]._value_error) == (None, None)  # a null value

    failing = _reader(spark, cluster, topic, valueFormat="avro").load()
    with pytest.raises(
        Exception, match=f"value of {topic}-0 offset 1, schema id {sid}"
    ):
        failing.collect()


def test_streaming_available_now_reads_typed_rows_exactly_once(
    spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    topic = "trades-stream"
    cluster.create_topic(topic, 2)
    sr = SchemaRegistryClient({"url": cluster.schema_registry_url})
    ser = AvroSerializer(sr, json.dumps(V1))
    ctx = SerializationContext(topic, MessageField.VALUE)
    _produce(
        cluster,
        topic,
        [ser(_trade(i), ctx) for i in range(10)],
        [b"%d" % i for i in range(10)],
    )

    def run() -> None:
        stream = _avro_stream(spark, cluster, topic).select(
            "partition", "offset", "value.id", "value.symbol"
        )
        query = (
            stream.writeStream.format("parquet")
            .option("path", str(tmp_path / "out"))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None

    run()
    _produce(
        cluster,
        topic,
        [ser(_trade(i), ctx) for i in range(10, 25)],
        [b"%d" % i for i in range(10, 25)],
    )
    run()  # resumes from the checkpoint
    out = spark.read.parquet(str(tmp_path / "out"))
    ids = sorted(r.id for r in out.select("id").collect())
    assert ids == list(range(25))  # each record once
    assert out.count() == out.select("partition", "offset").distinct().count()


def test_write_read_roundtrip_avro_with_the_registry(
    spark: SparkSession, cluster: Cluster
) -> None:
    topic = "trades-written"
    cluster.create_topic(topic, 2)
    records = [_trade(i) for i in range(12)]
    rows = [(f"k{i}", r) for i, r in enumerate(records)]
    ddl = (
        "key string, value struct<id:bigint, symbol:string, side:string, ts:timestamp,"
        " note:string, tags:array<string>>"
    )
    df = spark.createDataFrame(rows, ddl)
    _write(  # the schema is registered under trades-written-value
        df,
        cluster,
        topic,
        keyFormat="string",
        valueFormat="avro",
        valueSchema=json.dumps(V1),
    )
    back = _reader(spark, cluster, topic, keyFormat="string", valueFormat="avro").load()
    got = {r.key: _plain(r.value.asDict(recursive=True)) for r in back.collect()}
    assert got == {k: _plain(v) for k, v in rows}

    # confluent-kafka's deserializer reads what was written
    raw = _reader(spark, cluster, topic).load().select("value").collect()
    sr = SchemaRegistryClient({"url": cluster.schema_registry_url})
    decode = AvroDeserializer(sr)
    ctx = SerializationContext(topic, MessageField.VALUE)
    assert sorted(
        (_plain(decode(bytes(r.value), ctx)) for r in raw), key=lambda d: d["id"]
    ) == [_plain(r) for r in records]

    # use.latest.version: no schema given, the subject's latest is used
    _write(
        df.limit(2),
        cluster,
        topic,
        valueFormat="avro",
        **{"use.latest.version": "true"},
    )
    assert _reader(spark, cluster, topic, valueFormat="avro").load().count() == 14
    assert sr.get_versions(f"{topic}-value") == [1]


def test_segments_with_an_inline_avro_schema(
    spark: SparkSession, tmp_path: Path
) -> None:
    parsed = fastavro.parse_schema(V1)
    values = []
    for i in range(5):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, _trade(i))
        values.append(buf.getvalue())
    folder = tmp_path / "trades-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(
        encode_batch([(b"%d" % i, v) for i, v in enumerate(values)])
        + encode_batch([(None, b"\x02")], base_offset=5)  # truncated: bad value
    )
    df = (
        spark.read.format("kproto-segments")
        .option("valueFormat", "avro")
        .option("valueSchema", json.dumps(V1))
        .option("keyFormat", "string")
        .option("mode", "PERMISSIVE")
        .load(str(folder))
    )
    rows = df.orderBy("offset").collect()
    assert [r.key for r in rows] == ["0", "1", "2", "3", "4", None]
    assert [_plain(r.value.asDict(recursive=True)) for r in rows[:5]] == [
        _plain(_trade(i)) for i in range(5)
    ]
    assert rows[5].value is None
    assert (
        rows[5]._value_error == "value of trades-0 offset 5: byte 1: value ends early"
    )
    assert df.where(F.col("_key_error").isNotNull()).count() == 0


JSON_V1: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "item": {"type": "string"},
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            },
        },
        "attrs": {"type": "object", "additionalProperties": {"type": "number"}},
    },
    "additionalProperties": False,  # closed: adding a property stays compatible
}
JSON_V2: dict[str, Any] = {
    **JSON_V1,
    "properties": {**JSON_V1["properties"], "note": {"type": ["string", "null"]}},
}


def _order(i: int, v2: bool = False) -> dict[str, Any]:
    o: dict[str, Any] = {
        "id": i,
        "item": f"i{i}",
        "lines": [{"sku": f"s{j}", "qty": j} for j in range(i % 3)],
        "attrs": {"w": i / 2},
    }
    if v2:
        o["note"] = None if i % 2 else f"n{i}"
    return o


def test_json_schema_reads_equal_confluent_deserializer_and_roundtrip(
    spark: SparkSession, cluster: Cluster
) -> None:
    from confluent_kafka.schema_registry.json_schema import (
        JSONDeserializer,
        JSONSerializer,
    )

    topic = "orders-json"
    cluster.create_topic(topic, 1)
    sr = SchemaRegistryClient({"url": cluster.schema_registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1 = JSONSerializer(json.dumps(JSON_V1), sr)
    v2 = JSONSerializer(json.dumps(JSON_V2), sr)
    values = [v1(_order(i), ctx) for i in range(6)]
    values += [v2(_order(i, v2=True), ctx) for i in range(6, 12)]
    _produce(cluster, topic, values, [None] * 12)

    df = _reader(spark, cluster, topic, valueFormat="json").load()
    assert df.schema["value"].dataType.fieldNames() == list(JSON_V2["properties"])
    decode = JSONDeserializer(json.dumps(JSON_V2))
    expected = []
    for v in values:
        d = decode(v, ctx)
        d.setdefault("note", None)  # v1 records: the added field is null
        expected.append(d)
    got = _values(df)
    for g in got:
        g["attrs"] = dict(g["attrs"])  # Spark's map comes back as a dict already
    assert got == expected

    # write -> read: struct rows serialized with JSON Schema through the registry
    out = "orders-json-written"
    cluster.create_topic(out, 1)
    _write(
        df.select("value"),
        cluster,
        out,
        valueFormat="json",
        valueSchema=json.dumps(JSON_V2),
    )
    back = _reader(spark, cluster, out, valueFormat="json").load()
    assert _values(back) == got
    raw = _reader(spark, cluster, out).load().orderBy("offset").collect()
    assert [decode(bytes(r.value), ctx) for r in raw] == [
        {k: v for k, v in e.items() if v is not None} | {"note": e["note"]}
        for e in expected
    ]


PROTO_V1 = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
enum Status { UNKNOWN = 0; PAID = 1; SHIPPED = 2; }
message Line { string sku = 1; int32 qty = 2; }
message Order {
  int64 id = 1;
  Status status = 2;
  repeated Line lines = 3;
  map<string, double> attrs = 4;
  google.protobuf.Timestamp at = 5;
}
"""
PROTO_V2 = PROTO_V1.replace(
    "google.protobuf.Timestamp at = 5;",
    "google.protobuf.Timestamp at = 5;\n  optional string note = 6;",
)


def _proto_row(i: int, v2: bool = False) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": i + 1,
        "status": ("PAID", "SHIPPED")[i % 2],
        "lines": [{"sku": f"s{j}", "qty": j + 1} for j in range(i % 3)],
        "attrs": {"w": i + 0.5},
        "at": T0 + datetime.timedelta(seconds=i),
    }
    if v2:
        row["note"] = f"n{i}"
    return row


def test_protobuf_reads_what_confluent_wrote_and_roundtrips(
    spark: SparkSession, cluster: Cluster
) -> None:
    from confluent_kafka.schema_registry.protobuf import (
        ProtobufDeserializer,
        ProtobufSerializer,
    )

    from kproto.spark._protobuf_format import message_class, proto_message

    topic = "orders-proto"
    cluster.create_topic(topic, 1)
    sr = SchemaRegistryClient({"url": cluster.schema_registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    conf = {"use.deprecated.format": False}
    v1_cls = message_class(PROTO_V1, "shop.Order")
    v2_cls = message_class(PROTO_V2, "shop.Order")
    v1 = ProtobufSerializer(v1_cls, sr, conf)
    v2 = ProtobufSerializer(v2_cls, sr, conf)
    inputs = [_proto_row(i) for i in range(5)] + [
        _proto_row(i, v2=True) for i in range(5, 10)
    ]
    values = [v1(proto_message(v1_cls, r), ctx) for r in inputs[:5]]
    values += [v2(proto_message(v2_cls, r), ctx) for r in inputs[5:]]
    _produce(cluster, topic, values, [None] * 10)

    df = _reader(
        spark, cluster, topic, valueFormat="protobuf", valueMessageName="shop.Order"
    ).load()
    expected = [
        {**_plain(r), "note": r.get("note"), "lines": r["lines"], "attrs": r["attrs"]}
        for r in inputs
    ]
    got = _values(df)
    assert got == expected

    out = "orders-proto-written"
    cluster.create_topic(out, 1)
    _write(
        df.select("value"),
        cluster,
        out,
        valueFormat="protobuf",
        valueSchema=PROTO_V2,
        valueMessageName="shop.Order",
    )
    back = _reader(
        spark, cluster, out, valueFormat="protobuf", valueMessageName="shop.Order"
    )
    assert _values(back.load()) == got
    decode = ProtobufDeserializer(v2_cls, conf)
    raw = _reader(spark, cluster, out).load().orderBy("offset").collect()
    messages = [
        decode(bytes(r.value), SerializationContext(out, MessageField.VALUE))
        for r in raw
    ]
    assert [m.id for m in messages] == list(range(1, 11))
    assert [m.note for m in messages] == [""] * 5 + [f"n{i}" for i in range(5, 10)]
    assert messages[8].lines[1].qty == 2 and messages[3].status == 2


def test_avro_write_without_a_schema_derives_it_as_to_avro(
    spark: SparkSession, cluster: Cluster
) -> None:
    topic = "trades-derived"
    cluster.create_topic(topic, 1)
    rows = [(i, f"S{i}", None if i % 2 else [1.5, 2.5]) for i in range(4)]
    df = spark.createDataFrame(rows, "id bigint, symbol string, prices array<double>")
    _write(
        df.select(F.struct("id", "symbol", "prices").alias("value")),
        cluster,
        topic,
        valueFormat="avro",
    )
    sr = SchemaRegistryClient({"url": cluster.schema_registry_url})
    text = sr.get_latest_version(f"{topic}-value").schema.schema_str
    assert text is not None
    registered = json.loads(text)
    assert registered["name"] == "topLevelRecord"
    back = _reader(spark, cluster, topic, valueFormat="avro").load()
    got = sorted(_values(back), key=lambda v: v["id"])  # tasks write in any order
    assert got == [{"id": i, "symbol": s, "prices": p} for i, s, p in rows]


def test_write_stream_reencodes_avro_as_json(
    spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    source, sink = "trades-to-json", "trades-as-json"
    cluster.create_topic(source, 1)
    cluster.create_topic(sink, 1)
    sr = SchemaRegistryClient({"url": cluster.schema_registry_url})
    ser = AvroSerializer(sr, json.dumps(V1))
    ctx = SerializationContext(source, MessageField.VALUE)
    _produce(cluster, source, [ser(_trade(i), ctx) for i in range(6)], [None] * 6)
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "symbol": {"type": "string"}},
    }
    stream = _avro_stream(spark, cluster, source).select(
        F.struct("value.id", "value.symbol").alias("value")
    )
    query = (
        stream.writeStream.format("kproto-kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("topic", sink)
        .option("valueFormat", "json")
        .option("valueSchema", json.dumps(schema))
        .option("schemaRegistryUrl", cluster.schema_registry_url)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    back = _reader(spark, cluster, sink, valueFormat="json").load()
    assert _values(back) == [{"id": i, "symbol": f"S{i % 7}"} for i in range(6)]
