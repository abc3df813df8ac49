"""The CLI on a plain install (``pip install .``: attrs, crc32c, cramjam, no extras).

Runs only when ``KPROTO_PLAIN_PYTHON`` names the interpreter of such an install
(``make test-plain-install`` builds one in ``.venv-plain`` and sets it): each test
runs ``python -m kproto ...`` there as a subprocess, with bounded timeouts; the
inputs are made here, in the test's own environment. The broker test also runs the
network commands (produce with lz4, consume, topics list) from the plain install.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
from pathlib import Path

import pytest

from kproto.framing import encode_request
from kproto.records import Compression, encode_batch
from kproto.schema.metadata.v12 import MetadataRequest
from kproto.schema.metadata.v12.request import MetadataRequestTopic

PLAIN_PYTHON = os.environ.get("KPROTO_PLAIN_PYTHON")

pytestmark = pytest.mark.skipif(
    not PLAIN_PYTHON, reason="set KPROTO_PLAIN_PYTHON (make test-plain-install)"
)


def _env() -> dict[str, str]:
    # nothing from this checkout or this environment may leak into the plain one
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


def plain_python(
    *args: str, cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python ARGS...`` of the plain install (60 s at the most), ``stdin`` its input."""
    assert PLAIN_PYTHON
    return subprocess.run(
        [PLAIN_PYTHON, *args],
        input=stdin,
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def kproto(
    *argv: str, cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return plain_python("-m", "kproto", *argv, cwd=cwd, stdin=stdin)


def test_the_interpreter_is_a_plain_install(tmp_path: Path) -> None:
    assert PLAIN_PYTHON
    code = (
        "import importlib.util as u, kproto; "
        "print(kproto.__file__); "
        "print([m for m in ('pyspark', 'pyarrow', 'pandas', 'pytest') if u.find_spec(m)])"
    )
    done = plain_python("-c", code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    where, extras = done.stdout.splitlines()
    assert "site-packages" in where  # installed, not this checkout's src/
    assert extras == "[]"


def test_help_and_version(tmp_path: Path) -> None:
    done = kproto("--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for command in ("dump-log", "decode", "describe", "broker", "spark"):
        assert command in done.stdout
    done = kproto("--version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.startswith("kproto 0.") and "Kafka message schemas" in done.stdout
    )


def test_dump_log(tmp_path: Path) -> None:
    segment = tmp_path / "orders-3" / "00000000000000000000.log"
    segment.parent.mkdir()
    segment.write_bytes(
        encode_batch([(b"k", b"v", [], 1000)], compression=Compression.GZIP)
        + encode_batch([(None, b"w", [], 1001)], base_offset=1)
    )
    done = kproto("dump-log", "--json", str(segment), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["topic"], r["partition"], r["offset"]) for r in rows] == [
        ("orders", 3, 0),
        ("orders", 3, 1),
    ]
    assert [r["compression"] for r in rows] == ["gzip", "none"]


def test_decode_and_describe(tmp_path: Path) -> None:
    frame = tmp_path / "request.bin"
    frame.write_bytes(
        encode_request(
            MetadataRequest(topics=(MetadataRequestTopic(name="orders"),)),
            correlation_id=7,
            client_id="smoke",
        )
    )
    done = kproto("decode", "--request", str(frame), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["type"], out["api_version"]) == ("MetadataRequest", 12)
    assert out["body"]["topics"][0]["name"] == "orders"
    done = kproto("describe", "Metadata", "--version", "12", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("MetadataRequest v12 (api_key 3)")


def test_broker_start_and_stop(tmp_path: Path) -> None:
    assert PLAIN_PYTHON
    data = tmp_path / "data"
    proc = subprocess.Popen(
        [
            PLAIN_PYTHON,
            "-m",
            "kproto",
            "broker",
            "--port",
            "0",
            "--data-dir",
            str(data),
        ],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            assert sel.select(timeout=60), "no 'listening' line within 60 s"
        bootstrap = proc.stdout.readline().strip()
        host, _, port = bootstrap.partition(":")
        assert host == "127.0.0.1" and port.isdigit(), bootstrap
        # the network commands, from the same plain install, against it
        produced = kproto(
            "produce",
            "smoke",
            "--compression",
            "lz4",
            "--bootstrap-server",
            bootstrap,
            cwd=tmp_path,
            stdin="a\nb\n",
        )
        assert produced.returncode == 0, produced.stderr
        consumed = kproto(
            "consume",
            "smoke",
            "--from-beginning",
            "--max-messages",
            "2",
            "--bootstrap-server",
            bootstrap,
            cwd=tmp_path,
        )
        assert (consumed.returncode, consumed.stdout) == (0, "a\nb\n"), consumed.stderr
        listed = kproto("topics", "list", "--bootstrap-server", bootstrap, cwd=tmp_path)
        assert listed.returncode == 0, listed.stderr
        assert "smoke" in listed.stdout.split()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert (data / "smoke-0").is_dir()
    assert "smoke" in (data / "kproto-topics.json").read_text()
    dumped = kproto("dump-log", str(data / "smoke-0"), cwd=tmp_path)
    assert dumped.returncode == 0, dumped.stderr
    assert "compresscodec: lz4" in dumped.stdout


def test_spark_prints_how_to_install_it(tmp_path: Path) -> None:
    done = kproto("spark", "segments", str(tmp_path), "--out", "out", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "kproto: error: kproto spark needs pyspark, pyarrow, pandas: "
        "pip install 'kproto[spark]'\n"
    )
    assert done.stdout == ""


def test_errors_are_one_line(tmp_path: Path) -> None:
    done = kproto("dump-log", str(tmp_path / "missing.log"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        f"kproto: error: cannot read {tmp_path / 'missing.log'}: "
        "No such file or directory\n"
    )
    done = kproto("broker", "--partitions", "0", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "kproto: error: broker: argument --partitions: must be > 0, got 0"
    )
