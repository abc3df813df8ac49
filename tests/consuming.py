"""Reading with a confluent-kafka ``Consumer`` (or a kafka-python one) in tests,
waiting only through :func:`tests.eventually.eventually`."""

from __future__ import annotations

import time
from typing import Any

from tests.eventually import eventually


def read_committing(consumer: Any, count: int, timeout_s: float = 60) -> int:
    """Poll ``consumer`` until it delivered ``count`` messages, committing each one
    synchronously as it comes; return how many were read (``count``).

    Raises:
        AssertionError: fewer within ``timeout_s`` seconds.
    """
    read = 0

    def enough() -> bool:
        nonlocal read
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            read += 1
            consumer.commit(message=m, asynchronous=False)
        return read >= count

    eventually(enough, timeout_s, interval_s=0, retry_on=(), message=f"{count}")
    return read


def read_settled(
    consumer: Any, expect: int, timeout_s: float = 30, quiet_s: float = 1.0
) -> list[bytes]:
    """The values ``consumer`` delivers until it has ``expect`` of them and then
    nothing more for ``quiet_s`` seconds (so an extra record would be seen).

    Raises:
        AssertionError: not settled within ``timeout_s`` seconds.
    """
    got: list[bytes] = []
    last = time.monotonic()

    def settled() -> bool:
        nonlocal last
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m.value())
            last = time.monotonic()
        return len(got) >= expect and time.monotonic() - last > quiet_s

    eventually(settled, timeout_s, interval_s=0, retry_on=(), message=lambda: f"{got}")
    return got


def read_into(consumer: Any, seen: list[int], count: int, timeout_s: float) -> None:
    """Poll ``consumer`` until ``seen`` holds ``count`` values, appending each
    delivered message's value as an int (the tests write ``b"%d" % i``).

    Raises:
        AssertionError: fewer within ``timeout_s`` seconds.
    """

    def enough() -> bool:
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            seen.append(int(m.value()))
        return len(seen) >= count

    eventually(enough, timeout_s, interval_s=0, retry_on=(), message=lambda: f"{seen}")


def read_values(consumer: Any, count: int, timeout_s: float = 30) -> list[bytes]:
    """The values a kafka-python ``KafkaConsumer`` returns from ``poll`` until it
    has returned ``count`` of them (or more, when one poll brings more).

    Raises:
        AssertionError: fewer within ``timeout_s`` seconds.
    """
    got: list[bytes] = []

    def enough() -> bool:
        for records in consumer.poll(500).values():
            got.extend(r.value for r in records)
        return len(got) >= count

    eventually(enough, timeout_s, interval_s=0, retry_on=(), message=lambda: f"{got}")
    return got
