"""Every avro test module runs on both decoders: the C one (kproto._avro, when built
and not switched off with ``KPROTO_NO_EXTENSIONS=1``) and the Python reference.

Module scope keeps it compatible with hypothesis (no function-scoped fixture under
``@given``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kproto import speedups
from kproto.avro import _native

PATHS = (
    ["native", "python"] if _native.available() and speedups.available() else ["python"]
)


@pytest.fixture(scope="module", params=PATHS, autouse=True)
def avro_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """The decoder the module's tests run on: "native" or "python"."""
    with speedups.using(request.param == "native"):
        yield request.param
