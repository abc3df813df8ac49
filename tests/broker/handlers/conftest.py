"""The handler tests' cluster (two nodes, one data directory per test module) and
a connection to its first node."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from tests.broker.handlers.support import connect


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(nodes=2, data_dir=tmp_path_factory.mktemp("apis")) as c:
        yield c


@pytest.fixture
def conn(cluster: Cluster) -> Iterator[Connection]:
    c = connect(cluster, cluster.state.node_ids[0])
    yield c
    c.close()
