"""Pytest fixtures for kproto's broker, registered through the ``pytest11`` entry
point (active once kproto is installed):

* ``kafka_cluster``: a fresh single-node :class:`kproto.broker.Cluster` per test,
  in a temporary data directory, stopped after the test;
* ``kafka_cluster_session``: one cluster shared by the whole session.

Both yield a running cluster; use ``cluster.bootstrap_servers`` in clients.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kproto.broker.cluster import Cluster

__all__ = ["kafka_cluster", "kafka_cluster_session"]


@pytest.fixture
def kafka_cluster() -> Iterator[Cluster]:
    """A fresh single-node cluster for one test."""
    with Cluster(nodes=1) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka_cluster_session() -> Iterator[Cluster]:
    """One single-node cluster for the whole test session."""
    with Cluster(nodes=1) as cluster:
        yield cluster
