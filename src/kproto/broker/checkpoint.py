"""The broker's small state files: written atomically, and Kafka's offset checkpoint
format (``OffsetCheckpointFile``: a version line ``0``, a count line, then one
``topic partition offset`` line per partition), used for
``log-start-offset-checkpoint`` and ``cleaner-offset-checkpoint``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["write_atomic", "read_offset_checkpoint", "write_offset_checkpoint"]


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file, fsync it and rename it over ``path``:
    a crash leaves the old or the new file, never a torn one.

    Raises:
        OSError: the write or the rename failed (the temporary file is removed).
    """
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def read_offset_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """``(topic, partition) -> offset`` from a checkpoint file; empty when the
    file does not exist.

    Raises:
        ValueError: a line is not ``topic partition offset``.
        OSError: the file cannot be read.
    """
    if not path.exists():
        return {}
    out: dict[tuple[str, int], int] = {}
    for line in path.read_text().splitlines()[2:]:
        topic, partition, offset = line.rsplit(" ", 2)
        out[(topic, int(partition))] = int(offset)
    return out


def write_offset_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    """Write ``offsets`` in Kafka's checkpoint format, sorted, atomically.

    Raises:
        OSError: as :func:`write_atomic`.
    """
    lines = [f"{t} {p} {offset}" for (t, p), offset in sorted(offsets.items())]
    write_atomic(path, "\n".join(["0", str(len(lines)), *lines]) + "\n")
