"""Timers of the group coordinator: a tiny scheduler interface over asyncio.

The coordinator never sleeps: it asks a :class:`Scheduler` to call it back after a
delay in ms and cancels the handle when the wait is over. :class:`AsyncioScheduler`
uses ``loop.call_later``; tests pass a scheduler whose clock they advance by hand.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

__all__ = [
    "AsyncioScheduler",
    "Scheduler",
    "TimerHandle",
    "TimedMember",
    "arm_member_timers",
]


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


class TimedMember(Protocol):
    """A KIP-848 style member (consumer or streams) with a session and rebalance timer."""

    member_epoch: int
    rebalance_timeout_ms: int
    session_timer: TimerHandle | None
    rebalance_timer: TimerHandle | None


def arm_member_timers(
    scheduler: Scheduler,
    member: TimedMember,
    session_timeout_ms: int,
    revoking: bool,
    expire: Callable[[str, int | None], None],
) -> None:
    """(Re)start ``member``'s session timer; run its rebalance timer while ``revoking``.

    The session timer fires ``expire("session timeout", None)`` after
    ``session_timeout_ms`` (ms) without a heartbeat. While the member still owes a
    revocation, a rebalance timer (``member.rebalance_timeout_ms``) fires
    ``expire("rebalance timeout", epoch)`` with the epoch it was armed at; it is
    cancelled once the member stops revoking. Follows the session and rebalance
    timeouts of Kafka's ``GroupMetadataManager`` (KIP-848, KIP-1071).
    """
    if member.session_timer is not None:
        member.session_timer.cancel()
    member.session_timer = scheduler.call_later(
        session_timeout_ms, lambda: expire("session timeout", None)
    )
    if revoking:
        if member.rebalance_timer is None:
            epoch = member.member_epoch
            member.rebalance_timer = scheduler.call_later(
                member.rebalance_timeout_ms,
                lambda: expire("rebalance timeout", epoch),
            )
    elif member.rebalance_timer is not None:
        member.rebalance_timer.cancel()
        member.rebalance_timer = None
