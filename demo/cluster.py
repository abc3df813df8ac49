"""librdkafka's mock cluster in this process, alive as long as a confluent-kafka
Producer made with ``test.mock.num.brokers`` (tests: ``tests/live/mock_cluster.py``)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import Any

#: Versions the mock (librdkafka 2.16) offers but mishandles: it drops the connection
#: on JoinGroup (11) v6 and SyncGroup (14) v4; LeaveGroup (13) v3+ lacks ``members``.
MOCK_VERSION_CAPS = {11: 5, 14: 3, 13: 2}


class StrayByteNote(logging.Filter):
    """On the ``kproto.connection`` logger: explain, the first time, the byte the
    mock sends after each Metadata response body (kproto decodes the body, then logs
    and ignores what is left over); later ones are only counted (:attr:`count`)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if "left over after MetadataResponse" not in record.getMessage():
            return True
        self.count += 1
        if self.count > 1:
            return False
        record.msg = (
            f"{record.getMessage()})\n  (librdkafka's mock cluster sends one byte "
            "more than a Metadata response holds; kproto decodes the body, logs\n"
            "   the bytes it ignores and carries on; later ones are counted, not shown."
        )
        record.args = ()
        return True


@contextlib.contextmanager
def mock_cluster(nodes: int, timeout_s: float = 20.0) -> Iterator[dict[int, Any]]:
    """Start the cluster, yield ``{node_id: (host, port)}``, stop it on exit."""
    import confluent_kafka

    conf = {"bootstrap.servers": "", "test.mock.num.brokers": nodes, "log_level": 2}
    producer = confluent_kafka.Producer(conf)
    try:
        deadline, brokers = time.monotonic() + timeout_s, dict[int, Any]()
        while len(brokers) < nodes:
            if time.monotonic() > deadline:
                raise RuntimeError(f"mock cluster not up within {timeout_s} s")
            md = producer.list_topics(timeout=5.0)
            brokers = {b.id: (b.host, b.port) for b in md.brokers.values()}
        yield dict(sorted(brokers.items()))
    finally:
        producer.flush(5)
