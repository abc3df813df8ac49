"""The cluster's metadata on disk: ``<data_dir>/kproto-topics.json`` and the log
start offset checkpoint.

Kafka keeps topic metadata (names, topic ids, partitions, leaders, configs) in the
KRaft metadata log; this broker has none and keeps it in one JSON object, written
atomically (through a rename) after every change::

    {"cluster_id": "...", "next_producer_id": 1000,
     "topics": [{"name": "t", "topic_id": "<uuid>", "leaders": [1, 2],
                 "replicas": [[1, 2], [2, 1]],
                 "configs": {"cleanup.policy": "compact"}, "internal": false}]}

(``replicas`` is absent from files written before replica assignments were kept:
each partition's leader is then its one replica. ``reassigning``, present only
while reassignments are in progress, maps a partition index to its adding and
removing replicas: ``{"0": [[3], [1]]}``.)

Log start offsets raised by DeleteRecords or retention are kept in
``<data_dir>/log-start-offset-checkpoint`` in Kafka's checkpoint format
(``OffsetCheckpointFile``: version line, count line, ``topic partition offset``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from pathlib import Path

import attrs

from kproto.broker.checkpoint import (
    read_offset_checkpoint,
    write_atomic,
    write_offset_checkpoint,
)
from kproto.broker.topic_metadata import TopicMetadata

__all__ = [
    "CHECKPOINT_FILE",
    "TOPICS_FILE",
    "CorruptStateError",
    "SavedCluster",
    "read_start_offsets",
    "read_topics",
    "write_start_offsets",
    "write_topics",
]

TOPICS_FILE = "kproto-topics.json"
CHECKPOINT_FILE = "log-start-offset-checkpoint"


class CorruptStateError(ValueError):
    """A state file of the data directory does not parse; ``path`` names it."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        super().__init__(f"{path}: {reason}")


@attrs.frozen
class SavedCluster:
    """What ``kproto-topics.json`` holds: the cluster id, the next producer id to
    hand out and every topic (leaders as saved, possibly of nodes gone since)."""

    cluster_id: str | None
    next_producer_id: int
    topics: list[TopicMetadata]


def read_topics(data_dir: Path) -> SavedCluster | None:
    """The saved metadata of ``data_dir`` (None: nothing saved yet).

    Raises:
        CorruptStateError: the file is not a JSON object with a ``topics`` list.
        OSError: it cannot be read.
    """
    path = data_dir / TOPICS_FILE
    if not path.exists():
        return None
    try:
        saved = json.loads(path.read_text())
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise CorruptStateError(path, f"not a kproto topics file: {exc}") from exc
    if not isinstance(saved, dict) or not isinstance(saved.get("topics"), list):
        raise CorruptStateError(path, "not a kproto topics file: no topics list")
    topics = [
        TopicMetadata(
            entry["name"],
            uuid.UUID(entry["topic_id"]),
            list(entry["leaders"]),
            dict(entry["configs"]),
            bool(entry["internal"]),
            replicas=[list(r) for r in entry.get("replicas", ())],
            reassigning={
                int(p): (list(adding), list(removing))
                for p, (adding, removing) in entry.get("reassigning", {}).items()
            },
        )
        for entry in saved["topics"]
    ]
    return SavedCluster(
        saved.get("cluster_id"), int(saved.get("next_producer_id", 0)), topics
    )


def write_topics(
    data_dir: Path,
    cluster_id: str,
    next_producer_id: int,
    topics: Iterable[TopicMetadata],
) -> None:
    """Write ``kproto-topics.json`` (atomically, through a rename): one topic per
    line, each encoded compactly (json's C encoder: tens of ms for 10,000 topics
    where an indented dump takes several times longer on the event loop)."""
    head = json.dumps({"cluster_id": cluster_id, "next_producer_id": next_producer_id})
    lines = [json.dumps(_topic_entry(t)) for t in topics]
    body = head[:-1] + ', "topics": [\n' + ",\n".join(lines) + "\n]}\n"
    write_atomic(data_dir / TOPICS_FILE, body)


def _topic_entry(t: TopicMetadata) -> dict[str, object]:
    entry: dict[str, object] = {
        "name": t.name,
        "topic_id": str(t.topic_id),
        "leaders": t.leaders,
        "replicas": t.replicas,
        "configs": t.configs,
        "internal": t.internal,
    }
    if t.reassigning:
        entry["reassigning"] = {str(p): list(r) for p, r in t.reassigning.items()}
    return entry


def read_start_offsets(data_dir: Path) -> dict[tuple[str, int], int]:
    """``{(topic, partition): log start offset}`` from the checkpoint (empty when
    there is none)."""
    return read_offset_checkpoint(data_dir / CHECKPOINT_FILE)


def write_start_offsets(data_dir: Path, offsets: dict[tuple[str, int], int]) -> None:
    """Write the log start offsets above 0 to the checkpoint."""
    write_offset_checkpoint(
        data_dir / CHECKPOINT_FILE, {tp: o for tp, o in offsets.items() if o > 0}
    )
