"""Shared fixtures of the broker tests: one 3-node cluster with a known data_dir,
and the body of a cluster fixture holding one topic."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster

_names = itertools.count()


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(nodes=3, data_dir=tmp_path_factory.mktemp("data")) as c:
        yield c


@pytest.fixture
def topic(cluster3: Cluster) -> Callable[..., str]:
    """Create a fresh topic on ``cluster3``; return its name."""

    def make(partitions: int = 3, **configs: str) -> str:
        name = f"t{next(_names)}"
        cluster3.create_topic(
            name,
            partitions,
            configs={k.replace("_", "."): v for k, v in configs.items()},
        )
        return name

    return make


def cluster_with_topic(
    topic: str, partitions: int, **settings: Any
) -> Iterator[Cluster]:
    """A ``Cluster(**settings)`` holding ``topic`` of ``partitions`` partitions,
    closed when the generator is: the body of a fixture (``yield from``)."""
    with Cluster(**settings) as c:
        c.create_topic(topic, partitions)
        yield c


def segment_files(data_dir: Path, topic: str) -> list[Path]:
    return sorted(data_dir.glob(f"{topic}-*/*.log"))
