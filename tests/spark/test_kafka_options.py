"""Options, offsets JSON, rate limit and range splitting of ``kproto-kafka`` (no Spark
job: these run in the test process)."""

from __future__ import annotations

import pickle

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
from kproto.spark._kafka_security import KafkaSecurityError, parse_security

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
        (
            {**BASE, "subscribe": "t", "kafka.sasl.mechanism": "PLAIN"},
            "SASL needs SASL_PLAINTEXT or SASL_SSL",
        ),
        ({**BASE, "subscribe": "t", "kafka.ssl.keystore.location": "k"}, "PEM"),
        ({**BASE, "subscribe": "t", "minOffsetsPerTrigger": "5"}, "minoffsets"),
        ({**BASE, "subscribe": "t", "kafka.max.poll.records": "5"}, "max.poll"),
        ({**BASE, "subscribe": "t", "kafka.isolation.level": "x"}, "read_committed"),
        (
            {**BASE, "subscribe": "t", "kafka.security.protocol": "SSL3"},
            "must be one of PLAINTEXT, SSL",
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


JAAS_PLAIN = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="alice" password="p@ss \\"w0rd\\"";'
)


def test_security_options_map_to_the_client() -> None:
    opts = parse_options(
        {
            **BASE,
            "subscribe": "t",
            "kafka.security.protocol": "sasl_ssl",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": JAAS_PLAIN,
            "kafka.ssl.truststore.location": "/ca.pem",
            "kafka.ssl.truststore.type": "PEM",
        }
    )
    security = opts.security
    assert (security.protocol, security.mechanism, security.username) == (
        "SASL_SSL",
        "PLAIN",
        "alice",
    )
    assert security.password.reveal() == 'p@ss "w0rd"'
    assert security.ca_location == "/ca.pem" and security.check_hostname
    sasl = security.sasl()
    assert sasl is not None and sasl.password.reveal() == 'p@ss "w0rd"'
    # The password shows nowhere: options repr, pickled options' repr.
    assert "w0rd" not in repr(opts) and "w0rd" not in str(opts)
    assert pickle.loads(pickle.dumps(opts)) == opts


def test_scram_jaas_bare_values_and_no_hostname_check() -> None:
    security = parse_security(
        {
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram."
            "ScramLoginModule required username=bob password=s3cret",
        }
    )
    assert (security.username, security.password.reveal()) == ("bob", "s3cret")
    assert security.ssl_context() is None
    tls = parse_security(
        {
            "kafka.security.protocol": "SSL",
            "kafka.ssl.endpoint.identification.algorithm": "",
        }
    )
    assert tls.sasl() is None and not tls.check_hostname


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"kafka.security.protocol": "SASL_SSL"}, "GSSAPI, is not supported"),
        (
            {"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN"},
            "needs option 'kafka.sasl.jaas.config'",
        ),
        (
            {
                "kafka.security.protocol": "SASL_SSL",
                "kafka.sasl.mechanism": "SCRAM-SHA-256",
                "kafka.sasl.jaas.config": JAAS_PLAIN,
            },
            "PlainLoginModule does not serve SASL SCRAM-SHA-256",
        ),
        (
            {
                "kafka.security.protocol": "SASL_SSL",
                "kafka.sasl.mechanism": "PLAIN",
                "kafka.sasl.jaas.config": JAAS_PLAIN.replace('username="alice"', ""),
            },
            "no username",
        ),
        (
            {
                "kafka.security.protocol": "SASL_SSL",
                "kafka.sasl.mechanism": "PLAIN",
                "kafka.sasl.jaas.config": JAAS_PLAIN[:-1] + " {oops};",
            },
            "cannot parse",
        ),
        (
            {"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": "t"},
            "truststore.type=JKS is not supported",
        ),
        (
            {"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "GSSAPI"},
            "not 'GSSAPI'",
        ),
    ],
)
def test_bad_security_options_never_show_the_password(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(KafkaSecurityError, match=message) as info:
        parse_security(options)
    assert "w0rd" not in str(info.value)
