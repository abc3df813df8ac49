import itertools
import time

import pytest

from tests.eventually import during, eventually


def test_returns_first_truthy_value() -> None:
    counter = itertools.count()
    assert (
        eventually(lambda: next(counter) >= 3 and "done", 2.0, interval_s=0) == "done"
    )


def test_times_out_naming_the_message_and_chains_the_last_error() -> None:
    def failing() -> bool:
        raise KeyError("missing")

    with pytest.raises(AssertionError, match="the thing") as info:
        eventually(failing, 0.05, message="the thing")
    assert isinstance(info.value.__cause__, KeyError)


def test_an_exception_outside_retry_on_propagates_at_once() -> None:
    calls = itertools.count()

    def step() -> bool:
        next(calls)
        raise AssertionError("took a bad message")

    with pytest.raises(AssertionError, match="took a bad message"):
        eventually(step, 5.0, retry_on=())
    assert next(calls) == 1  # called once: not retried until the timeout


def test_during_calls_the_step_for_the_whole_period() -> None:
    calls = itertools.count()
    started = time.monotonic()
    during(lambda: next(calls) or time.sleep(0.01), 0.1)
    assert time.monotonic() - started >= 0.1
    assert next(calls) >= 5
