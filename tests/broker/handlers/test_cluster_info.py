"""ApiVersions (handlers/cluster_info.py): the admin APIs of issue 16 item 5 are
advertised at every version kproto generates."""

from __future__ import annotations

from kproto.broker.handlers import HANDLERS
from kproto.broker.handlers.cluster_info import served_api_ranges
from kproto.connection import Connection
from kproto.index import ApiKey, api_versions

NEW_APIS = (
    ApiKey.OFFSET_FOR_LEADER_EPOCH,
    ApiKey.DESCRIBE_LOG_DIRS,
    ApiKey.ELECT_LEADERS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.DESCRIBE_CLIENT_QUOTAS,
    ApiKey.ALTER_CLIENT_QUOTAS,
    ApiKey.UPDATE_FEATURES,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS,
)


def test_every_version_is_advertised(conn: Connection) -> None:
    ranges = served_api_ranges(HANDLERS)
    for api_key in NEW_APIS:
        generated = api_versions(api_key)
        assert ranges[api_key] == (generated.start, generated.stop - 1)
        assert api_key in conn.broker_api_versions
