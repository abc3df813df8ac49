"""The one home of "``with`` closes it": the context-manager surface shared by the
connections and the clients.

``with obj:`` (``async with obj:``) returns ``obj`` and calls its ``close()`` when the
block ends, whether or not it raised; exceptions are never swallowed (as
:func:`contextlib.closing`, but the object is its own context manager).
"""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self

__all__ = ["AsyncClosing", "Closing"]


class Closing(abc.ABC):
    """Base of blocking objects that ``with`` closes."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release what the object holds. Idempotent."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClosing(abc.ABC):
    """Base of asyncio objects that ``async with`` closes."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release what the object holds. Idempotent."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
