"""The API versions each Apache Kafka release advertised in ApiVersions, so that a
broker can answer as that release would (``Cluster.emulate_version("3.7")``, the
``kproto.emulate.version`` config; franz-go kfake's ``MaxVersions`` / ``--as-version``).

A release is named ``"MAJOR.MINOR"`` (``"3.7"``; a patch, ``"3.7.1"``, or a leading
``v`` is accepted and ignored, as kfake does: each table is the ``.0`` release's, and
patch releases seldom change it; 4.0.1 lists JoinGroup from v0 again, KAFKA-19444).
The plain name is the release running as a KRaft broker, which kproto's broker
models; ``"MAJOR.MINOR-zk"`` is the same release as a ZooKeeper-mode broker (2.0 to
3.9), which also lists the inter-broker APIs (LeaderAndIsr, StopReplica,
UpdateMetadata, ControlledShutdown, ...) a client never sends. Kafka 2.8 to 3.2 ran
KRaft as early access: their KRaft tables lack the APIs KRaft did not serve yet
(2.8: no transactions).

A stock broker lists GetTelemetrySubscriptions and PushTelemetry (KIP-714, KRaft
3.7+) only when a client-telemetry metrics reporter is configured, so the tables
here leave them out; :func:`release_api_versions` adds them with
``client_telemetry=True``.

Provenance (Kafka's JSON files in ``../shared/kafka-schema`` are trunk snapshots, not
releases, so these tables cannot be regenerated from them; they are data, kept as
each release's changes from the one before, and checked against a second source):

- franz-go's ``pkg/kversion/requests.go`` (twmb/franz-go at commit
  ``0315798d7d8b85ac356f552f426d3dfb1e543e27``, BSD-3-Clause), whose per-release
  tables trace each change to its Kafka commit and KIP: the source of every table
  here (ZooKeeper-mode 2.0-3.9, KRaft broker 2.8-4.3), rebuilt as data, not code.
  Where it tracks no minimum version (the share-group APIs, which Kafka 4.1 serves
  from v1, as its JSON files say), the recorded tables below give it.
- kafka-python 3.0.12's ``kafka.protocol.broker_version_data.BROKER_API_VERSIONS``
  (Apache-2.0): the ApiVersions responses of real brokers, recorded. They equal the
  tables here for ZooKeeper mode 2.0-3.9 and KRaft 4.0-4.3 (kafka-python records no
  KRaft 3.x broker); ``tests/test_kafka_releases.py`` checks that, and that each
  KRaft 3.x table equals the same release's ZooKeeper-mode one on every API both list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, NamedTuple

from kproto.index import ApiKey

__all__ = [
    "KAFKA_RELEASES",
    "UnknownReleaseError",
    "release_api_versions",
    "release_name",
]

#: A release and its changes from the release before it in the same list:
#: ``{api_key: (min_version, max_version)}``, ``None`` for an API it dropped.
_Changes = Mapping[ApiKey, "tuple[int, int] | None"]
_Step = tuple[str, _Changes]


class _Release3x(NamedTuple):
    """A 3.x release's changes from the release before it: those the KRaft and
    the ZooKeeper-mode broker both made (the client APIs), and those each made
    alone (KRaft: the APIs its early access lacked; ZooKeeper mode: the
    inter-broker APIs, and what KRaft served later)."""

    name: str
    both: _Changes
    kraft: _Changes = {}
    zookeeper: _Changes = {}


_RELEASES_3X: Final[tuple[_Release3x, ...]] = (
    _Release3x(
        "3.0",
        both={
            ApiKey.LIST_OFFSETS: (0, 7),
            ApiKey.OFFSET_FETCH: (0, 8),
            ApiKey.FIND_COORDINATOR: (0, 4),
            ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
            ApiKey.LIST_TRANSACTIONS: (0, 0),
        },
        kraft={
            ApiKey.INIT_PRODUCER_ID: (0, 4),
            ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),
            ApiKey.ADD_OFFSETS_TO_TXN: (0, 3),
            ApiKey.END_TXN: (0, 3),
            ApiKey.TXN_OFFSET_COMMIT: (0, 3),
            ApiKey.DESCRIBE_ACLS: (0, 2),
            ApiKey.CREATE_ACLS: (0, 2),
            ApiKey.DELETE_ACLS: (0, 2),
            ApiKey.ALTER_CONFIGS: (0, 2),
            ApiKey.CREATE_PARTITIONS: (0, 3),
            ApiKey.ELECT_LEADERS: (0, 2),
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
            ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
            ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
            ApiKey.DESCRIBE_QUORUM: None,
            ApiKey.UPDATE_FEATURES: (0, 0),
        },
        zookeeper={
            ApiKey.ALLOCATE_PRODUCER_IDS: (0, 0),
        },
    ),
    _Release3x(
        "3.1",
        both={
            ApiKey.FETCH: (0, 13),
            ApiKey.METADATA: (0, 12),
        },
    ),
    _Release3x(
        "3.2",
        both={
            ApiKey.JOIN_GROUP: (0, 9),
            ApiKey.LEAVE_GROUP: (0, 5),
            ApiKey.DESCRIBE_LOG_DIRS: (0, 3),
        },
        kraft={
            ApiKey.ENVELOPE: None,
        },
        zookeeper={
            ApiKey.LEADER_AND_ISR: (0, 6),
            ApiKey.ALTER_PARTITION: (0, 1),
        },
    ),
    _Release3x(
        "3.3",
        both={
            ApiKey.DESCRIBE_ACLS: (0, 3),
            ApiKey.CREATE_ACLS: (0, 3),
            ApiKey.DELETE_ACLS: (0, 3),
            ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
            ApiKey.UPDATE_FEATURES: (0, 1),
        },
        kraft={
            ApiKey.DESCRIBE_QUORUM: (0, 1),
            ApiKey.UNREGISTER_BROKER: (0, 0),
        },
        zookeeper={
            ApiKey.CREATE_DELEGATION_TOKEN: (0, 3),
            ApiKey.DESCRIBE_DELEGATION_TOKEN: (0, 3),
            ApiKey.ALTER_PARTITION: (0, 2),
        },
    ),
    _Release3x(
        "3.4",
        both={},
        zookeeper={
            ApiKey.LEADER_AND_ISR: (0, 7),
            ApiKey.STOP_REPLICA: (0, 4),
            ApiKey.UPDATE_METADATA: (0, 8),
            ApiKey.ENVELOPE: (0, 0),
        },
    ),
    _Release3x(
        "3.5",
        both={
            ApiKey.FETCH: (0, 15),
            ApiKey.LIST_OFFSETS: (0, 8),
        },
        kraft={
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
        },
        zookeeper={
            ApiKey.ALTER_PARTITION: (0, 3),
        },
    ),
    _Release3x(
        "3.6",
        both={
            ApiKey.ADD_PARTITIONS_TO_TXN: (0, 4),
        },
        kraft={
            ApiKey.CREATE_DELEGATION_TOKEN: (0, 3),
            ApiKey.RENEW_DELEGATION_TOKEN: (0, 2),
            ApiKey.EXPIRE_DELEGATION_TOKEN: (0, 2),
            ApiKey.DESCRIBE_DELEGATION_TOKEN: (0, 3),
        },
    ),
    _Release3x(
        "3.7",
        both={
            ApiKey.PRODUCE: (0, 10),
            ApiKey.FETCH: (0, 16),
            ApiKey.OFFSET_COMMIT: (0, 9),
            ApiKey.OFFSET_FETCH: (0, 9),
            ApiKey.DESCRIBE_CLUSTER: (0, 1),
            ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 0),
        },
        kraft={
            ApiKey.LIST_CONFIG_RESOURCES: (0, 0),
        },
    ),
    _Release3x(
        "3.8",
        both={
            ApiKey.PRODUCE: (0, 11),
            ApiKey.FIND_COORDINATOR: (0, 5),
            ApiKey.LIST_GROUPS: (0, 5),
            ApiKey.INIT_PRODUCER_ID: (0, 5),
            ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
            ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
            ApiKey.END_TXN: (0, 4),
            ApiKey.TXN_OFFSET_COMMIT: (0, 4),
            ApiKey.LIST_TRANSACTIONS: (0, 1),
            ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 0),
        },
        kraft={
            ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
        },
    ),
    _Release3x(
        "3.9",
        both={
            ApiKey.FETCH: (0, 17),
            ApiKey.LIST_OFFSETS: (0, 9),
            ApiKey.FIND_COORDINATOR: (0, 6),
            ApiKey.API_VERSIONS: (0, 4),
        },
        kraft={
            ApiKey.DESCRIBE_QUORUM: (0, 2),
            ApiKey.ADD_RAFT_VOTER: (0, 0),
            ApiKey.REMOVE_RAFT_VOTER: (0, 0),
        },
    ),
)

_KRAFT: Final[tuple[_Step, ...]] = (
    (
        "2.8",
        {
            ApiKey.PRODUCE: (0, 9),
            ApiKey.FETCH: (0, 12),
            ApiKey.LIST_OFFSETS: (0, 6),
            ApiKey.METADATA: (0, 11),
            ApiKey.OFFSET_COMMIT: (0, 8),
            ApiKey.OFFSET_FETCH: (0, 7),
            ApiKey.FIND_COORDINATOR: (0, 3),
            ApiKey.JOIN_GROUP: (0, 7),
            ApiKey.HEARTBEAT: (0, 4),
            ApiKey.LEAVE_GROUP: (0, 4),
            ApiKey.SYNC_GROUP: (0, 5),
            ApiKey.DESCRIBE_GROUPS: (0, 5),
            ApiKey.LIST_GROUPS: (0, 4),
            ApiKey.SASL_HANDSHAKE: (0, 1),
            ApiKey.API_VERSIONS: (0, 3),
            ApiKey.CREATE_TOPICS: (0, 7),
            ApiKey.DELETE_TOPICS: (0, 6),
            ApiKey.DELETE_RECORDS: (0, 2),
            ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
            ApiKey.WRITE_TXN_MARKERS: (0, 1),
            ApiKey.DESCRIBE_CONFIGS: (0, 4),
            ApiKey.ALTER_REPLICA_LOG_DIRS: (0, 2),
            ApiKey.DESCRIBE_LOG_DIRS: (0, 2),
            ApiKey.SASL_AUTHENTICATE: (0, 2),
            ApiKey.DELETE_GROUPS: (0, 2),
            ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
            ApiKey.OFFSET_DELETE: (0, 0),
            ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
            ApiKey.DESCRIBE_QUORUM: (0, 0),
            ApiKey.ENVELOPE: (0, 0),
            ApiKey.DESCRIBE_CLUSTER: (0, 0),
            ApiKey.DESCRIBE_PRODUCERS: (0, 0),
        },
    ),
    *((r.name, {**r.both, **r.kraft}) for r in _RELEASES_3X),
    (
        "4.0",
        {
            ApiKey.PRODUCE: (0, 12),
            ApiKey.FETCH: (4, 17),
            ApiKey.LIST_OFFSETS: (1, 10),
            ApiKey.METADATA: (0, 13),
            ApiKey.OFFSET_COMMIT: (2, 9),
            ApiKey.OFFSET_FETCH: (1, 9),
            ApiKey.JOIN_GROUP: (2, 9),
            ApiKey.DESCRIBE_GROUPS: (0, 6),
            ApiKey.CREATE_TOPICS: (2, 7),
            ApiKey.DELETE_TOPICS: (1, 6),
            ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
            ApiKey.END_TXN: (0, 5),
            ApiKey.WRITE_TXN_MARKERS: (1, 1),
            ApiKey.TXN_OFFSET_COMMIT: (0, 5),
            ApiKey.DESCRIBE_ACLS: (1, 3),
            ApiKey.CREATE_ACLS: (1, 3),
            ApiKey.DELETE_ACLS: (1, 3),
            ApiKey.DESCRIBE_CONFIGS: (1, 4),
            ApiKey.ALTER_REPLICA_LOG_DIRS: (1, 2),
            ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
            ApiKey.CREATE_DELEGATION_TOKEN: (1, 3),
            ApiKey.RENEW_DELEGATION_TOKEN: (1, 2),
            ApiKey.EXPIRE_DELEGATION_TOKEN: (1, 2),
            ApiKey.DESCRIBE_DELEGATION_TOKEN: (1, 3),
            ApiKey.UPDATE_FEATURES: (0, 2),
            ApiKey.DESCRIBE_CLUSTER: (0, 2),
            ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),
            ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
        },
    ),
    (
        "4.1",
        {
            ApiKey.PRODUCE: (0, 13),
            ApiKey.FETCH: (4, 18),
            ApiKey.JOIN_GROUP: (0, 9),
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
            ApiKey.LIST_TRANSACTIONS: (0, 2),
            ApiKey.LIST_CONFIG_RESOURCES: (0, 1),
            ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1),
            ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),
            ApiKey.SHARE_FETCH: (1, 1),
            ApiKey.SHARE_ACKNOWLEDGE: (1, 1),
            ApiKey.INITIALIZE_SHARE_GROUP_STATE: (0, 0),
            ApiKey.READ_SHARE_GROUP_STATE: (0, 0),
            ApiKey.WRITE_SHARE_GROUP_STATE: (0, 0),
            ApiKey.DELETE_SHARE_GROUP_STATE: (0, 0),
            ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: (0, 0),
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 0),
            ApiKey.ALTER_SHARE_GROUP_OFFSETS: (0, 0),
            ApiKey.DELETE_SHARE_GROUP_OFFSETS: (0, 0),
        },
    ),
    (
        "4.2",
        {
            ApiKey.LIST_OFFSETS: (1, 11),
            ApiKey.OFFSET_COMMIT: (2, 10),
            ApiKey.OFFSET_FETCH: (1, 10),
            ApiKey.WRITE_TXN_MARKERS: (1, 2),
            ApiKey.SHARE_FETCH: (1, 2),
            ApiKey.SHARE_ACKNOWLEDGE: (1, 2),
            ApiKey.ADD_RAFT_VOTER: (0, 1),
            ApiKey.WRITE_SHARE_GROUP_STATE: (0, 1),
            ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: (0, 1),
            ApiKey.STREAMS_GROUP_HEARTBEAT: (0, 0),
            ApiKey.STREAMS_GROUP_DESCRIBE: (0, 0),
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),
        },
    ),
    (
        "4.3",
        {
            ApiKey.DESCRIBE_LOG_DIRS: (1, 5),
        },
    ),
)
_ZOOKEEPER: Final[tuple[_Step, ...]] = (
    (
        "2.0",
        {
            ApiKey.PRODUCE: (0, 6),
            ApiKey.FETCH: (0, 8),
            ApiKey.LIST_OFFSETS: (0, 3),
            ApiKey.METADATA: (0, 6),
            ApiKey.LEADER_AND_ISR: (0, 1),
            ApiKey.STOP_REPLICA: (0, 0),
            ApiKey.UPDATE_METADATA: (0, 4),
            ApiKey.CONTROLLED_SHUTDOWN: (0, 1),
            ApiKey.OFFSET_COMMIT: (0, 4),
            ApiKey.OFFSET_FETCH: (0, 4),
            ApiKey.FIND_COORDINATOR: (0, 2),
            ApiKey.JOIN_GROUP: (0, 3),
            ApiKey.HEARTBEAT: (0, 2),
            ApiKey.LEAVE_GROUP: (0, 2),
            ApiKey.SYNC_GROUP: (0, 2),
            ApiKey.DESCRIBE_GROUPS: (0, 2),
            ApiKey.LIST_GROUPS: (0, 2),
            ApiKey.SASL_HANDSHAKE: (0, 1),
            ApiKey.API_VERSIONS: (0, 2),
            ApiKey.CREATE_TOPICS: (0, 3),
            ApiKey.DELETE_TOPICS: (0, 2),
            ApiKey.DELETE_RECORDS: (0, 1),
            ApiKey.INIT_PRODUCER_ID: (0, 1),
            ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 1),
            ApiKey.ADD_PARTITIONS_TO_TXN: (0, 1),
            ApiKey.ADD_OFFSETS_TO_TXN: (0, 1),
            ApiKey.END_TXN: (0, 1),
            ApiKey.WRITE_TXN_MARKERS: (0, 0),
            ApiKey.TXN_OFFSET_COMMIT: (0, 1),
            ApiKey.DESCRIBE_ACLS: (0, 1),
            ApiKey.CREATE_ACLS: (0, 1),
            ApiKey.DELETE_ACLS: (0, 1),
            ApiKey.DESCRIBE_CONFIGS: (0, 2),
            ApiKey.ALTER_CONFIGS: (0, 1),
            ApiKey.ALTER_REPLICA_LOG_DIRS: (0, 1),
            ApiKey.DESCRIBE_LOG_DIRS: (0, 1),
            ApiKey.SASL_AUTHENTICATE: (0, 0),
            ApiKey.CREATE_PARTITIONS: (0, 1),
            ApiKey.CREATE_DELEGATION_TOKEN: (0, 1),
            ApiKey.RENEW_DELEGATION_TOKEN: (0, 1),
            ApiKey.EXPIRE_DELEGATION_TOKEN: (0, 1),
            ApiKey.DESCRIBE_DELEGATION_TOKEN: (0, 1),
            ApiKey.DELETE_GROUPS: (0, 1),
        },
    ),
    (
        "2.1",
        {
            ApiKey.PRODUCE: (0, 7),
            ApiKey.FETCH: (0, 10),
            ApiKey.LIST_OFFSETS: (0, 4),
            ApiKey.METADATA: (0, 7),
            ApiKey.OFFSET_COMMIT: (0, 6),
            ApiKey.OFFSET_FETCH: (0, 5),
            ApiKey.DELETE_TOPICS: (0, 3),
            ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 2),
            ApiKey.TXN_OFFSET_COMMIT: (0, 2),
        },
    ),
    (
        "2.2",
        {
            ApiKey.LIST_OFFSETS: (0, 5),
            ApiKey.LEADER_AND_ISR: (0, 2),
            ApiKey.STOP_REPLICA: (0, 1),
            ApiKey.UPDATE_METADATA: (0, 5),
            ApiKey.CONTROLLED_SHUTDOWN: (0, 2),
            ApiKey.JOIN_GROUP: (0, 4),
            ApiKey.SASL_AUTHENTICATE: (0, 1),
            ApiKey.ELECT_LEADERS: (0, 0),
        },
    ),
    (
        "2.3",
        {
            ApiKey.FETCH: (0, 11),
            ApiKey.METADATA: (0, 8),
            ApiKey.OFFSET_COMMIT: (0, 7),
            ApiKey.JOIN_GROUP: (0, 5),
            ApiKey.HEARTBEAT: (0, 3),
            ApiKey.SYNC_GROUP: (0, 3),
            ApiKey.DESCRIBE_GROUPS: (0, 3),
            ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 3),
            ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 0),
        },
    ),
    (
        "2.4",
        {
            ApiKey.PRODUCE: (0, 8),
            ApiKey.METADATA: (0, 9),
            ApiKey.LEADER_AND_ISR: (0, 4),
            ApiKey.STOP_REPLICA: (0, 2),
            ApiKey.UPDATE_METADATA: (0, 6),
            ApiKey.CONTROLLED_SHUTDOWN: (0, 3),
            ApiKey.OFFSET_COMMIT: (0, 8),
            ApiKey.OFFSET_FETCH: (0, 6),
            ApiKey.FIND_COORDINATOR: (0, 3),
            ApiKey.JOIN_GROUP: (0, 6),
            ApiKey.HEARTBEAT: (0, 4),
            ApiKey.LEAVE_GROUP: (0, 4),
            ApiKey.SYNC_GROUP: (0, 4),
            ApiKey.DESCRIBE_GROUPS: (0, 5),
            ApiKey.LIST_GROUPS: (0, 3),
            ApiKey.API_VERSIONS: (0, 3),
            ApiKey.CREATE_TOPICS: (0, 5),
            ApiKey.DELETE_TOPICS: (0, 4),
            ApiKey.INIT_PRODUCER_ID: (0, 2),
            ApiKey.CREATE_DELEGATION_TOKEN: (0, 2),
            ApiKey.DELETE_GROUPS: (0, 2),
            ApiKey.ELECT_LEADERS: (0, 2),
            ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
            ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
            ApiKey.OFFSET_DELETE: (0, 0),
        },
    ),
    (
        "2.5",
        {
            ApiKey.OFFSET_FETCH: (0, 7),
            ApiKey.JOIN_GROUP: (0, 7),
            ApiKey.SYNC_GROUP: (0, 5),
            ApiKey.INIT_PRODUCER_ID: (0, 3),
            ApiKey.TXN_OFFSET_COMMIT: (0, 3),
            ApiKey.DESCRIBE_ACLS: (0, 2),
            ApiKey.CREATE_ACLS: (0, 2),
            ApiKey.DELETE_ACLS: (0, 2),
            ApiKey.SASL_AUTHENTICATE: (0, 2),
            ApiKey.CREATE_PARTITIONS: (0, 2),
            ApiKey.RENEW_DELEGATION_TOKEN: (0, 2),
            ApiKey.EXPIRE_DELEGATION_TOKEN: (0, 2),
            ApiKey.DESCRIBE_DELEGATION_TOKEN: (0, 2),
        },
    ),
    (
        "2.6",
        {
            ApiKey.STOP_REPLICA: (0, 3),
            ApiKey.LIST_GROUPS: (0, 4),
            ApiKey.DELETE_RECORDS: (0, 2),
            ApiKey.DESCRIBE_CONFIGS: (0, 3),
            ApiKey.DESCRIBE_LOG_DIRS: (0, 2),
            ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 0),
            ApiKey.ALTER_CLIENT_QUOTAS: (0, 0),
        },
    ),
    (
        "2.7",
        {
            ApiKey.FETCH: (0, 12),
            ApiKey.CREATE_TOPICS: (0, 6),
            ApiKey.DELETE_TOPICS: (0, 5),
            ApiKey.INIT_PRODUCER_ID: (0, 4),
            ApiKey.ADD_PARTITIONS_TO_TXN: (0, 2),
            ApiKey.ADD_OFFSETS_TO_TXN: (0, 2),
            ApiKey.END_TXN: (0, 2),
            ApiKey.CREATE_PARTITIONS: (0, 3),
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
            ApiKey.ALTER_PARTITION: (0, 0),
            ApiKey.UPDATE_FEATURES: (0, 0),
        },
    ),
    (
        "2.8",
        {
            ApiKey.PRODUCE: (0, 9),
            ApiKey.LIST_OFFSETS: (0, 6),
            ApiKey.METADATA: (0, 11),
            ApiKey.LEADER_AND_ISR: (0, 5),
            ApiKey.UPDATE_METADATA: (0, 7),
            ApiKey.CREATE_TOPICS: (0, 7),
            ApiKey.DELETE_TOPICS: (0, 6),
            ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
            ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),
            ApiKey.ADD_OFFSETS_TO_TXN: (0, 3),
            ApiKey.END_TXN: (0, 3),
            ApiKey.WRITE_TXN_MARKERS: (0, 1),
            ApiKey.DESCRIBE_CONFIGS: (0, 4),
            ApiKey.ALTER_CONFIGS: (0, 2),
            ApiKey.ALTER_REPLICA_LOG_DIRS: (0, 2),
            ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
            ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
            ApiKey.DESCRIBE_CLUSTER: (0, 0),
            ApiKey.DESCRIBE_PRODUCERS: (0, 0),
        },
    ),
    *((r.name, {**r.both, **r.zookeeper}) for r in _RELEASES_3X),
)


#: The telemetry APIs a KRaft broker of 3.7+ lists when a client-telemetry
#: metrics reporter is configured (KIP-714).
_CLIENT_TELEMETRY: Final[Mapping[ApiKey, tuple[int, int]]] = {
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: (0, 0),
    ApiKey.PUSH_TELEMETRY: (0, 0),
}
_CLIENT_TELEMETRY_SINCE: Final = (3, 7)

_ZK_SUFFIX: Final = "-zk"


def _tables(
    steps: tuple[_Step, ...], suffix: str
) -> dict[str, dict[ApiKey, tuple[int, int]]]:
    tables: dict[str, dict[ApiKey, tuple[int, int]]] = {}
    table: dict[ApiKey, tuple[int, int]] = {}
    for name, changes in steps:
        table = dict(table)
        for api_key, versions in changes.items():
            if versions is None:
                del table[api_key]
            else:
                table[api_key] = versions
        tables[name + suffix] = dict(sorted(table.items()))
    return tables


_TABLES: Final = {**_tables(_KRAFT, ""), **_tables(_ZOOKEEPER, _ZK_SUFFIX)}

#: Every release name :func:`release_api_versions` knows, oldest first
#: (``"2.8"`` ... ``"4.3"``, then ``"2.0-zk"`` ... ``"3.9-zk"``).
KAFKA_RELEASES: Final[tuple[str, ...]] = tuple(_TABLES)

_NAME: Final = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?(-zk)?")


class UnknownReleaseError(LookupError):
    """A Kafka release name this module has no table for; the message lists the
    known ones."""


def release_name(release: str) -> str:
    """The canonical name of ``release`` (``"v3.7.1"`` -> ``"3.7"``,
    ``"3.7.0-zk"`` -> ``"3.7-zk"``).

    Raises:
        UnknownReleaseError: not a release in :data:`KAFKA_RELEASES`.
    """
    match = _NAME.fullmatch(release.strip())
    name = (
        f"{int(match[1])}.{int(match[2])}{match[3] or ''}"
        if match is not None
        else release
    )
    if name not in _TABLES:
        raise UnknownReleaseError(
            f"unknown Kafka release {release!r}: the known releases are "
            f"{', '.join(KAFKA_RELEASES)}"
        )
    return name


def release_api_versions(
    release: str, *, client_telemetry: bool = False
) -> dict[ApiKey, tuple[int, int]]:
    """The API versions Kafka ``release`` advertised in its ApiVersions response:
    ``{api_key: (min_version, max_version)}``, every API that release's broker
    listed, sorted by api key.

    ``client_telemetry=True`` adds GetTelemetrySubscriptions and PushTelemetry v0
    for a KRaft release of 3.7 or later, as such a broker lists them when a
    client-telemetry metrics reporter is configured (KIP-714).

    Raises:
        UnknownReleaseError: ``release`` is not in :data:`KAFKA_RELEASES` (a
            ``LookupError``; the message lists the known releases).
    """
    name = release_name(release)
    table = dict(_TABLES[name])
    major, minor = (int(part) for part in name.removesuffix(_ZK_SUFFIX).split("."))
    if (
        client_telemetry
        and not name.endswith(_ZK_SUFFIX)
        and (major, minor) >= _CLIENT_TELEMETRY_SINCE
    ):
        table.update(_CLIENT_TELEMETRY)
    return dict(sorted(table.items()))
