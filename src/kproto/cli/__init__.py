"""The ``kproto`` command line (also ``python -m kproto``).

::

    kproto dump-log [--format kafka|kproto] [--json] [--fail-on-corrupt]
                    [--offsets-decoder|--transaction-log-decoder|...] PATH...
    kproto decode (--request | --response --api-key K --api-version V) [--records] FILE
    kproto describe NAME [--version V]
    kproto topics list|describe|create|delete --bootstrap-server HOST:PORT ...
    kproto groups list|describe --bootstrap-server HOST:PORT ...
    kproto produce|consume TOPIC --bootstrap-server HOST:PORT ...
    kproto spark ...            (when kproto[spark] is installed)

``dump-log`` prints every batch and record of Kafka log segment files in
``kafka-dump-log.sh --deep-iteration --print-data-log``'s layout (see
:mod:`kproto.cli.dump_log`); ``--json`` writes one JSON object per record per line
with its file, topic, partition and every batch field. ``decode`` decodes one
request or response frame to JSON (see :mod:`kproto.cli.decode`). ``describe``
prints a message's fields, types, versions and tags.

Exit status: 0 on success (corrupt batches included, unless ``--fail-on-corrupt``:
then 1), 2 on usage or input errors.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from typing import IO

from kproto.cli import console, groups, topics
from kproto.cli._common import CliError, read_input
from kproto.cli.decode import cmd_decode
from kproto.cli.dump_log import add_dump_arguments, cmd_dump_log
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

__all__ = ["CliError", "main", "build_parser", "read_input"]


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


def build_parser() -> argparse.ArgumentParser:
    """The ``kproto`` argument parser (with ``spark`` when kproto[spark] imports)."""
    parser = argparse.ArgumentParser(
        prog="kproto", description="Tools for the Apache Kafka wire protocol."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    dump = sub.add_parser(
        "dump-log",
        help="print the batches and records of Kafka log segments (files or dirs)",
        description="Decode every batch and record of Kafka .log segment files "
        "(concatenated record batches / legacy message sets).",
    )
    add_dump_arguments(dump)
    dump.add_argument(
        "--format",
        choices=("kafka", "kproto"),
        default="kafka",
        help="kafka (default): kafka-dump-log.sh --deep-iteration --print-data-log's "
        "layout and field names; kproto: name=value pairs",
    )
    dump.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per record per line on stdout (with file, topic, "
        "partition and every batch field); summary on stderr",
    )
    dump.add_argument(
        "--no-crc-check",
        action="store_true",
        help="do not verify batch checksums (isvalid: unchecked)",
    )
    dump.add_argument(
        "--fail-on-corrupt",
        action="store_true",
        help="exit 1 when a batch fails its checksum or does not decode, or a file "
        "ends inside a batch (default: report them and exit 0)",
    )
    dump.set_defaults(func=cmd_dump_log)

    dec = sub.add_parser(
        "decode",
        help="decode one request/response frame to JSON",
        description="Decode one frame (int32 size prefix, header, body) read from "
        "FILE ('-' for stdin) and print it as JSON.",
    )
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

    desc = sub.add_parser(
        "describe",
        help="print a message's fields, types, versions and tags",
        description="NAME is an API (Metadata, METADATA, 3), one side of it "
        "(MetadataRequest) or a data message (OffsetCommitValue, RequestHeader).",
    )
    desc.add_argument("name", metavar="NAME")
    desc.add_argument("--version", type=int, default=None, help="default: the latest")
    desc.set_defaults(func=cmd_describe)

    topics.add_parsers(sub)
    groups.add_parsers(sub)
    console.add_parsers(sub)
    from kproto.broker.cli import add_parsers as add_broker_parsers

    add_broker_parsers(sub)
    try:
        from kproto.spark.cli import add_parsers
    except ImportError:
        pass
    else:
        add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``kproto`` command; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = args.func
    try:
        if func in (cmd_dump_log, cmd_decode, cmd_describe):
            return int(func(args, sys.stdout, sys.stderr))
        return int(func(args))
    except CliError as exc:
        print(f"kproto: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0


if __name__ == "__main__":
    sys.exit(main())
