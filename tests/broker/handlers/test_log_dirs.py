"""DescribeLogDirs (handlers/log_dirs.py) at every version kproto generates."""

from __future__ import annotations

import shutil
from pathlib import Path

from kproto.broker import Cluster
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions
from tests.broker.handlers.support import connect, send


def test_describe_log_dirs(cluster: Cluster) -> None:
    cluster.create_topic("dirs", 2)
    for node in cluster.state.node_ids:
        c = connect(cluster, node)
        try:
            for version in api_versions(ApiKey.DESCRIBE_LOG_DIRS):
                answer = send(
                    c,
                    ApiKey.DESCRIBE_LOG_DIRS,
                    version,
                    topics=[{"topic": "dirs", "partitions": [0, 1]}],
                )
                (result,) = answer.results
                assert result.error_code == ErrorCode.NONE
                assert Path(result.log_dir) == cluster.state.data_dir.resolve()
                led = [p for p in (0, 1) if cluster.state.leader("dirs", p) == node]
                described = [
                    p.partition_index for t in result.topics for p in t.partitions
                ]
                assert described == led
                for t in result.topics:
                    for p in t.partitions:
                        plog = cluster.state.partition_log("dirs", p.partition_index)
                        assert plog is not None
                        assert p.partition_size == plog.size_bytes
                        assert p.offset_lag == 0
                if version >= 4:
                    usage = shutil.disk_usage(cluster.state.data_dir)
                    assert result.total_bytes == usage.total
                    assert 0 < result.usable_bytes <= usage.total
            everything = c.request(ApiKey.DESCRIBE_LOG_DIRS, topics=None)
            names = {t.name for t in everything.results[0].topics}
            assert "dirs" in names or all(
                cluster.state.leader("dirs", p) != node for p in (0, 1)
            )
        finally:
            c.close()
