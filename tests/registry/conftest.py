"""Shared fixtures of the registry tests: one cluster with a schema registry per
module, and fresh subject names."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from kproto.broker import Cluster

_names = itertools.count()


@pytest.fixture(scope="module")
def registry_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(
        data_dir=tmp_path_factory.mktemp("registry"), schema_registry=True
    ) as cluster:
        yield cluster


@pytest.fixture
def subject() -> Callable[[], str]:
    """A fresh subject name per call (``s0-value``, ``s1-value``...)."""
    return lambda: f"s{next(_names)}-value"
