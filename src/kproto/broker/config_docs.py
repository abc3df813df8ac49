"""The broker and topic property tables of ``docs/guide/broker-configuration.md``,
generated from the definitions (:data:`kproto.broker.broker_config.BROKER_CONFIGS`,
:data:`kproto.broker.topic_config.TOPIC_CONFIGS`) so that the guide cannot drift
from the code.

``python -m kproto.broker.config_docs FILE`` rewrites the part of FILE between the
``<!-- generated:config-tables -->`` and ``<!-- end:config-tables -->`` lines;
``python -m kproto.broker.config_docs`` prints the tables.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from kproto.broker.broker_config import BROKER_CONFIGS, topic_synonyms
from kproto.broker.topic_config import TOPIC_CONFIGS, ConfigDef, Rule

__all__ = ["BEGIN", "END", "config_table", "render_tables", "rewrite"]

BEGIN = "<!-- generated:config-tables -->"
END = "<!-- end:config-tables -->"


def config_table() -> Iterator[tuple[str, str, str, str, str, str]]:
    """``(name, type, default, valid values, dynamic, what kproto does)`` of every
    broker property, for the documentation table."""
    for name, d in BROKER_CONFIGS.items():
        default = d.definition.default or '""'
        if d.kafka_default is not None:
            default += f" (Kafka: {d.kafka_default})"
        doc = d.definition.documentation
        if d.argument:
            doc += f" Cluster({d.argument}=)."
        yield (
            name,
            d.definition.type.name,
            default,
            _rule(d.definition),
            d.dynamic.value,
            doc,
        )


def _rule(d: ConfigDef) -> str:
    """A validator's rule as Kafka's documentation prints it (``""``: any value
    of the type)."""
    return str(d.validator) if isinstance(d.validator, Rule) else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") if text else ""


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def render_tables() -> str:
    """Markdown: the broker properties' table, then the topic configs' table."""
    lines = [
        "### Broker properties",
        "",
        "Dynamic: whether AlterConfigs on a BROKER resource may change it at run "
        "time (as Kafka's `DynamicBrokerConfig`).",
        "",
        "| Property | Type | Default | Valid values | Dynamic | What kproto does |",
        "|---|---|---|---|---|---|",
    ]
    for name, kind, default, rule, dynamic, doc in config_table():
        lines.append(
            f"| `{name}` | {kind} | {_cell(default)} | {_cell(_code(rule))} | "
            f"{dynamic} | {_cell(doc)} |"
        )
    synonyms = topic_synonyms()
    lines += [
        "",
        "### Topic configs",
        "",
        "Enforced: kproto acts on it; the others are accepted, validated, stored "
        "and described.",
        "",
        "| Config | Type | Default | Valid values | Broker default | Enforced "
        "| What it means |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, d in TOPIC_CONFIGS.items():
        rule = str(d.validator) if isinstance(d.validator, Rule) else ""
        broker = synonyms.get(name, "")
        note = " (internal: described only when set)" if d.internal else ""
        lines.append(
            f"| `{name}` | {d.type.name} | {_cell(d.default) or '(none)'} | "
            f"{_cell(_code(rule))} | {_code(broker)} | "
            f"{'yes' if d.enforced else 'no'} | {_cell(d.documentation + note)} |"
        )
    return "\n".join(lines) + "\n"


def rewrite(path: Path) -> bool:
    """Put :func:`render_tables` between the markers of ``path``; return whether
    the file changed.

    Raises:
        ValueError: the file lacks the markers.
        OSError: it cannot be read or written.
    """
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{path}: no {BEGIN} ... {END} section")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{render_tables()}{END}{tail}"
    if new == text:
        return False
    path.write_text(new)
    return True


if __name__ == "__main__":
    if len(sys.argv) > 1:
        rewrite(Path(sys.argv[1]))
    else:
        sys.stdout.write(render_tables())
