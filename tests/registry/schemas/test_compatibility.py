"""The compatibility levels over versions (Confluent's ``CompatibilityChecker``):
direction, latest-only versus transitive, newest first, and the trailing messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kproto.registry.schemas import (
    CompatibilityLevel,
    check_compatibility,
    parse_schema,
)

from .compat import error_types


def rec(*fields: dict[str, Any]) -> Any:
    return parse_schema(
        "AVRO", json.dumps({"type": "record", "name": "R", "fields": list(fields)})
    )


A = {"name": "a", "type": "int"}
B_DEFAULT = {"name": "b", "type": "int", "default": 0}
B = {"name": "b", "type": "int"}

V1 = rec(A)
V2 = rec(A, B_DEFAULT)
NEW = rec(A, B)  # reads v2's data (b is there) but not v1's (no b, no default)


@pytest.mark.parametrize(
    ("level", "incompatible_with"),
    [
        ("NONE", None),
        ("BACKWARD", None),
        ("BACKWARD_TRANSITIVE", V1),
        ("FORWARD", None),
        ("FORWARD_TRANSITIVE", None),
        ("FULL", None),
        ("FULL_TRANSITIVE", V1),
    ],
)
def test_levels_against_two_versions(level: str, incompatible_with: Any) -> None:
    errors = check_compatibility(NEW, [V1, V2], level)
    if incompatible_with is None:
        assert errors == []
    else:
        assert errors[-2] == f"{{oldSchema: '{incompatible_with.canonical}'}}"
        assert errors[-1] == f"{{validateFields: 'false', compatibility: '{level}'}}"


def test_forward_transitive_checks_every_old_reader() -> None:
    v1 = rec(A, B)  # an old reader that needs b
    v2 = rec(A, B_DEFAULT)
    new = rec(A)
    assert check_compatibility(new, [v1, v2], "FORWARD") == []
    errors = check_compatibility(new, [v1, v2], "FORWARD_TRANSITIVE", versions=[1, 2])
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in errors[0]
    assert errors[-3:] == [
        "{oldSchemaVersion: 1}",
        f"{{oldSchema: '{v1.canonical}'}}",
        "{validateFields: 'false', compatibility: 'FORWARD_TRANSITIVE'}",
    ]


def test_transitive_reports_the_newest_incompatible_version_first() -> None:
    v1, v2 = rec(A), rec(A, {"name": "c", "type": "int"})
    errors = check_compatibility(
        NEW, [v1, v2], CompatibilityLevel.BACKWARD_TRANSITIVE, versions=[3, 7]
    )
    assert "{oldSchemaVersion: 7}" in errors


def test_full_reports_both_directions() -> None:
    old, new = rec(A, B), rec({"name": "a", "type": "long"})
    errors = check_compatibility(new, [old], "FULL")
    assert error_types(errors) == [
        "TYPE_MISMATCH",
        "READER_FIELD_MISSING_DEFAULT_VALUE",
    ]
    assert "in the old schema does not match with the new schema" in errors[0]


def test_no_previous_versions_is_compatible() -> None:
    assert check_compatibility(NEW, [], "FULL_TRANSITIVE") == []


def test_different_schema_types_are_incompatible() -> None:
    json_schema = parse_schema("JSON", '{"type": "object"}')
    assert check_compatibility(json_schema, [V1], "BACKWARD")[0] == (
        "Incompatible because of different schema type"
    )


def test_levels_by_name_and_unknown_level() -> None:
    assert check_compatibility(NEW, [V1], "backward") != []
    with pytest.raises(ValueError, match="SIDEWAYS"):
        check_compatibility(NEW, [V1], "SIDEWAYS")


def test_level_directions() -> None:
    assert [lvl.value for lvl in CompatibilityLevel if lvl.backward] == [
        "BACKWARD",
        "BACKWARD_TRANSITIVE",
        "FULL",
        "FULL_TRANSITIVE",
    ]
    assert [lvl.value for lvl in CompatibilityLevel if lvl.forward] == [
        "FORWARD",
        "FORWARD_TRANSITIVE",
        "FULL",
        "FULL_TRANSITIVE",
    ]
    assert [lvl.value for lvl in CompatibilityLevel if lvl.transitive] == [
        "BACKWARD_TRANSITIVE",
        "FORWARD_TRANSITIVE",
        "FULL_TRANSITIVE",
    ]


def test_full_follows_confluents_mutual_read_strategy() -> None:
    # FORWARD messages first and without the old schema; the BACKWARD ones after, with it.
    forward_only = check_compatibility(rec(A), [rec(A, B)], "FULL", versions=[4])
    assert [m.split("'")[1] for m in forward_only[:-1]] == [
        "READER_FIELD_MISSING_DEFAULT_VALUE"
    ]
    assert forward_only[-1] == "{validateFields: 'false', compatibility: 'FULL'}"
    both = check_compatibility(
        rec({"name": "a", "type": "string"}), [rec(A)], "FULL", versions=[4]
    )
    assert [m.split("'")[1] for m in both[:2]] == ["TYPE_MISMATCH", "TYPE_MISMATCH"]
    assert "in the old schema does not match with the new schema" in both[0]
    assert "in the new schema does not match with the old schema" in both[1]
    assert both[2:] == [
        "{oldSchemaVersion: 4}",
        f"{{oldSchema: '{rec(A).canonical}'}}",
        "{validateFields: 'false', compatibility: 'FULL'}",
    ]


def test_a_long_old_schema_is_truncated_in_the_messages() -> None:
    fields = [{"name": f"f{i:05d}", "type": "string"} for i in range(600)]
    old = rec(*fields)
    assert len(old.canonical) > 10240
    errors = check_compatibility(rec(*fields, B), [old], "BACKWARD")
    assert errors[1].startswith("{oldSchema: <truncated to 10240 characters> '")
    assert (
        len(errors[1]) == len("{oldSchema: <truncated to 10240 characters> ''}") + 10240
    )
