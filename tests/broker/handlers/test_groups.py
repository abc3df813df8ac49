"""The group handlers' answers (``kproto.broker.handlers.groups``) where the
request never reaches the coordinator."""

from __future__ import annotations

import itertools

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions
from tests.broker.handlers.support import send


def _group_coordinated_by(cluster: Cluster, node_id: int) -> str:
    """A group id whose coordinator is ``node_id``."""
    return next(
        group
        for group in (f"join-elsewhere-{i}" for i in itertools.count())
        if cluster.coordinator(group) == node_id
    )


@pytest.mark.parametrize("version", api_versions(ApiKey.JOIN_GROUP)[7:])
def test_join_group_at_a_node_not_coordinating_answers_not_coordinator(
    cluster: Cluster, conn: Connection, version: int
) -> None:
    # Kafka's JoinGroupRequest.getErrorResponse: from v7 (where ProtocolName is
    # nullable) the error answer's protocol_name is null, not ""
    group = _group_coordinated_by(cluster, cluster.state.node_ids[1])
    r = send(
        conn,
        ApiKey.JOIN_GROUP,
        version,
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id="m-1",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": b""}],
        reason=None,
    )
    assert r.error_code == ErrorCode.NOT_COORDINATOR
    assert r.protocol_name is None
    assert (r.generation_id, r.leader, r.member_id, r.members) == (-1, "", "m-1", ())
