import itertools

import pytest

from tests.eventually import eventually


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
