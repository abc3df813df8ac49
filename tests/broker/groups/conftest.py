"""The group tests' connection: to the first node of the module's ``cluster``,
speaking the offset APIs' versions that name topics and JoinGroup before KIP-394
(:data:`tests.broker.wire.GROUP_CAPS`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from tests.broker.wire import GROUP_CAPS, connect


@pytest.fixture
def conn(cluster: Cluster) -> Iterator[Connection]:
    with connect(cluster, caps=GROUP_CAPS, timeout_s=20) as c:
        yield c
