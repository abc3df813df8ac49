"""Fixtures for the live tests: librdkafka's mock cluster, in-process, on 127.0.0.1."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest

from kproto.index import ApiKey
from tests.live.mock_cluster import Brokers, MockCluster, check

pytest.importorskip("confluent_kafka")

_names = itertools.count()


@attrs.frozen
class Topic:
    """A topic created for one test: name, id and ``{partition: leader node id}``."""

    name: str
    topic_id: uuid.UUID
    leaders: dict[int, int]


@pytest.fixture(scope="session")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(3, timeout_s=20.0) as c:
        yield c


@pytest.fixture(scope="session")
def brokers(cluster: MockCluster) -> Iterator[Brokers]:
    with Brokers(cluster.brokers, timeout_s=10.0) as b:
        yield b


def create_topic(brokers: Brokers, prefix: str = "t") -> Topic:
    """Auto-create a fresh topic through Metadata; return its layout."""
    name = f"{prefix}-{next(_names)}-{uuid.uuid4().hex[:6]}"
    md = brokers.any.request(
        ApiKey.METADATA, topics=[{"name": name}], allow_auto_topic_creation=True
    )
    (t,) = md.topics
    check(t.error_code, f"Metadata {name}")
    leaders = {p.partition_index: p.leader_id for p in t.partitions}
    assert leaders and all(n in brokers.addresses for n in leaders.values())
    return Topic(name, t.topic_id, leaders)


@pytest.fixture(scope="session")
def new_topic(brokers: Brokers) -> Callable[..., Topic]:
    def make(prefix: str = "t") -> Topic:
        return create_topic(brokers, prefix)

    return make


def consumer_config(cluster: MockCluster, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "group.id": f"g-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "log_level": 2,
        **extra,
    }


@pytest.fixture(scope="session")
def consumer_conf(cluster: MockCluster) -> Callable[..., dict[str, Any]]:
    def make(**extra: Any) -> dict[str, Any]:
        return consumer_config(cluster, **extra)

    return make
