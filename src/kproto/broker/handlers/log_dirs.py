"""DescribeLogDirs (KIP-113): the node's log directory and the size of each
partition it holds.

Sources: ``DescribeLogDirsRequest/Response.json`` v0-v5 (top-level error since
v3, ``total_bytes``/``usable_bytes`` since v4, KIP-827); Kafka's
``ReplicaManager.describeLogDirs``. This broker has one log directory, the
cluster's ``data_dir``, shared by every node: a node describes the partitions it
leads (its replicas), each with its size in bytes and an ``offset_lag`` of 0 (no
future replica is ever being moved); ``total_bytes`` and ``usable_bytes`` are the
file system's (``shutil.disk_usage``).
"""

from __future__ import annotations

import shutil
from typing import Any

from kproto.broker.handlers.context import RequestContext, respond
from kproto.errors import ErrorCode

__all__ = ["describe_log_dirs"]


async def describe_log_dirs(ctx: RequestContext, request: Any) -> Any:
    """The data directory with the requested partitions this node holds (all of
    them when ``topics`` is null)."""
    state = ctx.state
    if request.topics is None:
        wanted = {
            (name, p)
            for name, info in state.topics.items()
            for p in range(info.partitions)
        }
    else:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, partition in sorted(wanted):
        if state.leader(topic, partition) != ctx.node_id:
            continue
        plog = state.partition_log(topic, partition)
        if plog is None:
            continue
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "partition_size": plog.size_bytes,
                "offset_lag": 0,
                "is_future_key": False,
            }
        )
    try:
        usage = shutil.disk_usage(state.data_dir)
        total, usable = usage.total, usage.free
        error = ErrorCode.NONE
    except OSError:
        total, usable, error = -1, -1, ErrorCode.KAFKA_STORAGE_ERROR
    result = {
        "error_code": error,
        "log_dir": str(state.data_dir.resolve()),
        "topics": [
            {"name": name, "partitions": partitions}
            for name, partitions in by_topic.items()
        ],
        "total_bytes": total,
        "usable_bytes": usable,
        "is_cordoned": False,
    }
    return respond(ctx, throttle_time_ms=0, error_code=ErrorCode.NONE, results=[result])
