"""Reading Confluent's compatibility messages in the schema tests, and the one shape of
the Avro, JSON Schema and Protobuf compatibility tables.

A table case is ``(name, old, new, level, expected)``: the schemas as the format's test
writes them, a compatibility level, and the ``errorType`` of each message expected (in
order; empty for compatible).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from kproto.registry.schemas import ParsedSchema, check_compatibility

# Confluent quotes Avro's messages with ' and JSON Schema's and Protobuf's with ".
_ERROR_TYPE = re.compile(r"""\{errorType:(['"])(\w+)\1""")

F = TypeVar("F", bound=Callable[..., Any])


def error_types(errors: list[str]) -> list[str]:
    """The ``errorType`` of each ``{errorType:...}`` message of ``errors``, in order."""
    types = []
    for message in errors:
        if message.startswith("{errorType"):
            match = _ERROR_TYPE.match(message)
            assert match, message
            types.append(match.group(2))
    return types


def table_cases(table: list[tuple[Any, ...]]) -> Callable[[F], F]:
    """Parametrize a test ``(old, new, level, expected)`` with the cases of ``table``,
    each named by its case name. A table of fewer than 40 cases fails collection."""
    assert len(table) >= 40, f"a compatibility table of {len(table)} cases"
    return pytest.mark.parametrize(
        ("old", "new", "level", "expected"),
        [pytest.param(*case[1:], id=case[0]) for case in table],
    )


def check_table_case(
    parse: Callable[[Any], ParsedSchema],
    old: Any,
    new: Any,
    level: str,
    expected: list[str],
) -> list[str]:
    """Check ``new`` against ``old`` (both parsed by ``parse``) at ``level``: the
    messages have the expected error types and end with the level's message when any.
    Returns the messages."""
    errors = check_compatibility(parse(new), [parse(old)], level)
    assert error_types(errors) == expected
    if expected:
        assert errors[-1] == f"{{validateFields: 'false', compatibility: '{level}'}}"
    return errors


def table_test(
    table: list[tuple[Any, ...]], parse: Callable[[Any], ParsedSchema]
) -> Callable[..., None]:
    """The test of a format's compatibility ``table``: each case checked by
    :func:`check_table_case` with ``parse`` (a module assigns it to a ``test_``
    name for pytest to collect)."""

    @table_cases(table)
    def test(old: Any, new: Any, level: str, expected: list[str]) -> None:
        check_table_case(parse, old, new, level, expected)

    return test
