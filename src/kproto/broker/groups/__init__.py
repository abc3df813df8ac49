"""The classic consumer-group coordinator of :mod:`kproto.broker`.

Minimal interface first (the cluster constructs ``GroupCoordinator(state)`` and
calls ``start()``/``stop()``); the state machine follows.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GroupCoordinator"]


class GroupCoordinator:
    """Every consumer group of one in-process cluster.

    ``state`` is the cluster's shared ``ClusterState``.
    """

    def __init__(self, state: Any) -> None:
        self.state = state

    async def start(self) -> None:
        """Recover groups and offsets from ``__consumer_offsets``; start timers."""

    async def stop(self) -> None:
        """Cancel every timer; leaves no task running."""
