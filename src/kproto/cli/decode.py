"""``kproto decode``: one request or response frame to JSON.

The frame is ``[int32 size] header body`` (Kafka's framing, ``NetworkReceive``).
The size prefix is read strictly: when it is there, it must equal the bytes after
it, else the error says ``frame size says N, M bytes present``. A request's api_key
and api_version come from its header (``RequestHeader``: the first two int16s), so
``--api-key/--api-version`` are needed only for responses, whose header does not
carry them. ``--records`` decodes every ``records`` field (Produce, Fetch, ...)
into its batches and records, in ``kproto dump-log --json``'s field names.
"""

from __future__ import annotations

import argparse
import io
import json
import struct
from collections import Counter
from typing import IO, Any

from kproto.cli._common import CliError, read_input
from kproto.cli.dump_log import BatchView, batch_json, iter_batches, record_json
from kproto.index import request_type, response_type
from kproto.json import to_json
from kproto.meta import wire_fields
from kproto.serial import DecodeError, entity_reader

__all__ = ["cmd_decode", "split_size_prefix", "records_json"]

_INT32 = struct.Struct(">i")
_REQUEST_HEAD = struct.Struct(">hh")  # request_api_key, request_api_version


def _known_request(data: bytes) -> bool:
    """Do the first bytes read as a request header of a known api_key/version?"""
    if len(data) < _REQUEST_HEAD.size:
        return False
    try:
        request_type(*_REQUEST_HEAD.unpack_from(data, 0))
    except LookupError:
        return False
    return True


def split_size_prefix(
    data: bytes, mode: str, *, request: bool
) -> tuple[int | None, bytes]:
    """``(size, frame)``: the int32 size prefix (``None`` when absent) and the
    bytes after it.

    ``mode`` is ``"yes"`` (a prefix is there), ``"no"`` or ``"auto"``: a prefix is
    assumed when the first int32 equals the number of bytes after it or, for a
    request, when the input does not start with a known api_key and api_version.

    Raises:
        ValueError: a prefix is there and does not match the bytes after it
            (``frame size says N, M bytes present``), or the input is shorter
            than the prefix.
    """
    if mode == "no":
        return None, data
    if len(data) < _INT32.size:
        if mode == "yes" or request:
            raise ValueError(
                f"input of {len(data)} bytes is shorter than the int32 frame size"
            )
        return None, data
    (size,) = _INT32.unpack_from(data, 0)
    present = len(data) - _INT32.size
    if size == present:
        return size, data[_INT32.size :]
    if mode == "auto" and (not request or _known_request(data)):
        return None, data
    raise ValueError(
        f"frame size says {size}, {present} bytes present"
        + (" (truncated capture?)" if size > present else " (trailing bytes)")
    )


def _batches_json(value: bytes) -> dict[str, Any]:
    totals: Counter[str] = Counter()
    batches: list[dict[str, Any]] = []
    for item in iter_batches(value, check_crc=True, totals=totals):
        if not isinstance(item, BatchView):
            position, message = item
            batches.append({"position": position, "error": message})
            continue
        batch = batch_json(item)
        batch["records"] = [
            {k: v for k, v in record_json(item, r).items() if k not in batch}
            for r in item.records
        ]
        batches.append(batch)
    return {"batches": batches, "partial_tail_bytes": totals["partial_tail_bytes"]}


def records_json(entity: Any, rendered: dict[str, Any]) -> dict[str, Any]:
    """``rendered`` (``to_json(entity)``) with every non-null ``records`` field
    replaced by ``{"batches": [...], "partial_tail_bytes": N}``: each batch as
    :func:`kproto.cli.dump_log.batch_json` plus its ``records``."""
    for field, w in wire_fields(type(entity)):
        value = getattr(entity, field.name)
        if value is None:
            continue
        if w.type == "records":
            rendered[field.name] = _batches_json(bytes(value))
        elif w.kind == "struct":
            records_json(value, rendered[field.name])
        elif w.kind == "array" and w.element is not None and w.element.kind == "struct":
            for item, item_json in zip(value, rendered[field.name], strict=True):
                records_json(item, item_json)
    return rendered


def cmd_decode(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``kproto decode``: one request or response frame to JSON on ``out``."""
    raw = read_input(args.file)
    try:
        size, data = split_size_prefix(raw, args.size_prefix, request=args.request)
    except ValueError as exc:
        raise CliError(f"{args.file}: {exc}") from None
    api_key, api_version = args.api_key, args.api_version
    if args.request:
        if len(data) < _REQUEST_HEAD.size:
            raise CliError(f"{args.file}: {len(data)} bytes hold no request header")
        head_key, head_version = _REQUEST_HEAD.unpack_from(data, 0)
        for name, given, found in (
            ("api_key", api_key, head_key),
            ("api_version", api_version, head_version),
        ):
            if given is not None and given != found:
                print(f"warning: header says {name} {found}, not {given}", file=err)
        api_key = head_key if api_key is None else api_key
        api_version = head_version if api_version is None else api_version
    elif api_key is None or api_version is None:
        raise CliError("a response needs --api-key and --api-version")
    try:
        cls: Any = (request_type if args.request else response_type)(
            api_key, api_version
        )
    except LookupError as exc:
        raise CliError(str(exc)) from None
    stream = io.BytesIO(data)
    try:
        header = entity_reader(cls.__header_schema__)(stream)
        body = entity_reader(cls)(stream)
    except DecodeError as exc:
        hint = ""
        if size is None and len(raw) >= 4:
            (first,) = _INT32.unpack_from(raw, 0)
            if first > len(raw) - 4:
                hint = (
                    f" (if the input starts with a size prefix: frame size says "
                    f"{first}, {len(raw) - 4} bytes present)"
                )
        raise CliError(
            f"cannot decode {cls.__name__} v{api_version}: {exc}{hint}"
        ) from None
    rendered_body = to_json(body)
    if args.records:
        rendered_body = records_json(body, rendered_body)
    result: dict[str, Any] = {
        "size": size,
        "api_key": api_key,
        "api_version": api_version,
        "type": cls.__name__,
        "header": to_json(header),
        "body": rendered_body,
        "trailing_bytes": len(data) - stream.tell(),
    }
    print(json.dumps(result, indent=2), file=out)
    return 0
