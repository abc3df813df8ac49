"""A cluster's event loop, and running work on it from any thread.

:class:`kproto.broker.Cluster` runs either on a thread of its own (``with
Cluster()``) or on the caller's loop (``async with Cluster()``); the test controls
(:mod:`kproto.broker.cluster_faults`, :mod:`kproto.broker.cluster_controls`) and the
cluster's own methods reach the broker's state through :meth:`ClusterLoop._on_loop`
and :meth:`ClusterLoop._call`, so a test thread never touches it while the loop
does.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["ClusterLoop"]

T = TypeVar("T")


class ClusterLoop:
    """The loop a cluster runs on: ``_loop`` (None: not running) and ``_thread``
    (the background thread of ``with Cluster()``; None under ``async with``), set
    as the cluster starts and stops."""

    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the cluster's loop from any thread.

        Raises:
            RuntimeError: the cluster is not running, or the caller is on the
                cluster's own loop (it must await the ``async_*`` method instead).
        """
        loop = self._loop
        if loop is None:
            coro.close()
            raise RuntimeError("the cluster is not running")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coro.close()
            raise RuntimeError(
                "call the async_* method from the cluster's own event loop"
            )
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def _on_loop(self, func: Callable[[], T]) -> T:
        """Run ``func`` on the cluster's loop thread (directly when the cluster
        runs on the caller's loop, through the background thread otherwise).

        Raises:
            RuntimeError: the cluster is not running.
        """
        if self._thread is None or threading.current_thread() is self._thread:
            # ``async with`` mode, or already on the loop (e.g. inside a request hook)
            if self._loop is None:
                raise RuntimeError("the cluster is not running")
            return func()

        async def call() -> T:
            return func()

        return self._call(call())
