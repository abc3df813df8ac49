"""The ``kproto`` command line.

::

    kproto dump-log [--json] [--no-crc-check] FILE...
    kproto decode --api-key K --api-version V (--request | --response) FILE
    kproto describe NAME [--version V]
    kproto spark ...            (when kproto[spark] is installed)

``dump-log`` prints every batch and record of Kafka log segment files (or any file
holding concatenated record batches / legacy message sets); with ``--json`` it
writes one JSON object per record per line on stdout and the summary on stderr.
``decode`` decodes one request or response frame (optional int32 size prefix,
header, body) to JSON. ``describe`` prints a message's fields, types, versions and
tags.

Exit status: 0 on success, 1 when ``dump-log`` met corrupt batches, 2 on usage or
input errors.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import re
import struct
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

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
from kproto.json import to_json
from kproto.meta import entity_info, wire_fields
from kproto.records import Record, RecordBatch, decode_batches
from kproto.serial import DecodeError, entity_reader

__all__ = ["main", "build_parser"]


class CliError(Exception):
    """A usage or input problem: printed as ``kproto: error: ...``, exit status 2."""


# --------------------------------------------------------------------------- dump-log


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _text(data: bytes | None) -> str:
    if data is None:
        return "null"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + data.hex()
    return text if text.isprintable() else repr(text)


def _record_json(batch: RecordBatch, r: Record) -> dict[str, Any]:
    return {
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key": _b64(r.key),
        "value": _b64(r.value),
        "headers": [[name, _b64(v)] for name, v in r.headers],
        "base_offset": batch.base_offset,
        "magic": batch.magic,
        "compression": batch.compression.label,
        "is_control": batch.is_control,
        "is_transactional": batch.is_transactional,
        "producer_id": batch.producer_id,
    }


def _batch_line(b: RecordBatch) -> str:
    last = b.base_offset + b.last_offset_delta
    parts = [
        f"batch base_offset={b.base_offset} last_offset={last} count={len(b.records)}",
        f"position={b.position} size={b.batch_length + 12} magic={b.magic}",
        f"compression={b.compression.label} timestamp_type={b.timestamp_type.name}",
        f"crc={b.crc}",
    ]
    if b.magic == 2:
        parts.append(
            f"producer_id={b.producer_id} producer_epoch={b.producer_epoch} "
            f"base_sequence={b.base_sequence} leader_epoch={b.partition_leader_epoch} "
            f"transactional={str(b.is_transactional).lower()} "
            f"control={str(b.is_control).lower()}"
        )
    return " ".join(parts)


def _record_line(r: Record) -> str:
    text = (
        f"| offset={r.offset} timestamp={r.timestamp} "
        f"key_size={-1 if r.key is None else len(r.key)} "
        f"value_size={-1 if r.value is None else len(r.value)}"
    )
    if r.headers:
        text += " headers=[" + ", ".join(f"{k}={_text(v)}" for k, v in r.headers) + "]"
    if r.control is not None:
        ctype = getattr(r.control.type, "name", r.control.type)
        text += f" control={ctype} coordinator_epoch={r.control.coordinator_epoch}"
    else:
        text += f" key={_text(r.key)} value={_text(r.value)}"
    return text


def cmd_dump_log(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``kproto dump-log``: every batch and record of the given files."""
    totals: Counter[str] = Counter()
    codecs: Counter[str] = Counter()
    for name in args.files:
        path = Path(name)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CliError(f"cannot read {name}: {exc.strerror or exc}") from None
        totals["bytes"] += len(data)
        if not args.json:
            print(f"Dumping {name} ({len(data)} bytes)", file=out)
        it = decode_batches(data, check_crc=not args.no_crc_check, skip_corrupt=True)
        for batch in it:
            totals["batches"] += 1
            totals["records"] += len(batch.records)
            codecs[batch.compression.label] += 1
            if args.json:
                for r in batch.records:
                    print(
                        json.dumps(_record_json(batch, r), separators=(",", ":")),
                        file=out,
                    )
            else:
                print(_batch_line(batch), file=out)
                for r in batch.records:
                    print(_record_line(r), file=out)
        for position, base_offset, message in it.corrupt:
            totals["corrupt"] += 1
            if "crc" in message.lower():
                totals["crc_failures"] += 1
            print(
                f"{name}: corrupt batch at position {position} (base offset {base_offset}): {message}",
                file=err,
            )
        if it.partial_tail_bytes:
            totals["partial_tail_bytes"] += it.partial_tail_bytes
            print(
                f"{name}: {it.partial_tail_bytes} bytes of an incomplete batch at the end "
                f"(position {it.partial_tail_position}) were not decoded",
                file=err,
            )
    codec_text = ", ".join(f"{c}={n}" for c, n in sorted(codecs.items())) or "-"
    summary = (
        f"Summary: files={len(args.files)} batches={totals['batches']} "
        f"records={totals['records']} bytes={totals['bytes']} codecs: {codec_text} "
        f"crc_failures={totals['crc_failures']} corrupt_batches={totals['corrupt']}"
    )
    print(summary, file=err if args.json else out)
    return 1 if totals["corrupt"] else 0


# --------------------------------------------------------------------------- decode


def _api_key(text: str) -> int:
    """An API key from a number (``3``) or a name (``METADATA``, ``Metadata``)."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text).upper().replace("-", "_")
    for candidate in (text.upper(), snake):
        if candidate in ApiKey.__members__:
            return int(ApiKey[candidate])
    raise argparse.ArgumentTypeError(f"unknown API {text!r}")


def _read_input(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {name}: {exc.strerror or exc}") from None


def cmd_decode(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``kproto decode``: one request or response frame to JSON."""
    data = _read_input(args.file)
    try:
        cls = (request_type if args.request else response_type)(
            args.api_key, args.api_version
        )
    except LookupError as exc:
        raise CliError(str(exc)) from None
    size: int | None = None
    if len(data) >= 4 and struct.unpack_from(">i", data)[0] == len(data) - 4:
        size = len(data) - 4
        data = data[4:]
    header_cls: type = cls.__header_schema__  # type: ignore[attr-defined]
    stream = io.BytesIO(data)
    try:
        header = entity_reader(header_cls)(stream)
        body = entity_reader(cls)(stream)
    except DecodeError as exc:
        raise CliError(
            f"cannot decode {cls.__name__} v{args.api_version}: {exc}"
        ) from None
    left = len(data) - stream.tell()
    result: dict[str, Any] = {
        "size": size,
        "api_key": args.api_key,
        "api_version": args.api_version,
        "type": cls.__name__,
        "header": to_json(header),
        "body": to_json(body),
        "trailing_bytes": left,
    }
    if args.request and header.request_api_key != args.api_key:
        print(
            f"warning: header says api_key {header.request_api_key}, not {args.api_key}",
            file=err,
        )
    print(json.dumps(result, indent=2), file=out)
    return 0


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
        if info.api_key is not None:
            title += f" (api_key {info.api_key})"
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
        help="print the batches and records of Kafka log segment files",
        description="Decode every batch and record of Kafka .log segment files "
        "(concatenated record batches / legacy message sets).",
    )
    dump.add_argument("files", nargs="+", metavar="FILE")
    dump.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per record per line on stdout; summary on stderr",
    )
    dump.add_argument(
        "--no-crc-check", action="store_true", help="do not verify batch checksums"
    )
    dump.set_defaults(func=cmd_dump_log)

    dec = sub.add_parser(
        "decode",
        help="decode one request/response frame to JSON",
        description="Decode one frame (optional int32 size prefix, header, body) "
        "read from FILE ('-' for stdin) and print it as JSON.",
    )
    dec.add_argument("--api-key", required=True, type=_api_key, help="number or name")
    dec.add_argument("--api-version", required=True, type=int)
    kind = dec.add_mutually_exclusive_group(required=True)
    kind.add_argument("--request", action="store_true")
    kind.add_argument("--response", action="store_true")
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
