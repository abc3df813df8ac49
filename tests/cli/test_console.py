"""``kproto produce`` and ``kproto consume`` against the in-process broker: Kafka's
console producer input (LineMessageReader properties, JSON lines), the console
consumer's DefaultMessageFormatter columns, bounded runs and a clean stop of
``--follow`` on SIGTERM."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time

import pytest

from kproto.broker import Cluster
from kproto.cli import main
from kproto.cli._common import CliError
from kproto.cli.console import format_record, parse_line
from kproto.index import ApiKey
from kproto.records import Compression, Record
from tests.eventually import eventually

from .conftest import Kproto


def test_parse_line_as_line_message_reader() -> None:
    props = {"parse.key": "true", "key.separator": ":", "null.marker": "NULL"}
    assert parse_line("k:v:w", 1, props, False) == (b"k", b"v:w", [], None)
    assert parse_line("NULL:v", 1, props, False) == (None, b"v", [], None)
    headers = {"parse.headers": "true", **props}
    assert parse_line("h1:a,h2:NULL\tk:v", 1, headers, False) == (
        b"k",
        b"v",
        [("h1", b"a"), ("h2", None)],
        None,
    )
    assert parse_line("plain", 1, {}, False) == (None, b"plain", [], None)
    with pytest.raises(CliError, match="stdin line 7: no key separator ':' found"):
        parse_line("novalue", 7, props, False)
    line = '{"key":null,"value":"v","headers":{"h":"x"},"partition":1}'
    assert parse_line(line, 1, {}, True) == (None, b"v", [("h", b"x")], 1)
    with pytest.raises(CliError, match="stdin line 2: unknown field"):
        parse_line('{"vale":"x"}', 2, {}, True)
    with pytest.raises(CliError, match="stdin line 3: not JSON"):
        parse_line("{", 3, {}, True)


def test_format_record_as_default_message_formatter() -> None:
    r = Record(offset=5, timestamp=1700, key=b"k", value=None, headers=(("h", b"1"),))
    every = {
        f"print.{n}": "true"
        for n in ("timestamp", "partition", "offset", "headers", "key")
    }
    assert format_record("t", 2, r, {}, "CreateTime") == "null\n"
    assert format_record("t", 2, r, every, "LogAppendTime") == (
        "LogAppendTime:1700\tPartition:2\tOffset:5\th:1\tk\tnull\n"
    )
    plain = Record(offset=0, timestamp=-1, key=None, value=b"v")
    keyed = {"print.key": "true", "key.separator": " => ", "print.headers": "true"}
    assert (
        format_record("t", 0, plain, keyed, "CreateTime") == "NO_HEADERS => null => v\n"
    )


def test_produce_then_consume(kafka_cluster: Cluster, kproto: Kproto) -> None:
    bs = f"--bootstrap-server={kafka_cluster.bootstrap_servers}"
    kafka_cluster.create_topic("orders", 2)
    assert kproto("produce", bs, "orders", "--key-separator", ":",
        "--header", "app=cli", "--partition", "0", "--compression", "zstd",
        stdin="k1:v1\nk2:v2\n",
    ) == (0, "", "")  # fmt: skip
    lines = '{"key":"j","value":"jv","headers":{"h":"x"},"partition":1}\n\n'
    assert kproto("produce", bs, "orders", "--json", stdin=lines)[0] == 0
    # An empty line is an empty value (LineMessageReader), a JSON input skips it.
    assert kproto("produce", bs, "orders", "--partition", "1", stdin="\n")[0] == 0
    records = kafka_cluster.records("orders", 0)
    assert [(r.key, r.value, r.headers) for r in records] == [
        (b"k1", b"v1", (("app", b"cli"),)),
        (b"k2", b"v2", (("app", b"cli"),)),
    ]
    assert [
        (r.key, r.value, r.headers) for r in kafka_cluster.records("orders", 1)
    ] == [
        (b"j", b"jv", (("h", b"x"),)),
        (None, b"", ()),
    ]

    code, out, err = kproto("consume", bs, "orders", "--from-beginning")
    assert code == 0 and out == "v1\nv2\njv\n\n"
    assert err == "Processed a total of 4 messages\n"
    code, out, _ = kproto("consume", bs, "orders", "--partition", "0",
        "--offset", "1", "--property", "print.key=true", "--property",
        "print.offset=true",
    )  # fmt: skip
    assert out == "Offset:1\tk2\tv2\n"
    code, out, _ = kproto("consume", bs, "orders", "--from-beginning", "--json",
        "--max-messages", "1",
    )  # fmt: skip
    row = json.loads(out)
    assert row == {
        "topic": "orders",
        "partition": 0,
        "offset": 0,
        "timestamp": records[0].timestamp,
        "key": "k1",
        "value": "v1",
        "headers": {"app": "cli"},
    }
    # Kafka's default start is the end: nothing to print, and no wait without --follow.
    assert kproto("consume", bs, "orders")[1:] == (
        "",
        "Processed a total of 0 messages\n",
    )
    started = time.monotonic()
    code, out, _ = kproto("consume", bs, "orders", "--follow", "--timeout-ms", "300")
    assert (code, out) == (0, "") and time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--offset", "3"],
            "--offset needs --partition (as kafka-console-consumer.sh)",
        ),
        (["--partition", "9"], "orders has no partition 9 (partitions 0-0)"),
        (
            ["--partition", "0", "--offset", "x"],
            "--offset 'x': a number, earliest or latest",
        ),
    ],
)
def test_consume_refuses(
    argv: list[str], message: str, kafka_cluster: Cluster, kproto: Kproto
) -> None:
    kafka_cluster.create_topic("orders", 1)
    bs = f"--bootstrap-server={kafka_cluster.bootstrap_servers}"
    code, _, err = kproto("consume", bs, "orders", *argv)
    assert (code, err) == (2, f"kproto: error: {message}\n")


def test_produce_to_a_missing_topic(
    kafka_cluster: Cluster,
    kproto: Kproto,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As Kafka's producer: the topic is created where the broker auto-creates
    topics; elsewhere one error line, before stdin is read."""
    bs = f"--bootstrap-server={kafka_cluster.bootstrap_servers}"
    assert kproto("produce", bs, "fresh", stdin="x\n")[0] == 0
    assert [r.value for r in kafka_cluster.records("fresh")] == [b"x"]
    with Cluster(auto_create_topics=False) as strict:
        bs = f"--bootstrap-server={strict.bootstrap_servers}"
        stdin = io.StringIO("x\n")
        monkeypatch.setattr(sys, "stdin", stdin)
        code = main(["produce", bs, "nope"])
        err = capsys.readouterr().err
        assert stdin.tell() == 0  # nothing read
    assert code == 2
    assert err.startswith("kproto: error: UNKNOWN_TOPIC_OR_PARTITION at Metadata nope")
    assert err.count("\n") == 1


def test_follow_stops_cleanly_on_sigterm(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("live", 1)
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "kproto", "consume", "live", "--follow",
            f"--bootstrap-server={kafka_cluster.bootstrap_servers}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        from kproto.client import Client

        with Client(kafka_cluster.bootstrap_servers, timeout_s=10) as client:
            # the consumer starts at the end: produce once it is fetching
            eventually(
                lambda: kafka_cluster.requests.filter(api_key=ApiKey.FETCH),
                60.0,
                message="the consumer never fetched",
            )
            client.produce("live", [(None, b"hello")], compression=Compression.GZIP)
            assert proc.stdout is not None
            assert proc.stdout.readline() == "hello\n"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert err == "Processed a total of 1 messages\n"
