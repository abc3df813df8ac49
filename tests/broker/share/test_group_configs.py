"""Group configs (IncrementalAlterConfigs on a GROUP resource, Kafka's
``GroupConfig``) reach the share partitions a share group already has: a new lock
duration, delivery count limit and in-flight record limit apply at once, and
deleting them brings back the cluster's settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.broker.share.support import SHARE_CONFIGS

pytestmark = pytest.mark.timeout(60)
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP
CONFIGS = {
    "share.record.lock.duration.ms": "1234",
    "share.delivery.count.limit": "2",
    "share.partition.max.record.locks": "7",
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(share_configs=SHARE_CONFIGS) as c:
        c.create_topic("cfg", 1)
        yield c


def alter(conn: Connection, operation: int) -> None:
    """SET (0) or DELETE (1) every one of :data:`CONFIGS` on group ``g``."""
    answer = conn.request(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        resources=[
            {
                "resource_type": GROUP_RESOURCE,
                "resource_name": "g",
                "configs": [
                    {"name": n, "config_operation": operation, "value": v}
                    for n, v in CONFIGS.items()
                ],
            }
        ],
        validate_only=False,
    )
    assert [r.error_code for r in answer.responses] == [ErrorCode.NONE]


def test_group_configs_apply_to_started_share_partitions(cluster: Cluster) -> None:
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        joined = conn.request(
            ApiKey.SHARE_GROUP_HEARTBEAT,
            group_id="g",
            member_id="m1",
            member_epoch=0,
            subscribed_topic_names=["cfg"],
        )
        assert joined.error_code == ErrorCode.NONE
        share = cluster.share.partitions[("g", "cfg", 0)]

        def limits() -> tuple[int, int, int]:
            return (
                share.lock_duration_ms,
                share.delivery_count_limit,
                share.max_record_locks,
            )

        config = cluster.share.config
        defaults = (
            config.record_lock_duration_ms,
            config.delivery_count_limit,
            config.partition_max_record_locks,
        )
        assert limits() == defaults
        alter(conn, 0)
        assert limits() == (1234, 2, 7)
        alter(conn, 1)
        assert limits() == defaults
