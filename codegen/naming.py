"""Python names for Kafka's names: snake_case attributes and schema package names.

Overrides live in one table, :data:`OVERRIDES`, rather than scattered special cases.
"""

from __future__ import annotations

import keyword
import re

__all__ = ["OVERRIDES", "snake_case", "attribute_name", "package_name", "api_enum_name"]

#: Names the rules below would mangle, mapped to what we want instead.
OVERRIDES: dict[str, str] = {}

_HARD_KEYWORDS = frozenset(keyword.kwlist)
_ACRONYM_RUN = re.compile(r"([A-Z]+)([A-Z][a-z])")
_WORD_START = re.compile(r"([a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    """Kafka's CamelCase to snake_case, keeping acronyms together.

    >>> snake_case("ThrottleTimeMs")
    'throttle_time_ms'
    >>> snake_case("ISRNodes")
    'isr_nodes'
    >>> snake_case("TopicId")
    'topic_id'
    >>> snake_case("OffsetForLeaderEpoch")
    'offset_for_leader_epoch'
    >>> snake_case("SaslAuthenticate")
    'sasl_authenticate'
    """
    if name in OVERRIDES:
        return OVERRIDES[name]
    return _WORD_START.sub(r"\1_\2", _ACRONYM_RUN.sub(r"\1_\2", name)).lower()


def attribute_name(name: str) -> str:
    """The Python attribute for a Kafka field: snake_case, and a trailing ``_`` for
    hard keywords (``keyword.kwlist``). Soft keywords (``match``, ``type``) and
    builtins are fine as attribute names, and ``keyword.softkwlist`` differs between
    Python versions, so consulting it would make the output depend on the interpreter.

    >>> attribute_name("Global")
    'global_'
    >>> attribute_name("Type")
    'type'
    >>> attribute_name("Match")
    'match'
    """
    py = snake_case(name)
    return py + "_" if py in _HARD_KEYWORDS else py


def package_name(name: str, message_type: str) -> str:
    """The ``kproto.schema`` package of a message, per CONTRACT.md.

    API messages drop their ``Request``/``Response`` suffix; others keep the full name.

    >>> package_name("ProduceRequest", "request")
    'produce'
    >>> package_name("OffsetCommitValue", "data")
    'offset_commit_value'
    """
    if message_type == "request" and name.endswith("Request"):
        name = name[: -len("Request")]
    elif message_type == "response" and name.endswith("Response"):
        name = name[: -len("Response")]
    return snake_case(name)


def api_enum_name(request_name: str) -> str:
    """The :class:`kproto.ApiKey` member name of an API.

    >>> api_enum_name("OffsetForLeaderEpochRequest")
    'OFFSET_FOR_LEADER_EPOCH'
    """
    return package_name(request_name, "request").upper()
