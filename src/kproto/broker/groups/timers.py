"""Timers of the group coordinator: a tiny scheduler interface over asyncio.

The coordinator never sleeps: it asks a :class:`Scheduler` to call it back after a
delay in ms and cancels the handle when the wait is over. :class:`AsyncioScheduler`
uses ``loop.call_later``; tests pass a scheduler whose clock they advance by hand.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

__all__ = ["AsyncioScheduler", "Scheduler", "TimerHandle"]


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """Runs ``callback`` once after ``delay_ms`` (ms) unless the handle is cancelled."""

    def call_later(
        self, delay_ms: int, callback: Callable[[], None]
    ) -> TimerHandle: ...


class AsyncioScheduler:
    """A :class:`Scheduler` on the running asyncio loop (``loop.call_later``)."""

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, callback)
