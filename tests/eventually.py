"""The one way tests wait for something that happens in the background."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(
    predicate: Callable[[], T],
    timeout_s: float = 10.0,
    *,
    interval_s: float = 0.02,
    message: str | Callable[[], str] = "condition not met",
) -> T:
    """Call ``predicate`` until it returns a truthy value and return that value.

    Exceptions raised by ``predicate`` count as "not yet" (the last one is chained).
    Raises ``AssertionError`` naming ``message`` and the last value after ``timeout_s``
    seconds; sleeps ``interval_s`` between calls.
    """
    deadline = time.monotonic() + timeout_s
    last: object = None
    error: BaseException | None = None
    while True:
        try:
            value = predicate()
        except AssertionError as exc:
            value, error = None, exc  # type: ignore[assignment]
        except Exception as exc:  # noqa: BLE001 - "not yet"; chained below
            value, error = None, exc  # type: ignore[assignment]
        else:
            if value:
                return value
            last, error = value, None
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(
                f"after {timeout_s}s: {text} (last value {last!r})"
            ) from error
        time.sleep(interval_s)
