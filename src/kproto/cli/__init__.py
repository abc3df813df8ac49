"""The ``kproto`` command line (also ``python -m kproto``).

::

    kproto dump-log [--format kafka|kproto] [--json] [--fail-on-corrupt]
                    [--offsets-decoder|--transaction-log-decoder|...] PATH...
    kproto decode (--request | --response --api-key K --api-version V) [--records] FILE
    kproto describe NAME [--version V]
    kproto topics list|describe|create|delete --bootstrap-server HOST:PORT ...
    kproto groups list|describe --bootstrap-server HOST:PORT ...
    kproto produce|consume TOPIC --bootstrap-server HOST:PORT ...
                 [--key-format|--value-format F --schema-registry URL]
    kproto schemas subjects|versions|get|register|check|delete|config|mode
                   --schema-registry URL ...
    kproto broker [--port P] [--data-dir DIR] ...
    kproto spark ...            (runs when kproto[spark] is installed)
    kproto --version

``dump-log`` prints every batch and record of Kafka log segment files in
``kafka-dump-log.sh --deep-iteration --print-data-log``'s layout (see
:mod:`kproto.cli.dump_log`); ``--json`` writes one JSON object per record per line
with its file, topic, partition and every batch field. ``decode`` decodes one
request or response frame to JSON (see :mod:`kproto.cli.decode`). ``describe``
prints a message's fields, types, versions and tags.

Exit status: 0 on success (corrupt batches included, unless ``--fail-on-corrupt``:
then 1), 2 on usage or input errors. Every error the user can cause (arguments, paths,
a port in use, state files, inputs that do not decode, a missing extra) is one line,
``kproto: error: <what and where>``; ``--debug`` (before or after the subcommand)
prints the traceback as well. Every subcommand but ``spark`` needs only kproto's
runtime dependencies; ``spark`` is always listed and says how to install its extra.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any, Final, NoReturn

import attrs

from kproto.cli import console, groups, schemas, topics
from kproto.cli._common import CliError, error_line, read_input
from kproto.cli.decode import cmd_decode
from kproto.cli.dump_log import add_dump_arguments, cmd_dump_log
from kproto.exceptions import DecodeError
from kproto.index import (
    ApiKey,
    UnknownMessageError,
    UnsupportedVersionError,
    api_versions,
    data_type,
    data_versions,
    request_type,
    response_type,
)
from kproto.meta import entity_info, wire_fields

__all__ = ["CliError", "main", "build_parser", "read_input", "version_text"]


def _api_key(text: str) -> int:
    """An API key from a number (``3``) or a name (``METADATA``, ``Metadata``)."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text).upper().replace("-", "_")
    for candidate in (text.upper(), snake):
        if candidate in ApiKey.__members__:
            return int(ApiKey[candidate])
    raise argparse.ArgumentTypeError(f"unknown API {text!r}")


# --------------------------------------------------------------------------- describe


def _resolve(name: str) -> list[tuple[str, type, range]]:
    """``[(label, class at the chosen version, versions)]`` for a message name."""
    base = re.sub(r"(Request|Response)$", "", name)
    wanted = {"Request": "request", "Response": "response"}.get(name[len(base) :])
    try:
        key = _api_key(base)
    except argparse.ArgumentTypeError:
        key = None
    if key is not None:
        try:
            versions = api_versions(key)
        except UnknownMessageError:
            versions = None
        if versions is not None:
            out = []
            for kind, lookup in (
                ("request", request_type),
                ("response", response_type),
            ):
                if wanted in (None, kind):
                    out.append((kind, lookup(key, versions.stop - 1), versions))
            return out
    try:
        versions = data_versions(name)
    except UnknownMessageError:
        raise CliError(f"unknown message {name!r}") from None
    return [("data", data_type(name, versions.stop - 1), versions)]


def _at_version(label: str, cls: type, version: int) -> type:
    info = entity_info(cls)
    if label == "data":
        return data_type(info.message, version)
    key = info.api_key
    assert key is not None
    return (request_type if label == "request" else response_type)(key, version)


def _describe_fields(cls: type, indent: int) -> Iterator[str]:
    for field, w in wire_fields(cls):
        if w.kind == "unknown_tags":
            continue
        notes = [f"versions {w.versions}"]
        if w.nullable:
            notes.append("nullable")
        if w.tag is not None:
            notes.append(f"tag {w.tag}")
        if w.kind == "primitive" and w.default not in (None, 0, "", False, b""):
            notes.append(f"default {w.default!r}")
        if w.entity_type:
            notes.append(f"entity {w.entity_type}")
        yield f"{' ' * indent}{field.name}: {w.type}  ({'; '.join(notes)})"
        nested = (
            w.entity
            if w.kind == "struct"
            else (w.element.entity if w.element else None)
        )
        if nested is not None:
            yield from _describe_fields(nested, indent + 4)


def _flexible_from(label: str, cls: type, versions: range) -> int | None:
    for v in versions:
        if entity_info(_at_version(label, cls, v)).flexible:
            return v
    return None


def cmd_describe(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``kproto describe``: fields, types, versions and tags of a message."""
    for label, latest, versions in _resolve(args.name):
        version = versions.stop - 1 if args.version is None else args.version
        try:
            cls = _at_version(label, latest, version)
        except UnsupportedVersionError as exc:
            raise CliError(str(exc)) from None
        info = entity_info(cls)
        flex = _flexible_from(label, latest, versions)
        title = f"{cls.__name__} v{version}"
        if label == "data":  # a record, header or data message: no API key
            kind = (
                f"{info.message_type} record type {info.api_key}"
                if info.api_key is not None
                else f"{info.message_type} message"
            )
            title += f" ({kind}, versions {versions.start}-{versions.stop - 1})"
        elif info.api_key is not None:
            title += f" (api_key {info.api_key})"
        if info.unstable:
            title += (
                " UNSTABLE (latestVersionUnstable upstream; not negotiated by default)"
            )
        print(title, file=out)
        print(
            f"  versions {versions.start}-{versions.stop - 1}; "
            f"flexible {'from v' + str(flex) if flex is not None else 'never'}; "
            f"this version {'flexible' if info.flexible else 'classic'}; source {info.source}",
            file=out,
        )
        header = getattr(cls, "__header_schema__", None)
        if header is not None:
            print(
                f"  header: {header.__name__} v{entity_info(header).version}", file=out
            )
        for line in _describe_fields(cls, 2):
            print(line, file=out)
        print(file=out)
    return 0


# --------------------------------------------------------------------------- main


class _Parser(argparse.ArgumentParser):
    """argparse with kproto's error line: ``kproto: error: <subcommand>: <what>``
    (subcommand parsers are made of the same class, so they say it too)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        where = self.prog.removeprefix("kproto").strip()
        self.exit(2, f"kproto: error: {where + ': ' if where else ''}{message}\n")


def version_text() -> str:
    """``kproto X.Y.Z (Kafka message schemas: <source folder>)``: the installed
    distribution's version and where the generated classes come from (the pinned
    apache/kafka snapshot of ``schema/schema.lock``, as the classes record it)."""
    try:
        version = importlib.metadata.version("kproto")
    except importlib.metadata.PackageNotFoundError:
        version = "(not installed)"
    key = ApiKey.API_VERSIONS
    source = entity_info(request_type(key, api_versions(key).stop - 1)).source
    return f"kproto {version} (Kafka message schemas: {source.split('/')[0]})"


class _VersionAction(argparse.Action):
    """``--version``: computed when asked for, not when the parser is built."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any):
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        super().__init__(option_strings, argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(version_text())
        parser.exit()


def _finish(parser: argparse.ArgumentParser, seen: set[int]) -> None:
    """Let ``--debug`` also follow a subcommand (``kproto broker --debug``); it is
    shown once, in the top-level help. ``SUPPRESS`` keeps a subcommand from resetting
    the top-level value. A missing subcommand is named by its choices (``required:
    {list,describe}``), not by its ``dest``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            if action.metavar is None:
                action.metavar = "{" + ",".join(action.choices) + "}"
            for child in action.choices.values():
                if id(child) not in seen:
                    seen.add(id(child))
                    child.add_argument(
                        "--debug",
                        action="store_true",
                        default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS,
                    )
                    _finish(child, seen)


def build_parser() -> argparse.ArgumentParser:
    """The ``kproto`` argument parser. Building it imports neither pyspark nor the
    broker's server (only what each subcommand's arguments need)."""
    parser = _Parser(
        prog="kproto", description="Tools for the Apache Kafka wire protocol."
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="print kproto's version and exit"
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=False,
        help="on an error, print the traceback as well as the one-line message",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    for command in _COMMANDS:
        command.add_arguments(
            sub.add_parser(
                command.name, help=command.help, description=command.description
            )
        )
    from kproto.broker.cli import add_parsers as add_broker_parsers
    from kproto.spark.cli import add_parsers as add_spark_parsers

    add_broker_parsers(sub)
    add_spark_parsers(sub)  # always listed; running it checks for the extra
    _finish(parser, set())
    return parser


def _add_decode_arguments(dec: argparse.ArgumentParser) -> None:
    """``kproto decode``'s arguments."""
    dec.add_argument(
        "--api-key",
        type=_api_key,
        default=None,
        help="number or name; needed for responses (requests: from the header)",
    )
    dec.add_argument(
        "--api-version",
        type=int,
        default=None,
        help="needed for responses (requests: from the header)",
    )
    kind = dec.add_mutually_exclusive_group(required=True)
    kind.add_argument("--request", action="store_true")
    kind.add_argument("--response", action="store_true")
    dec.add_argument(
        "--size-prefix",
        choices=("auto", "yes", "no"),
        default="auto",
        help="is there an int32 size first? auto (default): yes when it equals "
        "the bytes after it, or (requests) when they do not start with a known "
        "api_key/api_version",
    )
    dec.add_argument(
        "--records",
        action="store_true",
        help="decode records fields into batches and records",
    )
    dec.add_argument("file", metavar="FILE")
    dec.set_defaults(func=cmd_decode)


def _add_describe_arguments(desc: argparse.ArgumentParser) -> None:
    desc.add_argument("name", metavar="NAME")
    desc.add_argument("--version", type=int, default=None, help="default: the latest")
    desc.set_defaults(func=cmd_describe)


@attrs.frozen
class _Command:
    """A ``kproto`` subcommand: its name, its line in ``kproto --help``, the
    description heading its own help, and what adds its arguments (and its
    ``func``)."""

    name: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]


#: The subcommands kproto itself defines, in ``kproto --help``'s order (``broker``
#: and ``spark`` follow: their packages add them).
_COMMANDS: Final = (
    _Command(
        "dump-log",
        "print the batches and records of Kafka log segments (files or dirs)",
        "Decode every batch and record of Kafka .log segment files "
        "(concatenated record batches / legacy message sets).",
        add_dump_arguments,
    ),
    _Command(
        "decode",
        "decode one request/response frame to JSON",
        "Decode one frame (int32 size prefix, header, body) read from "
        "FILE ('-' for stdin) and print it as JSON.",
        _add_decode_arguments,
    ),
    _Command(
        "describe",
        "print a message's fields, types, versions and tags",
        "NAME is an API (Metadata, METADATA, 3), one side of it "
        "(MetadataRequest) or a data message (OffsetCommitValue, RequestHeader).",
        _add_describe_arguments,
    ),
    _Command(
        "topics",
        "list, describe, create and delete topics (kafka-topics.sh)",
        "kafka-topics.sh's --list, --describe, --create and --delete, "
        "in its output layout.",
        topics.add_arguments,
    ),
    _Command(
        "groups",
        "list and describe consumer groups (kafka-consumer-groups.sh)",
        "kafka-consumer-groups.sh's --list and --describe, in its layout.",
        groups.add_arguments,
    ),
    _Command(
        "produce",
        "send standard input's lines as records (kafka-console-producer.sh)",
        "One record per line of standard input (see --property, "
        "--key-separator, --json).",
        console.add_produce_arguments,
    ),
    _Command(
        "consume",
        "print a topic's records (kafka-console-consumer.sh)",
        "Print records of TOPIC, one a line (the value by default).",
        console.add_consume_arguments,
    ),
    _Command(
        "schemas",
        "Schema Registry subjects, versions, schemas, compatibility, config, mode",
        "Schema Registry operations (REST API v1); JSON output, or a "
        "table with --table.",
        schemas.add_arguments,
    ),
)


#: What a user can cause: printed as one ``kproto: error:`` line, exit status 2.
#: (An OSError is a path, a permission or a port; a DecodeError an input that is not
#: what the command reads.) Anything else is a bug and keeps its traceback.
USER_ERRORS = (CliError, OSError, DecodeError)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``kproto`` command; return the exit status (0, 1 for
    ``--fail-on-corrupt`` findings, 2 for usage and input errors, 130 on Ctrl-C)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = args.func
    try:
        if func in (cmd_dump_log, cmd_decode, cmd_describe):
            return int(func(args, sys.stdout, sys.stderr))
        return int(func(args))
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0
    except USER_ERRORS as exc:
        if args.debug:
            traceback.print_exc()
        print(f"kproto: error: {error_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if args.debug:
            traceback.print_exc()
        return 130


if __name__ == "__main__":
    sys.exit(main())
