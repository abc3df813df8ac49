"""Reading Spark data source options: Spark hands a source its options as a
case-insensitive map of strings (``CaseInsensitiveStringMap``; pyspark passes the
keys lower-cased), so every read looks the name up lower-cased and names the option
as the user spells it in its error."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["option_bool"]


def option_bool(
    options: Mapping[str, str], name: str, default: bool, error: type[ValueError]
) -> bool:
    """Option ``name`` as a boolean (``true`` / ``false``, any case, as Spark's
    ``CaseInsensitiveStringMap.getBoolean`` reads it); ``default`` when absent.

    Raises:
        ValueError: (as ``error``, the caller's option error class) another value.
    """
    raw = options.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise error(f"option {name!r} must be true or false, not {raw!r}")
    return raw.strip().lower() == "true"
