"""Options, offsets JSON, rate limit and range splitting of ``kproto-kafka`` (no Spark
job: these run in the test process)."""

from __future__ import annotations

import pytest

from kproto.spark._kafka_options import (
    KafkaOptionError,
    OffsetRange,
    OffsetSpec,
    check_batch_specs,
    offsets_from_json,
    offsets_to_json,
    parse_options,
    rate_limit,
    split_ranges,
)

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_parse_spark_names_any_case() -> None:
    opts = parse_options(
        {
            **BASE,
            "Subscribe": "a, b",
            "startingOffsets": '{"a":{"0":5,"1":-2}}',
            "endingTimestamp": "1700000000000",
            "MAXOFFSETSPERTRIGGER": "100",
            "minPartitions": "4",
            "includeHeaders": "true",
            "failOnDataLoss": "false",
            "kafka.isolation.level": "read_committed",
        }
    )
    assert opts.subscribe == ("a", "b")
    assert opts.starting == OffsetSpec("offsets", {("a", 0): 5, ("a", 1): -2})
    assert opts.ending == OffsetSpec("timestamp", 1700000000000)
    assert (opts.max_offsets_per_trigger, opts.min_partitions) == (100, 4)
    assert opts.include_headers and not opts.fail_on_data_loss
    assert opts.isolation_level == 1


def test_options_spark_adds_are_ignored() -> None:
    opts = parse_options(
        {**BASE, "subscribe": "t", "checkpointLocation": "/x", "path": "/y"}
    )
    assert opts.subscribe == ("t",)


def test_by_timestamp_wins_over_offsets() -> None:
    opts = parse_options(
        {
            **BASE,
            "assign": '{"t":[1,0]}',
            "startingOffsets": "earliest",
            "startingOffsetsByTimestamp": '{"t":{"0":10,"1":20}}',
        }
    )
    assert opts.assign == (("t", 0), ("t", 1))
    assert opts.starting == OffsetSpec("timestamps", {("t", 0): 10, ("t", 1): 20})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "t"}, "'kafka.bootstrap.servers' is required"),
        ({**BASE}, "exactly one of"),
        ({**BASE, "subscribe": "t", "assign": '{"t":[0]}'}, "exactly one of"),
        ({**BASE, "subscribe": "t", "startingOffsets": "{"}, "not valid JSON"),
        ({**BASE, "subscribe": "t", "startingOffsets": '{"t":[0]}'}, "must map"),
        ({**BASE, "subscribe": "t", "maxOffsetsPerTrigger": "0"}, "must be > 0"),
        ({**BASE, "subscribe": "t", "failOnDataLoss": "yes"}, "true or false"),
        ({**BASE, "subscribePattern": "("}, "subscribePattern"),
        ({**BASE, "subscribe": "t", "kafka.sasl.mechanism": "PLAIN"}, "no SASL"),
        ({**BASE, "subscribe": "t", "minOffsetsPerTrigger": "5"}, "minoffsets"),
        ({**BASE, "subscribe": "t", "kafka.max.poll.records": "5"}, "max.poll"),
        ({**BASE, "subscribe": "t", "kafka.isolation.level": "x"}, "read_committed"),
        (
            {**BASE, "subscribe": "t", "kafka.security.protocol": "SSL"},
            "security.protocol=SSL",
        ),
    ],
)
def test_bad_options_are_named(options: dict[str, str], message: str) -> None:
    with pytest.raises(KafkaOptionError, match=message):
        parse_options(options)


def test_batch_refuses_latest_start_and_earliest_end() -> None:
    for key, value in (
        ("startingOffsets", "latest"),
        ("startingOffsets", '{"t":{"0":-1}}'),
        ("endingOffsets", "earliest"),
        ("endingOffsets", '{"t":{"0":-2}}'),
    ):
        opts = parse_options({**BASE, "subscribe": "t", key: value})
        with pytest.raises(KafkaOptionError, match="not allowed in a batch"):
            check_batch_specs(opts)


def test_offsets_json_round_trip() -> None:
    offsets = {("b", 1): 7, ("a", 0): 3, ("a", 10): 0}
    as_json = offsets_to_json(offsets)
    assert as_json == {"a": {"0": 3, "10": 0}, "b": {"1": 7}}
    import json

    assert offsets_from_json(json.dumps(as_json)) == offsets


def test_rate_limit_is_proportional_to_backlog() -> None:
    start = {("t", 0): 0, ("t", 1): 100}
    latest = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}  # t-2 new: no share
    assert rate_limit(start, latest, 1000) == latest
    # backlogs 300 and 100 of 400: 100 records split 75 / 25
    assert rate_limit(start, latest, 100) == {("t", 0): 75, ("t", 1): 125, ("t", 2): 50}
    # a share below one record rounds up (Spark: ceil when < 1)
    tiny = rate_limit({("t", 0): 0, ("t", 1): 0}, {("t", 0): 1000, ("t", 1): 1}, 10)
    assert tiny == {("t", 0): 9, ("t", 1): 1}


def test_split_ranges_min_partitions_and_max_records() -> None:
    ranges = [OffsetRange("t", 0, 0, 1000), OffsetRange("t", 1, 0, 10)]
    pieces = split_ranges(ranges, 4, None)
    assert [(r.partition, r.start, r.end) for r in pieces] == [
        (0, 0, 250),
        (0, 250, 500),
        (0, 500, 750),
        (0, 750, 1000),
        (1, 0, 10),
    ]
    pieces = split_ranges(ranges, None, 400)
    assert [r.size for r in pieces] == [333, 333, 334, 10]
    # empty ranges give no task; enough ranges are left alone
    assert split_ranges([OffsetRange("t", 0, 5, 5)], 8, None) == []
    assert split_ranges(ranges, 2, None) == ranges
