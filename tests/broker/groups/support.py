"""What the group tests with real clients share."""

from __future__ import annotations

from typing import Any

#: a classic group member from the start of the log that commits by hand, with a
#: short session (ms): the keyword arguments kafka-python's ``KafkaConsumer`` and
#: aiokafka's ``AIOKafkaConsumer`` both take
MANUAL_COMMIT_MEMBER: dict[str, Any] = {
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 200,
}
