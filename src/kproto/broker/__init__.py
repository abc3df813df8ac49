"""kproto.broker: an in-process Kafka broker cluster on 127.0.0.1 for tests and
local development, built on kproto's own request decoders and response encoders.

``Cluster`` (see :mod:`kproto.broker.cluster`) is the entry point; the pytest
fixtures are in :mod:`kproto.broker.pytest_plugin`.
"""

from __future__ import annotations

from kproto.broker.cluster import Cluster
from kproto.broker.errors import BrokerError, TopicError
from kproto.broker.introspect import RequestLog, RequestRecord
from kproto.broker.state import ClusterState, NodeInfo, TopicMetadata

__all__ = [
    "Cluster",
    "ClusterState",
    "NodeInfo",
    "TopicMetadata",
    "BrokerError",
    "TopicError",
    "RequestLog",
    "RequestRecord",
]
