"""Parse Kafka's JSON message definitions (JSON with comments) into plain dicts.

Kafka reads these files with Jackson's ALLOW_COMMENTS, so they carry ``//`` line
comments, trailing ``//`` comments and ``/* */`` blocks. This module strips comments
outside strings and then checks every object against the keys Kafka's generator
accepts, so a new key upstream stops the build instead of being silently ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["ParseError", "strip_comments", "parse_text", "parse_file"]

MESSAGE_KEYS = frozenset(
    {
        "apiKey",
        "type",
        "listeners",
        "name",
        "validVersions",
        "deprecatedVersions",
        "flexibleVersions",
        "latestVersionUnstable",
        "fields",
        "commonStructs",
    }
)
FIELD_KEYS = frozenset(
    {
        "name",
        "type",
        "versions",
        "nullableVersions",
        "taggedVersions",
        "tag",
        "ignorable",
        "default",
        "mapKey",
        "entityType",
        "zeroCopy",
        "flexibleVersions",
        "about",
        "fields",
    }
)
COMMON_STRUCT_KEYS = frozenset({"name", "versions", "fields"})


class ParseError(ValueError):
    """A definition file that is not valid JSON-with-comments or has unknown keys.

    The message names the file and the JSON path (``fields[3].fields[0]``).
    """


def strip_comments(text: str) -> str:
    """Remove ``//`` and ``/* */`` comments that stand outside JSON strings.

    >>> strip_comments('{"a": "x//y", // note\\n "b": 1 /* c */}')
    '{"a": "x//y", \\n "b": 1 }'
    """
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
        elif c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ParseError("unterminated /* comment")
            i = end + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _check_keys(obj: Any, allowed: frozenset[str], where: str) -> None:
    if not isinstance(obj, dict):
        raise ParseError(f"{where}: expected an object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise ParseError(f"{where}: unknown key(s) {', '.join(unknown)}")


def _check_fields(fields: Any, where: str) -> None:
    if not isinstance(fields, list):
        raise ParseError(f"{where}: 'fields' must be a list")
    for i, field in enumerate(fields):
        path = f"{where}[{i}]"
        _check_keys(field, FIELD_KEYS, path)
        if "fields" in field:
            _check_fields(field["fields"], f"{path}.fields")


def parse_text(text: str, source: str = "<string>") -> dict[str, Any]:
    """Parse one definition and validate its keys; ``source`` names it in errors."""
    try:
        data = json.loads(strip_comments(text))
    except (json.JSONDecodeError, ParseError) as exc:
        raise ParseError(f"{source}: {exc}") from exc
    _check_keys(data, MESSAGE_KEYS, f"{source}: $")
    _check_fields(data.get("fields", []), f"{source}: fields")
    for i, struct in enumerate(data.get("commonStructs", [])):
        where = f"{source}: commonStructs[{i}]"
        _check_keys(struct, COMMON_STRUCT_KEYS, where)
        _check_fields(struct.get("fields", []), f"{where}.fields")
    return data  # type: ignore[no-any-return]


def parse_file(path: Path) -> dict[str, Any]:
    """Parse one definition file (UTF-8)."""
    return parse_text(path.read_text(encoding="utf-8"), str(path))
