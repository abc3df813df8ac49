"""``kproto produce TOPIC`` and ``kproto consume TOPIC``: ``kafka-console-producer.sh``
and ``kafka-console-consumer.sh`` on :mod:`kproto.client`.

``produce`` sends one record per line of standard input: the line is the value, or
with ``--property parse.key=true`` (or ``--key-separator SEP``) ``KEY<SEP>VALUE``
(separator default a tab, as Kafka's ``LineMessageReader``); ``--json`` reads one
object a line, ``{"key": ..., "value": ..., "headers": {...}, "partition": N}``
(strings or null). ``--header NAME=VALUE`` adds a header to every record.

``consume`` prints each record's value, one a line (``null`` for none), as
Kafka's ``DefaultMessageFormatter``; ``--property print.key=true`` and the other
``print.*`` properties add Kafka's columns (``CreateTime:...``, ``Partition:...``,
``Offset:...``, headers, key, tab-separated); ``--json`` prints one object a line.
Without ``--follow`` it reads up to the end offsets found at start and exits, and
``--timeout-ms`` bounds the whole run; with ``--follow`` it waits for new records
until interrupted (Ctrl-C or SIGTERM end it cleanly, exit 0).

``--key-format`` / ``--value-format`` (:mod:`kproto.cli._formats`: Kafka's primitives,
or Confluent-framed ``avro``, ``protobuf``, ``json`` with ``--schema-registry URL``)
make ``consume`` print each key and value as JSON, as kafka-avro-console-consumer
does (``--property print.schema.ids=true`` adds the schema ids), and ``produce`` read
them as JSON (``--value-schema FILE`` or ``--value-schema-id N``; default the
subject's latest version), as kafka-avro-console-producer does: each line is checked,
a bad one is reported with its line number and not sent, the good ones are sent, and
the exit status is 1 when some line was not.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Iterator
from types import FrameType
from typing import IO, Any

from kproto.cli._common import (
    CliError,
    add_client_arguments,
    client_for,
    name_values,
    positive_int,
)
from kproto.cli._formats import (
    REGISTRY_FORMATS,
    LineError,
    ValueReader,
    ValueWriter,
    add_typed_arguments,
    value_text,
)
from kproto.cli._registry import registry_client
from kproto.client import EARLIEST, LATEST, Client
from kproto.records import Compression, Record

__all__ = [
    "BadLine",
    "add_consume_arguments",
    "add_produce_arguments",
    "format_record",
    "parse_line",
]

_CODECS = {c.label: c for c in Compression}
#: Records sent per Produce request when standard input is not a terminal.
_BATCH = 500
#: Fetch wait per partition while following (ms).
_FOLLOW_WAIT_MS = 200


def _bytes(value: Any, where: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadLine(f"{where}: a string or null expected, got {type(value).__name__}")
    return value.encode()


class BadLine(CliError):
    """An input line that does not parse (it names the line number)."""


def parse_line(
    line: str, number: int, props: dict[str, str], json_input: bool
) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int | None]:
    """One input line as ``(key, value, headers, partition)``, as Kafka's
    ``LineMessageReader`` reads it (``parse.key``, ``key.separator``,
    ``parse.headers``, ``headers.delimiter``, ``headers.separator``,
    ``headers.key.separator``, ``null.marker``) or, with ``json_input``, from an
    object.

    Raises:
        BadLine: the line lacks a separator it needs, or is not such an object
            (the line number is named).
    """
    where = f"stdin line {number}"
    if json_input:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadLine(f"{where}: not JSON: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise BadLine(f"{where}: a JSON object expected")
        unknown = set(obj) - {"key", "value", "headers", "partition"}
        if unknown:
            raise BadLine(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        headers_obj = obj.get("headers") or {}
        if not isinstance(headers_obj, dict):
            raise BadLine(f"{where}: headers must be an object")
        partition = obj.get("partition")
        if partition is not None and (
            isinstance(partition, bool) or not isinstance(partition, int)
        ):
            raise BadLine(f"{where}: partition must be an integer")
        headers = [
            (k, _bytes(v, f"{where} header {k}")) for k, v in headers_obj.items()
        ]
        return (
            _bytes(obj.get("key"), f"{where} key"),
            _bytes(obj.get("value"), f"{where} value"),
            headers,
            partition,
        )
    null = props.get("null.marker")

    def field(text: str) -> bytes | None:
        return None if null is not None and text == null else text.encode()

    headers = []
    rest = line
    if props.get("parse.headers", "false").lower() == "true":
        delimiter = props.get("headers.delimiter", "\t")
        block, sep, rest = rest.partition(delimiter)
        if not sep:
            raise BadLine(f"{where}: no headers delimiter {delimiter!r}")
        if block:
            for pair in block.split(props.get("headers.separator", ",")):
                name, sep, value = pair.partition(
                    props.get("headers.key.separator", ":")
                )
                if not sep:
                    raise BadLine(f"{where}: header {pair!r} has no key separator")
                headers.append((name, field(value)))
    if props.get("parse.key", "false").lower() == "true":
        separator = props.get("key.separator", "\t")
        key, sep, value = rest.partition(separator)
        if not sep:
            raise BadLine(f"{where}: no key separator {separator!r} found")
        return field(key), field(value), headers, None
    return None, field(rest), headers, None


def _send(client: Client, args: argparse.Namespace, pending: list[Any]) -> None:
    by_partition: dict[int | None, list[Any]] = {}
    for key, value, headers, partition in pending:
        chosen = args.partition if partition is None else partition
        by_partition.setdefault(chosen, []).append((key, value, headers))
    for partition, records in by_partition.items():
        client.produce(
            args.topic,
            records,
            partition=partition,
            acks=args.acks,
            compression=_CODECS[args.compression],
            timeout_ms=args.request_timeout_ms,
        )


def _writers(
    args: argparse.Namespace,
) -> tuple[ValueWriter | None, ValueWriter | None]:
    """The key and value writers of ``--key-format`` / ``--value-format`` (None:
    the text's bytes as they are)."""
    if args.key_format is None and args.value_format is None:
        for flag in ("key_schema", "key_schema_id", "value_schema", "value_schema_id"):
            if getattr(args, flag) is not None:
                name = flag.replace("_", "-")
                raise CliError(f"--{name} needs --{name.split('-')[0]}-format")
        return None, None
    if args.json:
        raise CliError(
            "--json reads text values; with --key/--value-format lines are JSON values"
        )
    formats = {args.key_format, args.value_format}
    registry = registry_client(args) if formats & REGISTRY_FORMATS else None
    out = []
    for field in ("key", "value"):
        fmt = getattr(args, f"{field}_format")
        out.append(
            None
            if fmt is None
            else ValueWriter(
                fmt,
                field,
                args.topic,
                registry,
                schema_file=getattr(args, f"{field}_schema"),
                schema_id=getattr(args, f"{field}_schema_id"),
                message_name=getattr(args, f"{field}_message"),
            )
        )
    return out[0], out[1]


def _typed(
    writer: ValueWriter | None,
    data: bytes | None,
    topic: str,
    headers: list[tuple[str, bytes | None]],
) -> bytes | None:
    if writer is None or data is None:
        return data
    return writer(data.decode(), topic, headers)


def cmd_produce(args: argparse.Namespace) -> int:
    """``kproto produce``: standard input's lines to ``args.topic``; 1 when some
    typed line was not sent."""
    props = dict(name_values(args.property, "--property"))
    if args.key_separator is not None:
        props.update({"parse.key": "true", "key.separator": args.key_separator})
    extra: list[tuple[str, bytes | None]] = [
        (name, value.encode()) for name, value in name_values(args.header, "--header")
    ]
    batch = 1 if sys.stdin.isatty() else _BATCH
    key_writer, value_writer = _writers(args)
    typed = key_writer is not None or value_writer is not None
    bad: list[int] = []
    with client_for(args, allow_auto_topic_creation=True) as client:
        # Before reading stdin: a missing topic is created where the broker
        # auto-creates topics, else fails now (UNKNOWN_TOPIC_OR_PARTITION).
        client.run(client.core.topic(args.topic, create=True))
        pending: list[Any] = []
        for number, raw in enumerate(sys.stdin, 1):
            line = raw.rstrip("\n").rstrip("\r")
            if not line and (args.json or typed):
                continue  # an empty line is an empty value, but not a JSON value
            try:
                key, value, headers, partition = parse_line(
                    line, number, props, args.json
                )
                headers = headers + extra
                key = _typed(key_writer, key, args.topic, headers)
                value = _typed(value_writer, value, args.topic, headers)
            except (CliError, LineError) as exc:
                # a line that does not parse or fit its format; a registry that
                # fails is a CliError raised by the writers: it ends the run
                if not typed or not isinstance(exc, LineError | BadLine):
                    raise
                text = str(exc)
                if isinstance(exc, LineError):
                    text = f"stdin line {number}: {text}"
                print(f"kproto: error: {text} (not sent)", file=sys.stderr)
                bad.append(number)
                continue
            pending.append((key, value, headers, partition))
            if len(pending) >= batch:
                _send(client, args, pending)
                pending = []
        if pending:
            _send(client, args, pending)
    if bad:
        print(
            f"kproto: error: {len(bad)} line(s) not sent: "
            f"{', '.join(map(str, bad[:20]))}{' ...' if len(bad) > 20 else ''}",
            file=sys.stderr,
        )
        return 1
    return 0


# --------------------------------------------------------------------------- consume


def _text(data: bytes | None, null: str) -> str:
    return null if data is None else data.decode("utf-8", "replace")


def format_record(
    topic: str,
    partition: int,
    r: Record,
    props: dict[str, str],
    timestamp_type: str,
    key_text: str | None = None,
    value_text: str | None = None,
) -> str:
    """``DefaultMessageFormatter.writeTo``: the enabled columns (timestamp,
    partition, offset, headers, key, value), each followed by ``key.separator``
    but the last, then ``line.separator``. ``key_text`` / ``value_text`` replace
    the key's and value's bytes (a typed format's rendering)."""
    on = {
        name: props.get(f"print.{name}", "true" if name == "value" else "false").lower()
        == "true"
        for name in ("timestamp", "partition", "offset", "headers", "key", "value")
    }
    null = props.get("null.literal", "null")
    columns = []
    if on["timestamp"]:
        columns.append(
            "NO_TIMESTAMP" if r.timestamp < 0 else f"{timestamp_type}:{r.timestamp}"
        )
    if on["partition"]:
        columns.append(f"Partition:{partition}")
    if on["offset"]:
        columns.append(f"Offset:{r.offset}")
    if on["headers"]:
        sep = props.get("headers.key.separator", ":")
        columns.append(
            props.get("headers.separator", ",").join(
                f"{k}{sep}{_text(v, null)}" for k, v in r.headers
            )
            or "NO_HEADERS"
        )
    if on["key"]:
        columns.append(_text(r.key, null) if key_text is None else key_text)
    if on["value"]:
        columns.append(_text(r.value, null) if value_text is None else value_text)
    return props.get("key.separator", "\t").join(columns) + props.get(
        "line.separator", "\n"
    )


def _json_record(
    topic: str, partition: int, r: Record, typed: dict[str, Any] | None = None
) -> str:
    def text(data: bytes | None) -> str | None:
        return None if data is None else data.decode("utf-8", "replace")

    row = {
        "topic": topic,
        "partition": partition,
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key": text(r.key),
        "value": text(r.value),
        "headers": {k: text(v) for k, v in r.headers},
    }
    row.update(typed or {})
    return json.dumps(row, ensure_ascii=False)


class _Readers:
    """The ``--key-format`` / ``--value-format`` readers of ``consume``; ``read``
    gives ``{"key": ..., "value": ..., "key_schema_id": ..., ...}`` for a record
    (only the typed parts)."""

    def __init__(self, args: argparse.Namespace) -> None:
        formats = {args.key_format, args.value_format}
        registry = registry_client(args) if formats & REGISTRY_FORMATS else None
        self.formats = {"key": args.key_format, "value": args.value_format}
        self.readers = {
            field: ValueReader(fmt, field, registry)
            for field, fmt in self.formats.items()
            if fmt is not None
        }

    def read(self, topic: str, partition: int, r: Record) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field, reader in self.readers.items():
            data = r.key if field == "key" else r.value
            try:
                value, schema_id = reader(
                    data, topic, list(r.headers), partition, r.offset
                )
            except ValueError as exc:
                text = str(exc)
                if "offset" not in text:
                    text = f"{topic}-{partition} offset {r.offset}: {text}"
                raise CliError(text) from None
            out[field] = value
            if reader.fmt in REGISTRY_FORMATS:
                out[f"{field}_schema_id"] = schema_id
        return out

    def texts(self, typed: dict[str, Any], props: dict[str, str]) -> dict[str, Any]:
        """``key_text`` / ``value_text`` for :func:`format_record`; with
        ``print.schema.ids=true`` each followed by ``schema.id.separator`` and its
        schema id (Confluent's ``SchemaMessageFormatter``)."""
        null = props.get("null.literal", "null")
        ids = props.get("print.schema.ids", "false").lower() == "true"
        separator = props.get("schema.id.separator", "\t")
        out: dict[str, Any] = {}
        for field in self.readers:
            value = typed[field]
            fmt = self.formats[field]
            assert fmt is not None
            text = null if value is None else value_text(fmt, value)
            if ids and f"{field}_schema_id" in typed:
                schema_id = typed[f"{field}_schema_id"]
                text += separator + (null if schema_id is None else str(schema_id))
            out[f"{field}_text"] = text
        return out


class _StopFlag:
    """Set by SIGTERM while following; the loops check it between fetches and
    records, so a record is never half printed nor left out of the count."""

    def __init__(self) -> None:
        self.set = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.set = True


def _start_offsets(
    client: Client, args: argparse.Namespace, parts: list[int]
) -> dict[int, int]:
    if args.offset is not None:
        if args.offset in ("earliest", "latest"):
            stamp = EARLIEST if args.offset == "earliest" else LATEST
            found = client.list_offsets(args.topic, parts, timestamp=stamp)
            return {p: lo.offset for p, lo in found.items()}
        try:
            offset = int(args.offset)
        except ValueError:
            raise CliError(
                f"--offset {args.offset!r}: a number, earliest or latest"
            ) from None
        if offset < 0:
            raise CliError(f"--offset {offset}: must be >= 0")
        return {p: offset for p in parts}
    stamp = EARLIEST if args.from_beginning else LATEST
    return {
        p: lo.offset
        for p, lo in client.list_offsets(args.topic, parts, timestamp=stamp).items()
    }


def _records(
    client: Client,
    args: argparse.Namespace,
    starts: dict[int, int],
    deadline: float | None,
    stop: _StopFlag,
) -> Iterator[tuple[int, Record]]:
    """Every partition's records from its start; without ``--follow`` up to the end
    offsets of now, partition by partition; with it, round the partitions until
    ``deadline`` (``time.monotonic()``; None: until interrupted)."""
    if not args.follow:
        ends = client.list_offsets(args.topic, list(starts), timestamp=LATEST)
        for p, start in sorted(starts.items()):
            end = ends[p].offset
            offset = start
            while offset < end:
                if deadline is not None and time.monotonic() > deadline:
                    return
                result = client.fetch(args.topic, p, offset)
                for r in result.records:
                    if r.offset < end:
                        yield p, r
                if result.next_offset <= offset:
                    raise CliError(f"{args.topic}-{p}: no progress at offset {offset}")
                offset = result.next_offset
        return
    positions = dict(starts)
    wait = max(10, _FOLLOW_WAIT_MS // max(1, len(positions)))
    while not stop.set and (deadline is None or time.monotonic() <= deadline):
        for p in sorted(positions):
            result = client.fetch(args.topic, p, positions[p], max_wait_ms=wait)
            for r in result.records:
                yield p, r
            positions[p] = max(positions[p], result.next_offset)


def cmd_consume(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    """``kproto consume``: print records of ``args.topic``; see the module doc."""
    out = out or sys.stdout
    props = dict(name_values(args.property, "--property"))
    if args.offset is not None and args.partition is None:
        raise CliError("--offset needs --partition (as kafka-console-consumer.sh)")
    if args.offset is not None and args.from_beginning:
        raise CliError("--offset and --from-beginning are exclusive")
    deadline = (
        None if args.timeout_ms is None else time.monotonic() + args.timeout_ms / 1000
    )
    printed = 0
    skipped = 0
    readers = (
        _Readers(args)
        if args.key_format is not None or args.value_format is not None
        else None
    )
    stop = _StopFlag()
    previous = signal.signal(signal.SIGTERM, stop) if args.follow else None
    try:
        with client_for(args) as client:
            (topic,) = client.describe_topics([args.topic])
            parts = [p.partition for p in topic.partitions]
            if args.partition is not None:
                if args.partition not in parts:
                    raise CliError(
                        f"{args.topic} has no partition {args.partition} (partitions 0-{len(parts) - 1})"
                    )
                parts = [args.partition]
            ts_type = "CreateTime"
            if props.get("print.timestamp", "false").lower() == "true":
                for entry in client.describe_configs([args.topic]).get(args.topic, []):
                    if entry.name == "message.timestamp.type" and entry.value:
                        ts_type = entry.value
            starts = _start_offsets(client, args, parts)
            for p, r in _records(client, args, starts, deadline, stop):
                typed = None
                if readers is not None:
                    try:
                        typed = readers.read(args.topic, p, r)
                    except CliError as exc:
                        if not args.skip_message_on_error:
                            raise
                        print(f"kproto: error: {exc} (skipped)", file=sys.stderr)
                        skipped += 1
                        continue
                if args.json:
                    out.write(_json_record(args.topic, p, r, typed) + "\n")
                else:
                    texts = (
                        {}
                        if typed is None or readers is None
                        else readers.texts(typed, props)
                    )
                    out.write(format_record(args.topic, p, r, props, ts_type, **texts))
                out.flush()
                printed += 1
                if args.max_messages is not None and printed >= args.max_messages:
                    break
                if stop.set or (deadline is not None and time.monotonic() > deadline):
                    break
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    print(f"Processed a total of {printed} messages", file=sys.stderr)
    if skipped:
        print(f"Skipped {skipped} messages that did not decode", file=sys.stderr)
    return 0


def add_produce_arguments(prod: argparse.ArgumentParser) -> None:
    """``kproto produce``'s arguments."""
    add_client_arguments(prod)
    prod.add_argument("topic", metavar="TOPIC")
    prod.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="LineMessageReader properties: parse.key, key.separator, parse.headers, "
        "headers.delimiter, headers.separator, headers.key.separator, null.marker",
    )
    prod.add_argument(
        "--key-separator", default=None, metavar="SEP", help="KEY<SEP>VALUE lines"
    )
    prod.add_argument(
        "--json",
        action="store_true",
        help='lines are {"key":..,"value":..,"headers":{..},"partition":N}',
    )
    prod.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="on every record (repeatable)",
    )
    prod.add_argument("--partition", type=int, default=None, help="default: by key")
    prod.add_argument("--compression", choices=sorted(_CODECS), default="none")
    prod.add_argument("--acks", type=int, choices=(-1, 0, 1), default=-1)
    _add_format_arguments(prod, producing=True)
    prod.set_defaults(func=cmd_produce)


def add_consume_arguments(cons: argparse.ArgumentParser) -> None:
    """``kproto consume``'s arguments."""
    add_client_arguments(cons)
    cons.add_argument("topic", metavar="TOPIC")
    cons.add_argument("--from-beginning", action="store_true", help="default: the end")
    cons.add_argument("--partition", type=int, default=None, help="default: all")
    cons.add_argument(
        "--offset",
        default=None,
        help="a number, earliest or latest (needs --partition)",
    )
    cons.add_argument("--max-messages", type=positive_int, default=None)
    cons.add_argument(
        "--follow", action="store_true", help="wait for new records until interrupted"
    )
    cons.add_argument(
        "--timeout-ms", type=positive_int, default=None, help="stop after this long"
    )
    cons.add_argument("--json", action="store_true", help="one JSON object a line")
    cons.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="DefaultMessageFormatter properties: print.key, print.timestamp, "
        "print.partition, print.offset, print.headers, print.value, key.separator, "
        "line.separator, headers.separator, headers.key.separator, null.literal; "
        "with a registry format print.schema.ids, schema.id.separator",
    )
    cons.add_argument(
        "--skip-message-on-error",
        action="store_true",
        help="a key or value that does not decode in its format: report it and go "
        "on (default: stop with the error)",
    )
    _add_format_arguments(cons, producing=False)
    cons.set_defaults(func=cmd_consume)


def _add_format_arguments(parser: argparse.ArgumentParser, producing: bool) -> None:
    group = add_typed_arguments(
        parser,
        "format",
        lambda field: f"the {field}'s format: Kafka's primitives or Confluent-framed "
        "avro, protobuf, json (JSON Schema) with --schema-registry; "
        + (
            f"the {field} text is read as JSON (avro: Avro's JSON encoding)"
            if producing
            else f"the {field} is printed as JSON"
        ),
    )
    if not producing:
        return
    for field in ("key", "value"):
        group.add_argument(
            f"--{field}-schema",
            default=None,
            metavar="FILE",
            help=f"the {field} schema (.avsc, .proto, JSON Schema), registered "
            f"under the subject <topic>-{field} when new",
        )
        group.add_argument(
            f"--{field}-schema-id",
            type=positive_int,
            default=None,
            metavar="N",
            help=f"write the {field} with this registered schema "
            f"(default without --{field}-schema: the subject's latest version)",
        )
        group.add_argument(
            f"--{field}-message",
            default=None,
            metavar="NAME",
            help="protobuf: the message type (default: the file's first)",
        )
