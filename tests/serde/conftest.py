"""Fixtures of the serializer tests: a registry (the HTTP double of
tests/registry_double.py) with kproto's and confluent-kafka's clients on it."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient

from kproto.registry.client import SchemaRegistryClient
from tests.registry_double import State, serve_registry


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
