"""Pytest fixtures for kproto's broker, registered through the ``pytest11`` entry
point (active once kproto is installed):

* ``kafka_cluster``: a fresh :class:`kproto.broker.Cluster` per test, in a temporary
  data directory, stopped after the test; one node with default settings unless the
  test (or its class or module) carries the ``kafka_cluster`` marker::

      @pytest.mark.kafka_cluster(nodes=3, auto_create_topics=False,
                                 configs={"num.partitions": 4})
      def test_three_nodes(kafka_cluster): ...

  The marker takes :class:`~kproto.broker.Cluster`'s keyword arguments, plus
  ``configs``: Kafka broker properties (``server.properties`` names, values as strings
  or Python values): those of :data:`BROKER_CONFIGS` mapped onto those arguments,
  every other property of :data:`kproto.broker.broker_config.BROKER_CONFIGS`
  (``node.id``, ``log.retention.ms``, ...) passed in ``Cluster(config=...)``. Markers
  nearer the test override farther ones, argument by argument.
* ``kafka_cluster_factory``: a callable taking the same keyword arguments that starts
  one more cluster per call; every cluster it made is stopped after the test.
* ``kafka_cluster_session``: one single-node cluster shared by the whole session.
* ``schema_registry_url``: the URL of ``kafka_cluster``'s schema registry, which
  asking for this fixture turns on (as ``@pytest.mark.kafka_cluster(schema_registry=
  True)`` does); give it to confluent-kafka's ``SchemaRegistryClient({"url": ...})``
  or take ``kafka_cluster.schema_registry_config()`` for TLS and SASL clusters.

Each yields running clusters; use ``cluster.bootstrap_servers`` in clients.

Loading this plugin imports no broker code (it runs at every pytest start of every
project with kproto installed): the broker is imported when a fixture is first used.

Raises:
    pytest.UsageError: (at fixture set-up) a marker or factory argument, or a
        ``configs`` key, the cluster does not know, or a value of the wrong type.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kproto.broker.cluster import Cluster

__all__ = [
    "BROKER_CONFIGS",
    "kafka_cluster",
    "kafka_cluster_factory",
    "kafka_cluster_session",
    "schema_registry_url",
]

MARKER = "kafka_cluster"

#: Kafka broker properties the marker's ``configs`` accepts: property name ->
#: (``Cluster`` keyword argument, value type). Names and meanings as Kafka's
#: ``KafkaConfig`` / ``ServerLogConfigs``.
BROKER_CONFIGS: dict[str, tuple[str, type]] = {
    "auto.create.topics.enable": ("auto_create_topics", bool),
    "num.partitions": ("num_partitions", int),
    "offsets.topic.num.partitions": ("offsets_partitions", int),
    "log.segment.bytes": ("segment_bytes", int),
    "socket.request.max.bytes": ("socket_request_max_bytes", int),
    "connections.max.idle.ms": ("connections_max_idle_ms", int),
    "connections.max.reauth.ms": ("connections_max_reauth_ms", int),
    "max.connections": ("max_connections", int),
    "max.connections.per.ip": ("max_connections_per_ip", int),
    "queued.max.requests": ("queued_max_requests", int),
    "ssl.client.auth": ("ssl_client_auth", str),
    "log.cleaner.backoff.ms": ("log_cleaner_backoff_ms", int),
    "log.dirs": ("data_dir", str),
    "log.dir": ("data_dir", str),
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(nodes=1, auto_create_topics=True, configs=None, **cluster_kwargs): "
        "settings of the kafka_cluster fixture: kproto.broker.Cluster's keyword "
        "arguments, and configs: Kafka broker properties (node.id, num.partitions, "
        "log.retention.ms, ...: kproto.broker.broker_config.BROKER_CONFIGS)",
    )


def _convert(name: str, value: Any, kind: type) -> Any:
    """``value`` of broker property ``name`` as ``kind`` (Kafka's string forms
    accepted: ``"true"``/``"false"``, decimal integers)."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
    elif isinstance(value, str):
        return value
    raise pytest.UsageError(
        f"{MARKER} configs: {name}={value!r} is not a {kind.__name__}"
    )


def cluster_kwargs(
    kwargs: Mapping[str, Any], where: str = f"@pytest.mark.{MARKER}"
) -> dict[str, Any]:
    """``Cluster(...)`` keyword arguments from marker or factory ``kwargs``:
    ``configs`` (Kafka broker properties) resolved through :data:`BROKER_CONFIGS`,
    the other broker properties into ``config``.

    Raises:
        pytest.UsageError: an argument ``Cluster`` does not take, a ``configs`` key
            no broker property names, a value of the wrong type or out of range,
            or a setting given both as an argument and in ``configs``; the message
            names them.
    """
    from kproto.broker.broker_config import BROKER_CONFIGS as PROPERTIES
    from kproto.broker.broker_config import BrokerConfig, BrokerConfigError
    from kproto.broker.cluster import Cluster

    known = [
        p.name
        for p in inspect.signature(Cluster).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    out = {k: v for k, v in kwargs.items() if k != "configs"}
    unknown = sorted(set(out) - set(known))
    if unknown:
        raise pytest.UsageError(
            f"{where}: unknown argument(s) {', '.join(unknown)}; "
            f"kproto.broker.Cluster takes {', '.join(known)} (and configs=)"
        )
    configs = kwargs.get("configs") or {}
    if not isinstance(configs, Mapping):
        raise pytest.UsageError(
            f"{where}: configs must be a dict of Kafka broker properties, "
            f"got {type(configs).__name__}"
        )
    bad = sorted(
        str(k) for k in configs if k not in BROKER_CONFIGS and k not in PROPERTIES
    )
    if bad:
        raise pytest.UsageError(
            f"{where}: unknown broker config(s) {', '.join(bad)}; "
            f"supported: {', '.join(sorted(set(BROKER_CONFIGS) | set(PROPERTIES)))}"
        )
    properties = dict(out.get("config") or {})
    for name, value in configs.items():
        if name not in BROKER_CONFIGS:
            properties[name] = value
            continue
        arg, kind = BROKER_CONFIGS[name]
        if arg in out:
            raise pytest.UsageError(
                f"{where}: {name} in configs and {arg}= both set the same setting"
            )
        out[arg] = _convert(name, value, kind)
    if properties:
        try:
            BrokerConfig.from_properties(properties)
        except BrokerConfigError as exc:
            raise pytest.UsageError(f"{where}: configs: {exc}") from None
        out["config"] = properties
    return out


def _marker_kwargs(node: pytest.Item) -> dict[str, Any]:
    """The ``kafka_cluster`` markers' keyword arguments, the nearest marker winning
    per argument (``configs`` merged per property)."""
    merged: dict[str, Any] = {}
    configs: dict[str, Any] = {}
    for marker in reversed(list(node.iter_markers(MARKER))):  # farthest first
        if marker.args:
            raise pytest.UsageError(
                f"@pytest.mark.{MARKER} takes keyword arguments only, "
                f"got positional {marker.args!r} on {node.nodeid}"
            )
        for key, value in marker.kwargs.items():
            if key == "configs" and isinstance(value, Mapping):
                configs.update(value)
            else:
                merged[key] = value
    if configs:
        merged["configs"] = configs
    return merged


@pytest.fixture
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A fresh cluster for one test, set by the ``kafka_cluster`` marker (default:
    one node, Cluster's defaults)."""
    from kproto.broker.cluster import Cluster

    kwargs = cluster_kwargs(
        _marker_kwargs(request.node), f"@pytest.mark.{MARKER} on {request.node.nodeid}"
    )
    if "schema_registry_url" in request.fixturenames:
        kwargs.setdefault("schema_registry", True)
    with Cluster(**kwargs) as cluster:
        yield cluster


@pytest.fixture
def kafka_cluster_factory() -> Iterator[Callable[..., Cluster]]:
    """``make(**kwargs) -> Cluster``: start another running cluster (the marker's
    arguments, ``configs`` included); all are stopped after the test, last first."""
    from kproto.broker.cluster import Cluster

    made: list[Cluster] = []

    def make(**kwargs: Any) -> Cluster:
        cluster = Cluster(**cluster_kwargs(kwargs, "kafka_cluster_factory"))
        cluster.__enter__()
        made.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in reversed(made):
            cluster.close()


@pytest.fixture(scope="session")
def kafka_cluster_session() -> Iterator[Cluster]:
    """One single-node cluster for the whole test session."""
    from kproto.broker.cluster import Cluster

    with Cluster(nodes=1) as cluster:
        yield cluster


@pytest.fixture
def schema_registry_url(kafka_cluster: Cluster) -> str:
    """``kafka_cluster``'s schema registry URL (``http://127.0.0.1:PORT``, https with
    TLS); the registry is started for tests that ask for this fixture."""
    return kafka_cluster.schema_registry_url
