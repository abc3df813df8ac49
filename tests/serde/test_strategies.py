"""Subject name strategies: Confluent's three, by short and full class name, and
callables in confluent-kafka's shape."""

from __future__ import annotations

import pytest
from confluent_kafka.schema_registry import (
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)
from confluent_kafka.serialization import MessageField as CField
from confluent_kafka.serialization import SerializationContext as CContext

from kproto.serde import MessageField, SerializationContext
from kproto.serde.strategies import (
    record_name_strategy,
    subject_name_strategy,
    topic_name_strategy,
    topic_record_name_strategy,
)


@pytest.mark.parametrize("field", [MessageField.KEY, MessageField.VALUE])
def test_same_subjects_as_confluent(field: MessageField) -> None:
    ours = SerializationContext("orders", field)
    theirs = CContext(
        "orders", CField.KEY if field == MessageField.KEY else CField.VALUE
    )
    name = "example.Order"
    assert topic_name_strategy(ours, name) == topic_subject_name_strategy(theirs, name)
    assert record_name_strategy(ours, name) == record_subject_name_strategy(
        theirs, name
    )
    assert topic_record_name_strategy(ours, name) == topic_record_subject_name_strategy(
        theirs, name
    )


def test_lookup_by_name() -> None:
    assert subject_name_strategy(None) is topic_name_strategy
    assert subject_name_strategy("RecordNameStrategy") is record_name_strategy
    assert (
        subject_name_strategy(
            "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
        )
        is topic_record_name_strategy
    )
    custom = lambda ctx, name: "fixed"  # noqa: E731
    assert subject_name_strategy(custom) is custom
    with pytest.raises(ValueError, match="unknown subject.name.strategy 'Nope'"):
        subject_name_strategy("Nope")


def test_what_each_needs() -> None:
    with pytest.raises(ValueError, match="needs a SerializationContext"):
        topic_name_strategy(None, "x")
    with pytest.raises(ValueError, match="needs a named record"):
        record_name_strategy(None, None)
    with pytest.raises(ValueError, match="needs a SerializationContext"):
        topic_record_name_strategy(None, "x")
