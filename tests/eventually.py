"""The one way tests wait for something that happens in the background
(:func:`eventually`), and watch that nothing more happens for a while
(:func:`during`)."""

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
    retry_on: tuple[type[Exception], ...] = (Exception,),
) -> T:
    """Call ``predicate`` until it returns a truthy value and return that value.

    Exceptions of ``retry_on`` raised by ``predicate`` count as "not yet" (the last
    one is chained); any other propagates at once (``retry_on=()`` for a predicate
    that takes a step, such as polling a consumer, and asserts on what it took).
    Raises ``AssertionError`` naming ``message`` and the last value after ``timeout_s``
    seconds; sleeps ``interval_s`` between calls.
    """
    deadline = time.monotonic() + timeout_s
    last: object = None
    error: BaseException | None = None
    while True:
        try:
            value = predicate()
        except retry_on as exc:  # "not yet"; chained below
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


def during(step: Callable[[], object], seconds: float) -> None:
    """Call ``step`` again and again for ``seconds``: an observation period, for a
    test that asserts (in ``step``) that nothing more arrives, the counterpart of
    :func:`eventually`. ``step`` should block briefly (a poll with a timeout)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        step()
