"""Share-group settings by Kafka property name: defaults, overrides, refusals."""

from __future__ import annotations

import pytest

from kproto.broker import Cluster
from kproto.broker.share import GROUP_PROPERTIES, ShareConfig


def test_defaults_are_kafkas() -> None:
    config = ShareConfig()
    assert config.record_lock_duration_ms == 30_000
    assert config.delivery_count_limit == 5
    assert config.partition_max_record_locks == 2000
    assert config.auto_offset_reset == "latest"


def test_properties_and_group_overrides() -> None:
    config = ShareConfig.from_properties(
        {
            "group.share.record.lock.duration.ms": "500",
            "share.auto.offset.reset": "earliest",
        }
    )
    assert (config.record_lock_duration_ms, config.auto_offset_reset) == (
        500,
        "earliest",
    )
    group = config.with_properties(
        {"share.delivery.count.limit": "2"}, GROUP_PROPERTIES
    )
    assert (group.delivery_count_limit, group.record_lock_duration_ms) == (2, 500)


@pytest.mark.parametrize(
    ("properties", "match"),
    [
        ({"group.share.nope": 1}, "unknown share-group property 'group.share.nope'"),
        ({"group.share.delivery.count.limit": "five"}, "must be an integer"),
        ({"group.share.delivery.count.limit": 0}, "delivery_count_limit must be >= 1"),
        ({"share.auto.offset.reset": "middle"}, "'earliest' or 'latest'"),
    ],
)
def test_bad_settings_are_refused_by_name(
    properties: dict[str, object], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        ShareConfig.from_properties(properties)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=match):
        Cluster(share_configs=properties)  # type: ignore[arg-type]
