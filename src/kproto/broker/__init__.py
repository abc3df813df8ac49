"""kproto.broker: an in-process Kafka broker cluster on 127.0.0.1 for tests and
local development, built on kproto's own request decoders and response encoders.

``Cluster`` (see :mod:`kproto.broker.cluster`) is the entry point; the pytest
fixtures are in :mod:`kproto.broker.pytest_plugin`.

The names below are imported on first use (PEP 562), so that importing the pytest
plugin, a submodule, loads no broker code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kproto.broker.cluster import Cluster
    from kproto.broker.errors import ApiError, TopicError
    from kproto.broker.held_requests import HeldRequest, Hold
    from kproto.broker.introspect import RequestLog, RequestRecord
    from kproto.broker.state import ClusterState, NodeInfo, TopicMetadata

__all__ = [
    "Cluster",
    "ClusterState",
    "NodeInfo",
    "TopicMetadata",
    "ApiError",
    "TopicError",
    "RequestLog",
    "RequestRecord",
    "Hold",
    "HeldRequest",
]

_HOMES = {
    "Cluster": "kproto.broker.cluster",
    "ClusterState": "kproto.broker.state",
    "NodeInfo": "kproto.broker.state",
    "TopicMetadata": "kproto.broker.state",
    "ApiError": "kproto.broker.errors",
    "TopicError": "kproto.broker.errors",
    "RequestLog": "kproto.broker.introspect",
    "RequestRecord": "kproto.broker.introspect",
    "Hold": "kproto.broker.held_requests",
    "HeldRequest": "kproto.broker.held_requests",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kproto.broker' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
