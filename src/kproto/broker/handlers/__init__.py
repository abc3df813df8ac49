"""The broker's API handlers, one module per API family, and :data:`HANDLERS`, the
one table of what the broker serves.

===================  ========================================================
module               APIs
===================  ========================================================
``cluster_info``     ApiVersions, Metadata, DescribeCluster
``produce``          Produce
``fetch``            Fetch, ListOffsets, DeleteRecords
``admin``            CreateTopics, DeleteTopics, CreatePartitions
``configs``          DescribeConfigs, AlterConfigs, IncrementalAlterConfigs
``groups``           FindCoordinator and the classic consumer group APIs (the
                     coordinator's state machine is :mod:`kproto.broker.groups`)
``consumer_groups``  ConsumerGroupHeartbeat, ConsumerGroupDescribe (KIP-848)
``streams_groups``   StreamsGroupHeartbeat, StreamsGroupDescribe,
                     StreamsGroupTopologyDescriptionUpdate (KIP-1071)
``security``         SaslHandshake/SaslAuthenticate outside an exchange,
                     Describe/AlterUserScramCredentials
``acls``             CreateAcls, DescribeAcls, DeleteAcls (enforcement:
                     :mod:`.authorize`, called by the dispatcher)
``transactions``     InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
                     TxnOffsetCommit, DescribeTransactions, ListTransactions,
                     DescribeProducers (the coordinator is :mod:`kproto.broker.txn`)
``share``            share groups (KIP-932): ShareGroupHeartbeat, ShareFetch,
                     ShareAcknowledge (state machine: :mod:`kproto.broker.share`)
``share_admin``      ShareGroupDescribe and the share-group offset APIs
``leader_epoch``     OffsetForLeaderEpoch (KIP-320)
``log_dirs``         DescribeLogDirs
``reassignment``     ElectLeaders, Alter/ListPartitionReassignments
``client_quotas``    DescribeClientQuotas, AlterClientQuotas
``features``         UpdateFeatures (and the features ApiVersions reports)
``topic_partitions`` DescribeTopicPartitions (KIP-966)
``telemetry``        GetTelemetrySubscriptions, PushTelemetry (KIP-714),
                     ListConfigResources (KIP-1000, KIP-1142)
===================  ========================================================

:mod:`.context` holds what every handler is given (:class:`RequestContext`) and
:mod:`.partitions` the topic/leader lookups the partition APIs share. An API missing
from :data:`HANDLERS` is not served: the connection that asks for it is closed, as
Kafka does for an API it does not enable.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from kproto.broker.handlers import (
    acls,
    admin,
    client_quotas,
    cluster_info,
    configs,
    consumer_groups,
    features,
    fetch,
    groups,
    leader_epoch,
    log_dirs,
    produce,
    reassignment,
    security,
    share,
    share_admin,
    streams_groups,
    telemetry,
    topic_partitions,
    transactions,
)
from kproto.broker.handlers.context import Handler, RequestContext
from kproto.index import ApiKey

__all__ = ["HANDLERS", "Handler", "RequestContext"]

#: Every API the broker serves and its handler.
HANDLERS: Final[Mapping[ApiKey, Handler]] = MappingProxyType(
    {
        ApiKey.PRODUCE: produce.produce,
        ApiKey.FETCH: fetch.fetch,
        ApiKey.LIST_OFFSETS: fetch.list_offsets,
        ApiKey.METADATA: cluster_info.metadata,
        ApiKey.OFFSET_COMMIT: groups.offset_commit,
        ApiKey.OFFSET_FETCH: groups.offset_fetch,
        ApiKey.FIND_COORDINATOR: groups.find_coordinator,
        ApiKey.JOIN_GROUP: groups.join_group,
        ApiKey.HEARTBEAT: groups.heartbeat,
        ApiKey.LEAVE_GROUP: groups.leave_group,
        ApiKey.SYNC_GROUP: groups.sync_group,
        ApiKey.DESCRIBE_GROUPS: groups.describe_groups,
        ApiKey.LIST_GROUPS: groups.list_groups,
        ApiKey.API_VERSIONS: cluster_info.api_versions_handler,
        ApiKey.CREATE_TOPICS: admin.create_topics,
        ApiKey.DELETE_TOPICS: admin.delete_topics,
        ApiKey.DELETE_RECORDS: fetch.delete_records,
        ApiKey.INIT_PRODUCER_ID: transactions.init_producer_id,
        ApiKey.ADD_PARTITIONS_TO_TXN: transactions.add_partitions_to_txn,
        ApiKey.ADD_OFFSETS_TO_TXN: transactions.add_offsets_to_txn,
        ApiKey.END_TXN: transactions.end_txn,
        ApiKey.TXN_OFFSET_COMMIT: transactions.txn_offset_commit,
        ApiKey.OFFSET_FOR_LEADER_EPOCH: leader_epoch.offset_for_leader_epoch,
        ApiKey.DESCRIBE_CONFIGS: configs.describe_configs,
        ApiKey.ALTER_CONFIGS: configs.alter_configs,
        ApiKey.DESCRIBE_LOG_DIRS: log_dirs.describe_log_dirs,
        ApiKey.CREATE_PARTITIONS: admin.create_partitions,
        ApiKey.DELETE_GROUPS: groups.delete_groups,
        ApiKey.ELECT_LEADERS: reassignment.elect_leaders,
        ApiKey.INCREMENTAL_ALTER_CONFIGS: configs.incremental_alter_configs,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: reassignment.alter_partition_reassignments,
        ApiKey.LIST_PARTITION_REASSIGNMENTS: reassignment.list_partition_reassignments,
        ApiKey.OFFSET_DELETE: groups.offset_delete,
        ApiKey.DESCRIBE_CLIENT_QUOTAS: client_quotas.describe_client_quotas,
        ApiKey.ALTER_CLIENT_QUOTAS: client_quotas.alter_client_quotas,
        ApiKey.UPDATE_FEATURES: features.update_features,
        ApiKey.DESCRIBE_CLUSTER: cluster_info.describe_cluster,
        ApiKey.DESCRIBE_PRODUCERS: transactions.describe_producers,
        ApiKey.DESCRIBE_TRANSACTIONS: transactions.describe_transactions,
        ApiKey.LIST_TRANSACTIONS: transactions.list_transactions,
        ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_groups.consumer_group_heartbeat,
        ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_groups.consumer_group_describe,
        ApiKey.STREAMS_GROUP_HEARTBEAT: streams_groups.streams_group_heartbeat,
        ApiKey.STREAMS_GROUP_DESCRIBE: streams_groups.streams_group_describe,
        ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: (
            streams_groups.streams_group_topology_description_update
        ),
        ApiKey.CREATE_ACLS: acls.create_acls,
        ApiKey.DESCRIBE_ACLS: acls.describe_acls,
        ApiKey.DELETE_ACLS: acls.delete_acls,
        ApiKey.SASL_HANDSHAKE: security.sasl_handshake,
        ApiKey.SASL_AUTHENTICATE: security.sasl_authenticate,
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: security.describe_user_scram_credentials,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: security.alter_user_scram_credentials,
        ApiKey.SHARE_GROUP_HEARTBEAT: share.share_group_heartbeat,
        ApiKey.SHARE_GROUP_DESCRIBE: share_admin.share_group_describe,
        ApiKey.SHARE_FETCH: share.share_fetch,
        ApiKey.SHARE_ACKNOWLEDGE: share.share_acknowledge,
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: share_admin.describe_share_group_offsets,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS: share_admin.alter_share_group_offsets,
        ApiKey.DELETE_SHARE_GROUP_OFFSETS: share_admin.delete_share_group_offsets,
        ApiKey.DESCRIBE_TOPIC_PARTITIONS: topic_partitions.describe_topic_partitions,
        ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: telemetry.get_telemetry_subscriptions,
        ApiKey.PUSH_TELEMETRY: telemetry.push_telemetry,
        ApiKey.LIST_CONFIG_RESOURCES: telemetry.list_config_resources,
    }
)
