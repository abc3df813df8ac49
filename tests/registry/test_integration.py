"""How the registry is started: the CLI, the pytest fixture, and without aiohttp."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import requests

from tests.fresh_interpreter import run_python

pytest_plugins = ["pytester"]

ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
KPROTO_BROKER = [sys.executable, "-m", "kproto", "broker"]

# Runs with aiohttp unimportable, as after a plain ``pip install kproto``.
WITHOUT_AIOHTTP = """
import sys
sys.modules["aiohttp"] = None  # import aiohttp -> ImportError
import kproto.broker
from kproto.broker import Cluster
try:
    Cluster(schema_registry=True)
except RuntimeError as exc:
    print("ERROR", exc)
with Cluster() as cluster:
    print("PLAIN", cluster.bootstrap_servers)
from kproto.cli import main
sys.argv = ["kproto", "broker", "--help"]
try:
    main()
except SystemExit as exc:
    print("HELP", exc.code)
"""


def test_broker_runs_without_aiohttp() -> None:
    out = run_python(WITHOUT_AIOHTTP, env=ENV).stdout
    assert "ERROR schema_registry=True needs the registry extra" in out
    assert "kproto[registry]" in out
    assert "PLAIN 127.0.0.1:" in out
    assert "--schema-registry" in out and "HELP 0" in out


def test_cli_prints_the_registry_url(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [*KPROTO_BROKER, "--schema-registry", "--data-dir", str(tmp_path)],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        bootstrap = process.stdout.readline().strip()
        url = process.stdout.readline().strip()
        assert bootstrap.startswith("127.0.0.1:")
        assert url.startswith("http://127.0.0.1:")
        response = requests.post(
            f"{url}/subjects/cli-value/versions",
            json={"schema": '"string"'},
            timeout=10,
        )
        assert response.json()["id"] == 1
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert (tmp_path / "_schemas-0").is_dir()


def test_pytest_fixture(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", ENV["PYTHONPATH"])
    pytester.makepyfile(textwrap.dedent("""
            import pytest
            from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

            def test_fixture(schema_registry_url, kafka_cluster):
                assert schema_registry_url == kafka_cluster.schema_registry_url
                client = SchemaRegistryClient({"url": schema_registry_url})
                assert client.register_schema("x-value", Schema('"int"', "AVRO")) == 1

            @pytest.mark.kafka_cluster(schema_registry=True)
            def test_marker(kafka_cluster):
                client = SchemaRegistryClient(kafka_cluster.schema_registry_config())
                assert client.get_subjects() == []

            def test_off_by_default(kafka_cluster):
                assert kafka_cluster.schema_registry is None
            """))
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=3)


def test_cli_registry_port_taken() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*KPROTO_BROKER, "--schema-registry", "--schema-registry-port", str(port)],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"kproto: error: cannot listen on 127.0.0.1:{port}: address already in use"
    ]
