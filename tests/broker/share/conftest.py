"""The share-group tests' cluster: one per test module, share groups configured
(:data:`~tests.broker.share.support.SHARE_CONFIGS`), ShareFetch requests kept."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kproto.broker import Cluster
from tests.broker.share.support import SHARE_CONFIGS


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(share_configs=SHARE_CONFIGS, request_log_size=5000) as c:
        yield c
