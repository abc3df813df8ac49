"""Fixtures of the serializer tests: a registry (the HTTP double of
tests/registry_double.py) with kproto's and confluent-kafka's clients on it."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient
from confluent_kafka.serialization import MessageField as CField
from confluent_kafka.serialization import SerializationContext as CContext

from kproto.registry.client import SchemaRegistryClient
from kproto.serde import MessageField, SerializationContext
from tests.registry_double import State, serve_registry

# A value of topic "orders", for kproto's serializers and for confluent-kafka's.
VALUE = SerializationContext("orders", MessageField.VALUE)
C_VALUE = CContext("orders", CField.VALUE)


@attrs.frozen
class Registry:
    url: str
    state: State
    client: SchemaRegistryClient
    confluent: ConfluentClient


@pytest.fixture
def registry() -> Iterator[Registry]:
    with serve_registry() as (url, state):
        client = SchemaRegistryClient(url)
        yield Registry(url, state, client, ConfluentClient({"url": url}))
        client.close()


COMMON_PROTO = """
syntax = "proto3";
package kproto.test;
message Money { string currency = 1; int64 units = 2; }
"""

ORDERS_PROTO = """
syntax = "proto3";
package kproto.test;
import "google/protobuf/timestamp.proto";
import "kproto_test_common.proto";
message Other { int32 x = 1; }
message Order {
  int64 id = 1;
  string name = 2;
  message Line { string sku = 1; int32 qty = 2; }
  repeated Line lines = 3;
  google.protobuf.Timestamp at = 4;
  Money total = 5;
}
"""


@pytest.fixture(scope="session")
def orders_pb2(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The generated module of ORDERS_PROTO (and its import), compiled here with
    grpc_tools.protoc."""
    import grpc_tools
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("proto")
    (out / "kproto_test_common.proto").write_text(COMMON_PROTO)
    (out / "kproto_test_orders.proto").write_text(ORDERS_PROTO)
    include = Path(grpc_tools.__file__).parent / "_proto"
    args = ["protoc", f"-I{out}", f"-I{include}", f"--python_out={out}"]
    assert (
        protoc.main([*args, "kproto_test_common.proto", "kproto_test_orders.proto"])
        == 0
    )
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module("kproto_test_orders_pb2")
    finally:
        sys.path.remove(str(out))
