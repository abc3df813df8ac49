"""The pytest11 plugin: the ``kafka_cluster`` marker, ``kafka_cluster_factory``, and
loading without the broker (each case run as a project using the plugin would)."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("confluent_kafka")

pytest_plugins = ["pytester"]

# Every run is a subprocess: an in-process run drops the broker modules it imported
# from sys.modules afterwards, and the outer session's broker would import them anew.

# One project using the fixtures as docs/guide/broker.md shows; run by pytester.
PROJECT = """
import socket

import pytest
from confluent_kafka.admin import AdminClient

pytestmark = pytest.mark.kafka_cluster(configs={"num.partitions": "4"})
MADE = []


def brokers(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    return sorted(admin.list_topics(timeout=10).brokers)


@pytest.mark.kafka_cluster(
    nodes=3, auto_create_topics=False, configs={"log.segment.bytes": 1048576}
)
def test_marker(kafka_cluster):
    assert brokers(kafka_cluster) == [1, 2, 3]
    state = kafka_cluster.state
    assert state.config.auto_create_topics_enable is False
    assert state.config.num_partitions == 4  # the module's marker, merged
    assert state.config.log_segment_bytes == 1048576


def test_module_marker_only(kafka_cluster):
    assert brokers(kafka_cluster) == [1]
    assert kafka_cluster.state.config.num_partitions == 4
    assert kafka_cluster.state.config.auto_create_topics_enable is True


def test_factory(kafka_cluster, kafka_cluster_factory):
    two = kafka_cluster_factory(nodes=2)
    closed = kafka_cluster_factory(configs={"auto.create.topics.enable": "false"})
    assert brokers(two) == [1, 2]
    assert closed.state.config.auto_create_topics_enable is False
    assert closed.state.config.num_partitions == 1  # the marker is the fixture's only
    assert len({kafka_cluster.bootstrap_servers, two.bootstrap_servers,
                closed.bootstrap_servers}) == 3
    MADE.extend([two, closed])


def test_factory_clusters_were_stopped():
    assert len(MADE) == 2
    for cluster in MADE:
        for server in cluster.servers:
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((server.host, server.port), timeout=5)
        assert not cluster.data_dir.exists()  # temporary, removed
"""

BAD = """
import pytest


@pytest.mark.kafka_cluster(nodes=1, nods=3, partitions=2)
def test_unknown_argument(kafka_cluster):
    pass


@pytest.mark.kafka_cluster(configs={"num.partition": 2, "num.partitions": 2})
def test_unknown_config(kafka_cluster):
    pass


@pytest.mark.kafka_cluster(configs={"auto.create.topics.enable": "yes"})
def test_bad_value(kafka_cluster):
    pass


@pytest.mark.kafka_cluster(num_partitions=2, configs={"num.partitions": 3})
def test_twice(kafka_cluster):
    pass


def test_factory_typo(kafka_cluster_factory):
    kafka_cluster_factory(node=2)
"""


def test_marker_and_factory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_project=PROJECT)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=4)


def test_marker_is_registered(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_strict="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.kafka_cluster(nodes=1, *configs*"])
    pytester.makepyfile(
        test_strict="import pytest\n"
        "@pytest.mark.kafka_cluster(nodes=1)\n"
        "def test_nothing():\n    pass\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=1)


def test_bad_settings_are_usage_errors_naming_them(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad=BAD)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*UsageError: @pytest.mark.kafka_cluster on test_bad.py::"
            "test_unknown_argument: unknown argument(s) nods, partitions; "
            "kproto.broker.Cluster takes nodes, *",
            "*unknown broker config(s) num.partition; supported: *",
            "*configs: auto.create.topics.enable='yes' is not a bool*",
            "*num.partitions in configs and num_partitions= both set*",
            "*UsageError: kafka_cluster_factory: unknown argument(s) node;*",
        ]
    )


def test_loading_the_plugin_imports_no_broker(pytester: pytest.Pytester) -> None:
    """pytest loads the plugin at every start of every project with kproto
    installed: the broker is imported only when a fixture is used."""
    pytester.makepyfile(test_modules="""
        import sys

        def test_plugin_loaded_broker_not(request):
            assert request.config.pluginmanager.has_plugin("kproto_broker")
            assert "kproto.broker.pytest_plugin" in sys.modules
            assert "kproto.broker.cluster" not in sys.modules
            assert "kproto.broker.server" not in sys.modules

        def test_used_fixture_imports_it(kafka_cluster):
            assert "kproto.broker.cluster" in sys.modules
        """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_importing_the_plugin_imports_no_broker() -> None:
    code = textwrap.dedent("""
        import sys
        import kproto.broker.pytest_plugin
        loaded = "kproto.broker.cluster" in sys.modules
        from kproto.broker import Cluster  # the package's names stay reachable
        print(loaded, Cluster.__module__)
        """)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert out == ["False", "kproto.broker.cluster"]


def test_every_broker_config_names_a_cluster_argument() -> None:
    from kproto.broker.cluster import Cluster
    from kproto.broker.pytest_plugin import BROKER_CONFIGS, cluster_kwargs

    params = inspect.signature(Cluster).parameters
    for name, (arg, kind) in BROKER_CONFIGS.items():
        assert arg in params, name
        value = "/tmp/x" if kind is str else "true" if kind is bool else "7"
        assert cluster_kwargs({"configs": {name: value}}) == {
            arg: kind(value) if kind is not bool else True
        }
