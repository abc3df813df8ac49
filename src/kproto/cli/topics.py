"""``kproto topics list|describe|create|delete``: ``kafka-topics.sh`` on
:mod:`kproto.client`, with its layouts (Kafka's ``TopicCommand``)::

    $ kproto topics describe --bootstrap-server 127.0.0.1:9092 orders
    Topic: orders	TopicId: AqXMjJ8JTm6b4tgBkS7YGA	PartitionCount: 2	ReplicationFactor: 1	Configs: retention.ms=60000
        Topic: orders	Partition: 0	Leader: 1	Replicas: 1	Isr: 1	Elr: N/A	LastKnownElr: N/A
        Topic: orders	Partition: 1	Leader: 1	Replicas: 1	Isr: 1	Elr: N/A	LastKnownElr: N/A

``Configs`` lists the topic's non-default configs (DescribeConfigs); the partition
lines come from Metadata, which carries no ELR, hence ``N/A`` as Kafka prints it
without DescribeTopicPartitions. ``create`` prints ``Created topic NAME.``;
``list`` one name a line, sorted; ``delete`` nothing.
"""  # noqa: E501

from __future__ import annotations

import argparse

from kproto.cli._common import CliError, add_client_arguments, client_for, name_values
from kproto.client import BrokerError, PartitionDescription, TopicDescription
from kproto.errors import ErrorCode
from kproto.json import kafka_uuid

__all__ = ["add_arguments", "describe_lines"]


def _ids(nodes: tuple[int, ...]) -> str:
    return ",".join(str(n) for n in nodes)


def describe_lines(
    topic: TopicDescription, configs: list[tuple[str, str | None]]
) -> list[str]:
    """``TopicCommand``'s ``TopicDescription.printDescription`` and each
    ``PartitionDescription.printDescription`` (tab-separated), for one topic and
    its non-default ``(name, value)`` configs."""
    replication = len(topic.partitions[0].replicas) if topic.partitions else 0
    head = f"Topic: {topic.name}"
    if topic.topic_id.int:
        head += f"\tTopicId: {kafka_uuid(topic.topic_id)}"
    head += (
        f"\tPartitionCount: {len(topic.partitions)}"
        f"\tReplicationFactor: {replication}"
        f"\tConfigs: {','.join(f'{k}={v}' for k, v in configs)}"
    )
    return [head] + [_partition_line(topic.name, p) for p in topic.partitions]


def _partition_line(topic: str, p: PartitionDescription) -> str:
    leader = str(p.leader) if p.leader >= 0 else "none"
    return (
        f"\tTopic: {topic}\tPartition: {p.partition}\tLeader: {leader}"
        f"\tReplicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}"
        "\tElr: N/A\tLastKnownElr: N/A"
    )


def cmd_list(args: argparse.Namespace) -> int:
    """``kafka-topics.sh --list``: every topic name, sorted."""
    with client_for(args) as client:
        topics = client.describe_topics()
    for t in topics:
        if not (args.exclude_internal and t.is_internal):
            print(t.name)
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    """``kafka-topics.sh --describe``: the named topics, or all."""
    with client_for(args) as client:
        topics = client.describe_topics(args.topics or None)
        topics = [t for t in topics if not (args.exclude_internal and t.is_internal)]
        configs = client.describe_configs([t.name for t in topics])
    for t in topics:
        pairs = [(e.name, e.value) for e in configs.get(t.name, []) if not e.is_default]
        for line in describe_lines(t, pairs):
            print(line)
    return 0


def cmd_create(args: argparse.Namespace) -> int:
    """``kafka-topics.sh --create``; prints ``Created topic NAME.``"""
    if args.partitions is not None and args.partitions < 1:
        raise CliError("--partitions: the partitions must be greater than 0")
    rf = args.replication_factor
    if rf is not None and not 1 <= rf <= 32767:
        raise CliError(
            "--replication-factor: the replication factor must be between 1 and "
            "32767 inclusive"
        )
    configs = dict(name_values(args.config, "--config"))
    with client_for(args) as client:
        try:
            client.create_topics(
                [args.topic],
                num_partitions=-1 if args.partitions is None else args.partitions,
                replication_factor=-1 if rf is None else rf,
                configs=configs,
            )
        except BrokerError as exc:
            exists = exc.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
            if not (exists and args.if_not_exists):
                raise
            return 0
    print(f"Created topic {args.topic}.")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    """``kafka-topics.sh --delete``: prints nothing."""
    with client_for(args) as client:
        try:
            client.delete_topics([args.topic])
        except BrokerError as exc:
            unknown = exc.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if not (unknown and args.if_exists):
                raise
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``kproto topics``' subcommands and their arguments."""
    verbs = parser.add_subparsers(dest="topics_command", required=True)

    lst = verbs.add_parser("list", help="topic names, one a line, sorted")
    add_client_arguments(lst)
    lst.add_argument("--exclude-internal", action="store_true")
    lst.set_defaults(func=cmd_list)

    desc = verbs.add_parser("describe", help="partitions, leaders, replicas, configs")
    add_client_arguments(desc)
    desc.add_argument("topics", nargs="*", metavar="TOPIC", help="default: all")
    desc.add_argument("--exclude-internal", action="store_true")
    desc.set_defaults(func=cmd_describe)

    create = verbs.add_parser("create", help="create a topic")
    add_client_arguments(create)
    create.add_argument("topic", metavar="TOPIC")
    create.add_argument(
        "--partitions", type=int, default=None, help="default: the broker's"
    )
    create.add_argument(
        "--replication-factor", type=int, default=None, help="default: the broker's"
    )
    create.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a topic config (repeatable)",
    )
    create.add_argument("--if-not-exists", action="store_true")
    create.set_defaults(func=cmd_create)

    delete = verbs.add_parser("delete", help="delete a topic")
    add_client_arguments(delete)
    delete.add_argument("topic", metavar="TOPIC")
    delete.add_argument("--if-exists", action="store_true")
    delete.set_defaults(func=cmd_delete)
