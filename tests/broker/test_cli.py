"""``kproto broker --override key=value``: Kafka broker properties on the command
line, as ``kafka-server-start.sh --override`` takes them."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from kproto.cli import main
from kproto.connection import Connection
from kproto.index import ApiKey
from kproto.kafka_releases import KAFKA_RELEASES

ck = pytest.importorskip("confluent_kafka")
admin = pytest.importorskip("confluent_kafka.admin")


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--override", "node.id=x"],
            "kproto: error: Invalid value x for configuration node.id: "
            "Not a number of type INT",
        ),
        (
            ["--override", "num.partition=2"],
            "kproto: error: Unknown broker config num.partition (given 2): "
            "kproto.broker.broker_config.BROKER_CONFIGS lists the supported ones",
        ),
        (
            ["--override", "log.cleanup.policy=shred"],
            "kproto: error: Invalid value shred for configuration "
            "log.cleanup.policy: String must be one of: compact, delete",
        ),
        (
            ["--data-dir", "/tmp", "--override", "log.dirs=/var/tmp"],
            "kproto: error: --data-dir and --override log.dirs both set the data "
            "directory",
        ),
        (
            ["--partitions", "2", "--override", "num.partitions=3"],
            "kproto: error: --partitions and --override num.partitions both set "
            "num.partitions",
        ),
        (
            ["--as-version", "3.10"],
            "kproto: error: Invalid value 3.10 for configuration "
            "kproto.emulate.version: unknown Kafka release '3.10': the known "
            "releases are " + ", ".join(KAFKA_RELEASES),
        ),
        (
            ["--as-version", "3.7", "--override", "kproto.emulate.version=3.6"],
            "kproto: error: --as-version and --override kproto.emulate.version both "
            "set kproto.emulate.version",
        ),
        (
            ["--override", "node.id"],
            "kproto: error: broker: argument --override: wants KEY=VALUE, "
            "got 'node.id'",
        ),
    ],
)
def test_bad_overrides_are_one_error_line(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(["broker", *argv])
    except SystemExit as exc:  # argparse's own refusal
        code = int(exc.code or 0)
    assert code == 2
    assert _error(capsys) == line


@contextlib.contextmanager
def broker_process(*overrides: str) -> Iterator[str]:
    """``python -m kproto broker --override KEY=VALUE ...`` in a child process, its
    bootstrap address (the first line it prints) while the block runs; SIGINT
    then, and the process must exit with 0 within 30 s."""
    argv = [sys.executable, "-m", "kproto", "broker"]
    for override in overrides:
        argv += ["--override", override]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_overrides_configure_the_running_broker() -> None:
    with broker_process(
        "node.id=0", "num.partitions=3", "log.retention.ms=60000"
    ) as bootstrap:
        a = admin.AdminClient({"bootstrap.servers": bootstrap})
        assert list(a.list_topics(timeout=10).brokers) == [0]
        a.create_topics([admin.NewTopic("cli", -1)])["cli"].result(10)
        assert len(a.list_topics("cli", timeout=10).topics["cli"].partitions) == 3
        res = admin.ConfigResource("broker", "0")
        described = a.describe_configs([res])[res].result(10)
        retention = described["log.retention.ms"]
        assert retention.value == "60000"
        assert retention.source == admin.ConfigSource.STATIC_BROKER_CONFIG.value


def test_test_controls_from_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with broker_process(
        "kproto.seed.topics=orders:3,events",
        "group.initial.rebalance.delay.ms=0",
        "kproto.emulate.version=3.7",
        "kproto.api.versions=DESCRIBE_CLUSTER:none",  # on top of 3.7's list
    ) as bootstrap:
        a = admin.AdminClient({"bootstrap.servers": bootstrap})
        topics = a.list_topics(timeout=10).topics
        assert len(topics["orders"].partitions) == 3
        assert len(topics["events"].partitions) == 1  # num.partitions
        res = admin.ConfigResource("broker", "1")
        described = a.describe_configs([res])[res].result(10)
        assert described["group.initial.rebalance.delay.ms"].value == "0"
        host, port = bootstrap.split(":")
        with Connection(host, int(port), timeout_s=10) as conn:
            conn.negotiate()
            assert conn.broker_api_versions is not None
            assert ApiKey.DESCRIBE_CLUSTER not in conn.broker_api_versions
            assert conn.broker_api_versions[ApiKey.METADATA] == (0, 12)  # Kafka 3.7
    assert main(["broker", "--override", "kproto.seed.topics=orders:0"]) == 2
    assert _error(capsys) == (
        "kproto: error: Invalid value orders:0 for configuration kproto.seed.topics: "
        "'orders:0' is not topic or topic:partitions (partitions >= 1)"
    )
    assert main(["broker", "--override", "kproto.api.versions=produce:7"]) == 2
    assert _error(capsys) == (
        "kproto: error: Invalid value produce:7 for configuration "
        "kproto.api.versions: 'produce:7' is not NAME:MIN-MAX or NAME:none"
    )
    assert main(["broker", "--override", "kproto.api.versions=fetch:0-99"]) == 2
    assert _error(capsys).startswith("kproto: error: FETCH versions 0..99 are not")
