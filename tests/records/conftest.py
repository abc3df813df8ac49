"""Every records test runs on both implementations of the magic 2 record loops.

The module-scoped autouse fixture below runs each test module once with the C loops of
``kproto._speedups`` (when the extension is built and not switched off with
``KPROTO_NO_EXTENSIONS=1``) and once with the pure-Python reference loops, so the
golden, interop, error and property tests hold on both paths. Module scope keeps it
compatible with hypothesis (no function-scoped fixture under ``@given``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kproto import speedups

PATHS = ["native", "python"] if speedups.available() else ["python"]


@pytest.fixture(scope="module", params=PATHS, autouse=True)
def records_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """The implementation the module's tests run on: "native" or "python"."""
    with speedups.using(request.param == "native"):
        yield request.param
