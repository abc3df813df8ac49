"""Subject name strategies: which registry subject a record's schema goes under.

Confluent's three (``io.confluent.kafka.serializers.subject``):

- ``TopicNameStrategy`` (the default): ``<topic>-key`` / ``<topic>-value``.
- ``RecordNameStrategy``: the record's fully qualified name (Avro record full name,
  Protobuf message full name, JSON Schema ``title``).
- ``TopicRecordNameStrategy``: ``<topic>-<record name>``.

A strategy is called ``strategy(ctx, record_name) -> subject`` (confluent-kafka's
shape); ``subject.name.strategy`` takes the callable or one of the names above (short
or Confluent's full class name).
"""

from __future__ import annotations

from collections.abc import Callable

from .context import SerializationContext

__all__ = [
    "SubjectNameStrategy",
    "topic_name_strategy",
    "record_name_strategy",
    "topic_record_name_strategy",
    "subject_name_strategy",
]

SubjectNameStrategy = Callable[[SerializationContext | None, str | None], str]


def topic_name_strategy(
    ctx: SerializationContext | None, record_name: str | None
) -> str:
    """``<topic>-key`` or ``<topic>-value``.

    Raises:
        ValueError: no context (the topic is unknown).
    """
    if ctx is None:
        raise ValueError("TopicNameStrategy needs a SerializationContext (the topic)")
    return f"{ctx.topic}-{ctx.field}"


def record_name_strategy(
    ctx: SerializationContext | None, record_name: str | None
) -> str:
    """The record's fully qualified name.

    Raises:
        ValueError: the schema has no record name (e.g. an Avro primitive, a JSON
            Schema without ``title``).
    """
    if not record_name:
        raise ValueError(
            "RecordNameStrategy needs a named record (the schema has no name)"
        )
    return record_name


def topic_record_name_strategy(
    ctx: SerializationContext | None, record_name: str | None
) -> str:
    """``<topic>-<record name>``.

    Raises:
        ValueError: no context, or no record name.
    """
    if ctx is None:
        raise ValueError(
            "TopicRecordNameStrategy needs a SerializationContext (the topic)"
        )
    return f"{ctx.topic}-{record_name_strategy(ctx, record_name)}"


_BY_NAME: dict[str, SubjectNameStrategy] = {
    "TopicNameStrategy": topic_name_strategy,
    "RecordNameStrategy": record_name_strategy,
    "TopicRecordNameStrategy": topic_record_name_strategy,
}


def subject_name_strategy(
    value: SubjectNameStrategy | str | None,
) -> SubjectNameStrategy:
    """The strategy for a ``subject.name.strategy`` config value: a callable, a name
    above (``"RecordNameStrategy"`` or
    ``"io.confluent.kafka.serializers.subject.RecordNameStrategy"``), or None for the
    default (TopicNameStrategy).

    Raises:
        ValueError: an unknown name.
    """
    if value is None:
        return topic_name_strategy
    if callable(value):
        return value
    short = str(value).rsplit(".", 1)[-1]
    if short not in _BY_NAME:
        raise ValueError(
            f"unknown subject.name.strategy {value!r}: one of {', '.join(_BY_NAME)} or a callable"
        )
    return _BY_NAME[short]
