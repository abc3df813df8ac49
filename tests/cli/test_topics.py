"""``kproto topics`` against the in-process broker, in kafka-topics.sh's layout,
and the one-line errors of the network commands."""

from __future__ import annotations

import socket
import uuid

import pytest

from kproto.broker import Cluster
from kproto.cli import main
from kproto.cli.topics import describe_lines
from kproto.client import PartitionDescription, TopicDescription


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_describe_layout() -> None:
    """TopicCommand's lines: Kafka's Uuid text, non-default configs, leader
    ``none``, ELR ``N/A`` (Metadata carries none)."""
    topic = TopicDescription(
        "orders",
        uuid.UUID("02a5cc8c-9f09-4e6e-9be2-d801912ed818"),
        False,
        (
            PartitionDescription(0, 1, (1, 2, 3), (1, 2)),
            PartitionDescription(1, -1, (2, 3, 1), ()),
        ),
    )
    assert describe_lines(topic, [("retention.ms", "60000"), ("x", "y")]) == [
        "Topic: orders\tTopicId: AqXMjJ8JTm6b4tgBkS7YGA\tPartitionCount: 2\t"
        "ReplicationFactor: 3\tConfigs: retention.ms=60000,x=y",
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\t"
        "Elr: N/A\tLastKnownElr: N/A",
        "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 2,3,1\tIsr: \t"
        "Elr: N/A\tLastKnownElr: N/A",
    ]


def test_create_list_describe_delete(
    kafka_cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    bs = f"--bootstrap-server={kafka_cluster.bootstrap_servers}"
    assert run(
        capsys, "topics", "create", bs, "orders", "--partitions", "2",
        "--replication-factor", "1", "--config", "retention.ms=60000",
    ) == (0, "Created topic orders.\n", "")  # fmt: skip
    code, out, err = run(capsys, "topics", "create", bs, "orders")
    assert code == 2 and out == ""
    assert (
        err.startswith("kproto: error: TOPIC_ALREADY_EXISTS") and err.count("\n") == 1
    )
    assert run(capsys, "topics", "create", bs, "orders", "--if-not-exists") == (
        0,
        "",
        "",
    )
    kafka_cluster.create_topic("a-first", 1)
    assert run(capsys, "topics", "list", bs) == (0, "a-first\norders\n", "")

    code, out, err = run(capsys, "topics", "describe", bs, "orders")
    assert code == 0 and err == ""
    lines = out.splitlines()
    head = lines[0].split("\t")
    assert head[0] == "Topic: orders" and head[1].startswith("TopicId: ")
    assert len(head[1]) == len("TopicId: ") + 22  # Kafka's base64 Uuid
    assert head[2:] == [
        "PartitionCount: 2",
        "ReplicationFactor: 1",
        "Configs: retention.ms=60000",
    ]
    assert lines[1:] == [
        f"\tTopic: orders\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1\t"
        "Elr: N/A\tLastKnownElr: N/A"
        for p in (0, 1)
    ]

    assert run(capsys, "topics", "delete", bs, "orders") == (0, "", "")
    code, out, err = run(capsys, "topics", "describe", bs, "orders")
    assert code == 2
    assert err.startswith(
        "kproto: error: UNKNOWN_TOPIC_OR_PARTITION at Metadata orders"
    )
    assert run(capsys, "topics", "delete", bs, "orders", "--if-exists") == (0, "", "")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--partitions", "0"], "--partitions: the partitions must be greater than 0"),
        (["--config", "novalue"], "--config 'novalue': expected name=value"),
    ],
)
def test_create_refuses_bad_arguments(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "topics", "create", "--bootstrap-server=127.0.0.1:9", "t", *argv
    )
    assert (code, err) == (2, f"kproto: error: {message}\n")


def test_unreachable_broker_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connection refused
        code, out, err = run(
            capsys, "topics", "list", f"--bootstrap-server=127.0.0.1:{port}",
            "--request-timeout-ms", "2000",
        )  # fmt: skip
    assert code == 2 and out == ""
    assert err.startswith(f"kproto: error: 127.0.0.1:{port}: ") and err.count("\n") == 1


def test_bootstrap_server_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "groups", "list", "--bootstrap-server=nohostport")
    assert code == 2
    assert err.startswith("kproto: error: --bootstrap-server: bootstrap server")
    with pytest.raises(SystemExit) as exc:
        main(["topics", "list"])
    assert exc.value.code == 2
    assert "--bootstrap-server" in capsys.readouterr().err
