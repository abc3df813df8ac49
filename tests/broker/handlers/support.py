"""What the handler tests share: a negotiated connection to one node and a
request of one exact version (the ``cluster`` and ``conn`` fixtures are in
``conftest.py``)."""

from __future__ import annotations

from typing import Any

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.index import ApiKey, request_type
from kproto.meta import build_entity
from tests.broker import wire


def connect(cluster: Cluster, node_id: int) -> Connection:
    """A negotiated connection to node ``node_id`` (30 s per request)."""
    return wire.connect(cluster, node_id, timeout_s=30)


def send(conn: Connection, api_key: ApiKey, version: int, **fields: Any) -> Any:
    """The answer to ``api_key`` at ``version``, built from ``fields`` (the ones the
    version lacks are dropped)."""
    return conn.send(
        build_entity(request_type(api_key, version), fields, drop_absent=True)
    )
