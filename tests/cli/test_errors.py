"""Every CLI failure a user can cause is one ``kproto: error:`` line and exit status
2, before any slow start-up; ``--debug`` adds the traceback. Run in-process."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.cli import main
from kproto.records import encode_batch


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line (after argparse's usage lines, if any); no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert lines and lines[-1].startswith("kproto: error: "), err
    return lines[-1]


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    return _error(capsys)


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


# ----------------------------------------------------------------- kproto itself


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"kproto {importlib.metadata.version('kproto')} (")
    assert "Kafka message schemas: kafka-" in out


def test_unknown_command_names_kproto(capsys: pytest.CaptureFixture[str]) -> None:
    line = _usage_error(["no-such-command"], capsys)
    assert line.startswith("kproto: error: argument {dump-log,decode,describe,")
    assert "invalid choice: 'no-such-command'" in line
    line = _usage_error(["spark"], capsys)
    assert line == (
        "kproto: error: spark: the following arguments are required: "
        "{segments,internal-topic}"
    )


def test_debug_shows_the_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.log"
    for argv in (
        ["--debug", "dump-log", str(missing)],
        ["dump-log", str(missing), "--debug"],  # after the subcommand too
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "Traceback (most recent call last)" in err
        assert err.splitlines()[-1] == (
            f"kproto: error: cannot read {missing}: No such file or directory"
        )


# ----------------------------------------------------------------- broker


def test_broker_port_in_use(
    taken_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["broker", "--port", str(taken_port)]) == 2
    assert _error(capsys) == (
        f"kproto: error: cannot listen on 127.0.0.1:{taken_port}: address already "
        "in use (choose another --port, or 0 for any free one)"
    )


def test_broker_second_node_port_in_use(
    taken_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = taken_port - 1
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", first))
        except OSError:
            pytest.skip(f"port {first} is in use too")
    argv = ["broker", "--port", str(first), "--nodes", "2", "--data-dir", str(tmp_path)]
    assert main(argv) == 2
    assert _error(capsys).startswith(
        f"kproto: error: cannot listen on 127.0.0.1:{taken_port}: address already in use"
    )
    # node 1 (on the first port) was closed again, and nothing was saved
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", first))
    assert not (tmp_path / "kproto-topics.json").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--port", "70000"], "argument --port: 70000 is not a port number (0-65535)"),
        (["--port", "-1"], "argument --port: -1 is not a port number (0-65535)"),
        (["--port", "x"], "argument --port: 'x' is not a port number"),
        (["--partitions", "0"], "argument --partitions: must be > 0, got 0"),
        (["--partitions", "-2"], "argument --partitions: must be > 0, got -2"),
        (["--nodes", "0"], "argument --nodes: must be > 0, got 0"),
    ],
)
def test_broker_arguments_validated(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        _usage_error(["broker", *argv], capsys) == f"kproto: error: broker: {message}"
    )


def test_broker_ports_past_65535(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["broker", "--port", "65535", "--nodes", "2"]) == 2
    assert _error(capsys) == (
        "kproto: error: --port 65535 with --nodes 2 needs ports up to 65536, above 65535"
    )


def test_broker_data_dir_is_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    assert main(["broker", "--data-dir", str(path)]) == 2
    assert _error(capsys) == f"kproto: error: --data-dir {path} is not a directory"
    below = path / "sub"
    assert main(["broker", "--data-dir", str(below)]) == 2
    assert _error(capsys) == (
        f"kproto: error: --data-dir {below}: cannot create it: Not a directory"
    )


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_broker_data_dir_under_proc(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["broker", "--data-dir", "/proc/kproto-data"]) == 2
    assert _error(capsys).startswith(
        "kproto: error: --data-dir /proc/kproto-data: cannot create it: "
    )
    assert main(["broker", "--data-dir", "/proc"]) == 2
    assert _error(capsys).startswith(
        "kproto: error: --data-dir /proc: cannot write there: "
    )


@pytest.mark.parametrize(
    "text, reason",
    [
        ('{"topics": [', "Expecting value: line 1 column 13 (char 12)"),
        ("\xff", "'utf-8' codec can't decode byte 0xff in position 0"),
        ("[]", "no topics list"),
    ],
)
def test_broker_corrupt_topics_file(
    text: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "kproto-topics.json"
    path.write_text(text, encoding="latin-1")
    before = path.read_bytes()
    assert main(["broker", "--data-dir", str(tmp_path)]) == 2
    line = _error(capsys)
    assert line.startswith(f"kproto: error: {path}: not a kproto topics file: ")
    assert reason in line
    assert path.read_bytes() == before  # left for the user to look at


def test_cluster_leaves_a_corrupt_data_dir_as_it_was(tmp_path: Path) -> None:
    from kproto.broker.state import CorruptStateError

    path = tmp_path / "kproto-topics.json"
    path.write_text("{")
    with pytest.raises(CorruptStateError) as info:
        with Cluster(data_dir=tmp_path):
            pass
    assert info.value.path == path
    assert path.read_text() == "{"  # not replaced by an empty topic list


# ----------------------------------------------------------------- files


def test_dump_log_missing_and_unsuitable_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.log"
    assert main(["dump-log", str(missing)]) == 2
    assert _error(capsys) == (
        f"kproto: error: cannot read {missing}: No such file or directory"
    )
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert main(["dump-log", str(plain / "x.log")]) == 2
    assert _error(capsys) == (
        f"kproto: error: cannot read {plain / 'x.log'}: Not a directory"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files without permission")
def test_dump_log_unreadable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(encode_batch([(b"k", b"v", [], 1)]))
    path.chmod(0)
    assert main(["dump-log", str(path)]) == 2
    assert _error(capsys) == f"kproto: error: cannot read {path}: Permission denied"


def test_decode_missing_and_garbage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.bin"
    assert main(["decode", "--request", str(missing)]) == 2
    assert _error(capsys) == (
        f"kproto: error: cannot read {missing}: No such file or directory"
    )
    assert main(["decode", "--request", str(tmp_path)]) == 2  # a directory
    assert _error(capsys) == f"kproto: error: cannot read {tmp_path}: Is a directory"
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(7, 200, 3)))
    assert main(["decode", "--request", str(garbage)]) == 2
    assert _error(capsys).startswith(f"kproto: error: {garbage}: ")
    assert main(["decode", "--response", "--api-key", "3", str(garbage)]) == 2
    assert _error(capsys) == (
        "kproto: error: a response needs --api-key and --api-version"
    )
    garbage.write_bytes(b"\x00\x00\x00\x10" + bytes(16))
    argv = ["decode", "--response", "--api-key", "3", "--api-version", "12"]
    assert main([*argv, str(garbage)]) == 2
    assert _error(capsys).startswith(
        "kproto: error: cannot decode MetadataResponse v12: "
    )


# ----------------------------------------------------------------- spark


@pytest.fixture
def no_spark_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """The error must come before Spark starts: starting it fails the test."""
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("needs the spark extra (without it: the install hint)")
    import kproto.spark.cli

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(kproto.spark.cli, "make_session", refuse)


@pytest.mark.usefixtures("no_spark_start")
def test_spark_inputs_checked_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "out")
    missing = tmp_path / "missing_dir"
    assert main(["spark", "segments", str(missing), "--out", out]) == 2
    assert _error(capsys) == f"kproto: error: no such file or folder: {missing}"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["spark", "segments", str(empty), "--out", out]) == 2
    assert _error(capsys) == f"kproto: error: no .log segments under {empty}"
    (empty / "orders-0").mkdir()
    (empty / "orders-0" / "00000000000000000000.log").write_bytes(b"")
    argv = ["spark", "segments", str(empty), "--out", out]
    assert main([*argv, "--conf", "novalue"]) == 2
    assert _error(capsys) == "kproto: error: --conf expects KEY=VALUE, got 'novalue'"
    assert main([*argv, "--writer", "arrow", "--format", "json"]) == 2
    assert _error(capsys) == "kproto: error: --writer arrow writes Parquet only"
    # a data dir without the topic's <topic>-<partition> directories
    argv = ["spark", "internal-topic", str(empty), "--topic", "__consumer_offsets"]
    assert main([*argv, "--out", out]) == 2
    assert _error(capsys) == (
        f"kproto: error: no .log segments of __consumer_offsets under {empty}"
    )
    argv = ["spark", "internal-topic", str(missing), "--topic", "__consumer_offsets"]
    assert main([*argv, "--out", out]) == 2
    assert _error(capsys) == f"kproto: error: no such file or folder: {missing}"
    nothing = tmp_path / "nothing"
    (nothing / "_temporary").mkdir(parents=True)
    argv = ["spark", "internal-topic", str(nothing), "--topic", "__consumer_offsets"]
    assert main([*argv, "--out", out]) == 2
    assert _error(capsys) == (
        f"kproto: error: no .log segments or parquet files under {nothing}"
    )


def test_spark_without_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in ("pyspark", "pyarrow", "pandas") else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    out = str(tmp_path / "out")
    assert main(["spark", "segments", str(tmp_path), "--out", out]) == 2
    assert _error(capsys) == (
        "kproto: error: kproto spark needs pyspark, pyarrow, pandas: "
        "pip install 'kproto[spark]'"
    )
