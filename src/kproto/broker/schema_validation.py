"""Broker-side schema id validation: Confluent Server's
``confluent.key.schema.validation`` / ``confluent.value.schema.validation`` topic
configs.

When on, each non-null record key (value) of a Produce must be framed with a schema
id (Confluent's wire format, read by :mod:`kproto.broker.log_validator` during its
record walk into :class:`~kproto.broker.log_validator.SchemaIds`) that the cluster's
schema registry has registered under the subject the topic's
``confluent.key/value.subject.name.strategy`` names:

- ``TopicNameStrategy``: ``<topic>-key`` / ``<topic>-value``;
- ``RecordNameStrategy``: the schema's fully qualified record name;
- ``TopicRecordNameStrategy``: ``<topic>-<record name>``.

As Confluent Server, the payload is not decoded against the schema (only its id is
checked) and null keys and values (tombstones) pass. A batch with a bad record is
refused whole with INVALID_RECORD, ``record_errors`` naming the batch index of each
bad record. The registry is consulted once per distinct id of a batch, on the event
loop, through :class:`SchemaIdLookup` (the broker does not import the registry:
:class:`kproto.broker.Cluster` injects it when ``schema_registry=True``). Without a
registry, every Produce to a validated topic is refused with INVALID_RECORD (Confluent
Server needs ``confluent.schema.registry.url`` for the feature).
"""

from __future__ import annotations

import uuid
from typing import Protocol

from kproto.broker.log_validator import FramedIds, RecordValidationError, ValidBatch
from kproto.broker.topic_config import TopicConfig
from kproto.errors import ErrorCode

__all__ = ["SchemaIdLookup", "check_schema_ids"]

_SHOWN = 3  # records named in the partition's error message


class SchemaIdLookup(Protocol):
    """What schema validation asks the cluster's registry (implemented by
    :class:`kproto.registry.registry.SchemaRegistry`)."""

    def subjects_of_id(self, schema_id: int) -> frozenset[str]:
        """The subjects with a live (not soft-deleted) version of ``schema_id``
        (empty: an unknown id)."""
        ...

    async def record_names_of_id(self, schema_id: int) -> tuple[str, ...]:
        """The fully qualified record names of schema ``schema_id`` (empty: none,
        or an unknown id)."""
        ...

    def schema_id_of_guid(self, guid: uuid.UUID) -> int | None:
        """The id of the schema with ``guid``, if any."""
        ...


async def check_schema_ids(
    topic: str,
    partition: int,
    config: TopicConfig,
    batches: list[ValidBatch],
    lookup: SchemaIdLookup | None,
) -> None:
    """Check the schema id framing the validator read from ``batches`` (produced
    to ``topic``-``partition``; nothing to check when it read none) against the
    registry, under the subject name strategies of ``config``.

    Raises:
        RecordValidationError: INVALID_RECORD with the ``(batch index, message)``
            of each bad record; or, when ``lookup`` is None (no registry on the
            cluster), naming the topic and the missing registry.
    """
    # the sides the validator read (the policy it ran under), whatever the
    # configuration became meanwhile
    framings = [b.schema_ids for b in batches if b.schema_ids is not None]
    if not framings:
        return
    sides = []
    if framings[0].key is not None:
        sides.append(("key", config.confluent_key_subject_name_strategy))
    if framings[0].value is not None:
        sides.append(("value", config.confluent_value_subject_name_strategy))
    if lookup is None:
        names = " and ".join(f"confluent.{side}.schema.validation" for side, _ in sides)
        raise RecordValidationError(
            ErrorCode.INVALID_RECORD,
            f"topic {topic!r} has {names} on but the cluster has no schema registry "
            "to check schema ids against (start it with Cluster(schema_registry=True))",
        )
    bad: dict[int, str] = {}
    for framing in framings:
        for side, strategy in sides:
            framed = framing.key if side == "key" else framing.value
            if framed is not None:
                await _check_side(topic, side, strategy, framed, lookup, bad)
    if bad:
        where = f"topic-partition {topic}-{partition}"
        errors = tuple(
            (
                i,
                f"Log record at batch index {i} for {where} failed schema validation: {why}",
            )
            for i, why in sorted(bad.items())
        )
        shown = "; ".join(m for _, m in errors[:_SHOWN])
        raise RecordValidationError(
            ErrorCode.INVALID_RECORD,
            (
                shown
                if len(errors) == 1
                else f"{len(errors)} records failed schema validation, the first "
                f"{min(len(errors), _SHOWN)}: {shown}"
            ),
            errors,
        )


async def _check_side(
    topic: str,
    side: str,
    strategy: str,
    framed: FramedIds,
    lookup: SchemaIdLookup,
    bad: dict[int, str],
) -> None:
    """Note in ``bad`` (batch index -> why) the records of one side whose framing
    is missing or whose schema id is not registered under the strategy's subject;
    one registry lookup per distinct id."""
    for i, unframed in framed.unframed:
        bad.setdefault(i, unframed)
    short = strategy.rsplit(".", 1)[-1]
    for schema_id, indexes in framed.ids.items():
        why = await _refusal(topic, side, short, schema_id, lookup)
        if why is not None:
            for i in indexes:
                bad.setdefault(i, why)
    for guid, indexes in framed.guids.items():
        as_uuid = uuid.UUID(bytes=guid)
        found = lookup.schema_id_of_guid(as_uuid)
        why = (
            f"its {side} schema GUID {as_uuid} is not registered"
            if found is None
            else await _refusal(topic, side, short, found, lookup)
        )
        if why is not None:
            for i in indexes:
                bad.setdefault(i, why)


async def _refusal(
    topic: str, side: str, strategy: str, schema_id: int, lookup: SchemaIdLookup
) -> str | None:
    """Why ``schema_id`` is not acceptable for ``side`` of ``topic`` under
    ``strategy`` (its short name), or None when it is."""
    subjects = lookup.subjects_of_id(schema_id)
    if not subjects:
        return f"its {side} schema id {schema_id} is not registered"
    if strategy == "TopicNameStrategy":
        wanted = {f"{topic}-{side}"}
    else:
        names = await lookup.record_names_of_id(schema_id)
        if not names:
            return (
                f"its {side} schema id {schema_id} has no record name, which "
                f"{strategy} needs"
            )
        prefix = "" if strategy == "RecordNameStrategy" else f"{topic}-"
        wanted = {prefix + name for name in names}
    if subjects & wanted:
        return None
    return (
        f"its {side} schema id {schema_id} is not registered under subject "
        f"{' or '.join(repr(s) for s in sorted(wanted))} ({strategy}; it is under "
        f"{', '.join(repr(s) for s in sorted(subjects))})"
    )
