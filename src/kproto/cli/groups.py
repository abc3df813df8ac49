"""``kproto groups list|describe``: ``kafka-consumer-groups.sh --list`` and
``--describe`` on :mod:`kproto.client`, in Kafka's layout
(``ConsumerGroupCommand.printOffsets``)::

    $ kproto groups describe --bootstrap-server 127.0.0.1:9092 --group app

    GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID                                  HOST            CLIENT-ID
    app             orders          0          3               5               2               rdkafka-5c1f0e1e-4b0f-4a36-9d43-7f8f0c1d2e3f /127.0.0.1      rdkafka
    app             orders          1          4               4               0               -                                            -               -

Rows: each member's assigned partitions (members with the most partitions first,
partitions in order; a member with none gets one row of ``-``), then the partitions
the group has committed offsets for that no member holds. CURRENT-OFFSET is the
committed offset (OffsetFetch), LOG-END-OFFSET the high watermark (ListOffsets),
LAG their difference; ``-`` where one is missing. A group without members says
``Consumer group 'G' has no active members.`` on stderr, as Kafka's tool. KIP-848
(``group.protocol=consumer``) groups are described too: the client falls back to
ConsumerGroupDescribe, and a member's rows are the partitions it owns.
"""  # noqa: E501

from __future__ import annotations

import argparse
import sys

from kproto.cli._common import CliError, add_client_arguments, client_for
from kproto.client import (
    LATEST,
    BrokerError,
    Client,
    GroupDescription,
    TopicPartition,
)
from kproto.errors import ErrorCode

__all__ = ["Row", "add_arguments", "offsets_table", "rows_of"]

_MISSING = "-"

#: States in which the tool warns that the group is rebalancing (classic, then
#: KIP-848 groups' states).
_REBALANCING = frozenset(
    {"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"}
)

#: One table row: group, topic, partition, offset, log end, lag, member, host, client.
Row = tuple[str, str, str, str, str, str, str, str, str]

_HEADER: Row = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
)


def _text(value: int | None) -> str:
    return _MISSING if value is None else str(value)


def rows_of(
    group: GroupDescription,
    committed: dict[TopicPartition, int],
    log_end: dict[TopicPartition, int],
) -> list[Row]:
    """The rows ``kafka-consumer-groups.sh --describe`` prints for ``group``
    (Kafka's ``collectGroupOffsets``): see the module docstring for the order."""

    def row(tp: TopicPartition | None, member: tuple[str, str, str]) -> Row:
        if tp is None:
            return (
                group.group_id,
                _MISSING,
                _MISSING,
                _MISSING,
                _MISSING,
                _MISSING,
                *member,
            )
        offset = committed.get(tp)
        offset = None if offset is None or offset < 0 else offset
        end = log_end.get(tp)
        lag = None if offset is None or end is None else end - offset
        return (
            group.group_id,
            tp.topic,
            str(tp.partition),
            _text(offset),
            _text(end),
            _text(lag),
            *member,
        )

    rows: list[Row] = []
    assigned: set[TopicPartition] = set()
    members = sorted(group.members, key=lambda m: -len(m.assignment))
    for m in members:
        who = (m.member_id, m.client_host, m.client_id)
        if not m.assignment:
            rows.append(row(None, who))
        for tp in sorted(m.assignment, key=lambda tp: tp.partition):
            rows.append(row(tp, who))
            assigned.add(tp)
    rest = sorted(
        (tp for tp, o in committed.items() if tp not in assigned and o >= 0),
        key=lambda tp: (tp.topic, tp.partition),
    )
    for tp in rest:
        rows.append(row(tp, (_MISSING, _MISSING, _MISSING)))
    return rows


def offsets_table(rows: list[Row]) -> list[str]:
    """``printOffsets``' lines: a blank one, the header, the rows. GROUP, TOPIC,
    CONSUMER-ID and HOST are as wide as their longest value (at least 15),
    PARTITION 10, the offsets and LAG 15; CLIENT-ID is not padded."""
    widths = [15, 15, 10, 15, 15, 15, 15, 15]
    for r in rows:
        for i in (0, 1, 6, 7):
            widths[i] = max(widths[i], len(r[i]))

    def line(r: Row) -> str:
        return (
            " ".join(f"{v:<{w}}" for v, w in zip(r, widths, strict=False)) + " " + r[8]
        )

    return ["", line(_HEADER)] + [line(r) for r in rows]


def _log_end_offsets(
    client: Client, partitions: set[TopicPartition]
) -> dict[TopicPartition, int]:
    out: dict[TopicPartition, int] = {}
    for topic in sorted({tp.topic for tp in partitions}):
        wanted = sorted(tp.partition for tp in partitions if tp.topic == topic)
        try:
            found = client.list_offsets(topic, wanted, timestamp=LATEST)
        except BrokerError:
            continue  # a deleted topic: LOG-END-OFFSET and LAG print as "-"
        out.update({TopicPartition(topic, p): lo.offset for p, lo in found.items()})
    return out


def cmd_list(args: argparse.Namespace) -> int:
    """``kafka-consumer-groups.sh --list`` (``--state``: with each group's state)."""
    with client_for(args) as client:
        groups = [
            g for g in client.list_groups() if g.protocol_type in ("consumer", "")
        ]
    if not args.state:
        for g in groups:
            print(g.group_id)
        return 0
    width = max([15] + [len(g.group_id) for g in groups])
    print(f"{'GROUP':<{width}} STATE")
    for g in groups:
        print(f"{g.group_id:<{width}} {g.state}")
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    """``kafka-consumer-groups.sh --describe --group G``: offsets, lag, members.

    Returns 0; raises :class:`CliError` for a group that does not exist.
    """
    with client_for(args) as client:
        ids = args.group or [g.group_id for g in client.list_groups()]
        for group_id in ids:
            try:
                (group,) = client.describe_groups([group_id])
            except BrokerError as exc:
                if exc.error_code != ErrorCode.GROUP_ID_NOT_FOUND:
                    raise
                group = None
            if group is None or group.state == "Dead":
                raise CliError(f"Consumer group '{group_id}' does not exist.")
            committed = client.fetch_offsets(group_id, None)
            wanted = set(committed) | {tp for m in group.members for tp in m.assignment}
            rows = rows_of(group, committed, _log_end_offsets(client, wanted))
            if group.state == "Empty":
                print(
                    f"\nConsumer group '{group_id}' has no active members.",
                    file=sys.stderr,
                )
            elif group.state in _REBALANCING:
                print(
                    f"\nWarning: Consumer group '{group_id}' is rebalancing.",
                    file=sys.stderr,
                )
            if rows:
                for line in offsets_table(rows):
                    print(line)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``kproto groups``' subcommands and their arguments."""
    verbs = parser.add_subparsers(dest="groups_command", required=True)

    lst = verbs.add_parser("list", help="consumer group ids, sorted")
    add_client_arguments(lst)
    lst.add_argument("--state", action="store_true", help="with each group's state")
    lst.set_defaults(func=cmd_list)

    desc = verbs.add_parser(
        "describe", help="committed offsets, log end offsets, lag and members"
    )
    add_client_arguments(desc)
    which = desc.add_mutually_exclusive_group(required=True)
    which.add_argument("--group", action="append", metavar="GROUP", help="repeatable")
    which.add_argument("--all-groups", action="store_true")
    desc.set_defaults(func=cmd_describe)
