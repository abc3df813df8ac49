"""``kproto dump-log``: the batches and records of Kafka log segment files.

The default layout is the one ``kafka-dump-log.sh --deep-iteration --print-data-log``
prints (Kafka's ``DumpLogSegments``: ``printBatchLevel``, ``printRecordMetadata``,
``printControlRecord`` and the ``StringDecoder`` contents), field names and order
included, so an operator's scripts keep working::

    Dumping 00000000000000000000.log
    Log starting offset: 0
    baseOffset: 0 lastOffset: 0 count: 1 ... crc: 990125471 isvalid: true
    | offset: 0 CreateTime: 1720108310684 keySize: 1 valueSize: 5 sequence: 0 headerKeys: [] key: 1 payload: hello

Unlike the Java tool, a batch that fails its checksum does not stop the dump: it is
printed in place with ``isvalid: false`` (Kafka's spelling of the batch field; legacy
record lines carry ``isValid:``), followed by its records when they parse. A batch
whose records do not parse is printed from its header, followed by
``| error: <what and where>``.

``--key-decoder`` / ``--value-decoder`` (Kafka's primitives, or Confluent-framed
``avro``, ``protobuf``, ``json`` with ``--schema-registry URL``; see
:mod:`kproto.cli._formats`) print each key / value as JSON, decoded by its schema id
(``payload: {"id":1}``); with ``--json`` the line gains ``decoded``:
``{"value": {...}, "value_schema_id": 1}`` (``value_error`` for a value that does not
decode; the dump goes on).
"""

from __future__ import annotations

import argparse
import base64
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import attrs

from kproto.cli._common import CliError, read_input
from kproto.cli._formats import RecordDecoder, add_typed_arguments, record_decoder
from kproto.cli._log_decoders import (
    DECODER_FOR_TOPIC,
    DECODERS,
    Decoded,
    control_record_text,
    decode_record,
    decoded_json,
)
from kproto.records import (
    Compression,
    ControlRecordType,
    Record,
    RecordBatch,
    TimestampType,
    decode_batches,
)
from kproto.records._header import BatchHead
from kproto.records.segments import (
    batch_crc_valid,
    parse_topic_partition,
    read_batch_head,
    segment_files,
)

__all__ = [
    "BatchView",
    "add_dump_arguments",
    "batch_json",
    "cmd_dump_log",
    "expand_paths",
    "record_json",
]

#: Kafka's ``TimestampType.toString()``.
_TIMESTAMP_NAMES = {
    TimestampType.NO_TIMESTAMP: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}
_INT32_MAX = 2**31 - 1


@attrs.frozen
class BatchView:
    """One batch as printed: its header fields (``head``) plus what the dump found
    out about it.

    ``head`` is the decoded :class:`~kproto.records.RecordBatch`, or for a batch whose
    records did not decode the :class:`~kproto.records._header.BatchHead` read from
    its raw header (with the codec id as stored, 5-7 included). ``count`` is the
    records decoded (the header's count when they did not decode; ``None`` for a
    legacy message); ``is_valid`` is the checksum verdict (``None`` when not
    checked); ``error`` says why the records did not decode (then ``records`` is
    empty).
    """

    head: RecordBatch | BatchHead
    count: int | None
    is_valid: bool | None
    records: Sequence[Record] = ()
    error: str | None = None

    @property
    def compression(self) -> str:
        """The codec's label (``none|gzip|snappy|lz4|zstd``, ``unknown(N)`` for an id
        Kafka does not define)."""
        codec = self.head.attributes & 7
        try:
            return Compression(codec).label
        except ValueError:
            return f"unknown({codec})"

    @property
    def last_offset(self) -> int:
        return self.head.base_offset + self.head.last_offset_delta

    @property
    def size(self) -> int:
        """Bytes of the batch on disk (``sizeInBytes``: length field + 12)."""
        return self.head.batch_length + 12

    @property
    def last_sequence(self) -> int:
        """``DefaultRecordBatch.lastSequence``: -1 without a producer sequence."""
        h = self.head
        return _sequence_at(h.base_sequence, h.last_offset_delta)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The KIP-534 delete horizon (the base timestamp when the flag is set)."""
        h = self.head
        return h.base_timestamp if h.has_delete_horizon else None


def _sequence_at(base_sequence: int, delta: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: sequences wrap at int32 max."""
    if base_sequence == -1:
        return -1
    if base_sequence > _INT32_MAX - delta:
        return delta - (_INT32_MAX - base_sequence) - 1
    return base_sequence + delta


def _from_header(
    data: bytes, position: int, error: str, check_crc: bool
) -> BatchView | None:
    """A batch whose records did not decode, from its header alone (``None`` when
    even the header is cut short)."""
    found = read_batch_head(data, position)
    if found is None:
        return None  # no usable length or magic: the rest cannot be framed
    head, count = found
    valid = batch_crc_valid(data, position) if check_crc else None
    return BatchView(head, count, valid, error=error)


def iter_batches(
    data: bytes, *, check_crc: bool, totals: Counter[str]
) -> Iterator[BatchView | tuple[int, str]]:
    """Every batch of ``data`` in file order, corrupt ones in place.

    Yields a :class:`BatchView` per batch, or ``(position, message)`` for input that
    cannot be framed (a length below the minimum: the rest of the input is lost).
    Counts ``batches``, ``records``, ``crc_failures``, ``corrupt`` (checksum
    failures plus undecodable batches) and ``partial_tail_bytes`` into ``totals``.
    """
    # Checksums are verified here rather than by the decoder, so that a batch that
    # fails them still shows its records.
    it = decode_batches(data, check_crc=False, skip_corrupt=True)
    seen = 0

    def corrupt_so_far() -> Iterator[BatchView | tuple[int, str]]:
        nonlocal seen
        while seen < len(it.corrupt):
            position, _, message = it.corrupt[seen]
            seen += 1
            totals["corrupt"] += 1
            view = _from_header(data, position, message, check_crc)
            if view is None:
                yield position, message
                continue
            totals["batches"] += 1
            if view.is_valid is False:
                totals["crc_failures"] += 1
            yield view

    for batch in it:
        yield from corrupt_so_far()
        valid = batch_crc_valid(data, batch.position) if check_crc else None
        view = BatchView(batch, len(batch.records), valid, batch.records)
        totals["batches"] += 1
        totals["records"] += len(view.records)
        if view.is_valid is False:
            totals["crc_failures"] += 1
            totals["corrupt"] += 1
        yield view
    yield from corrupt_so_far()
    totals["partial_tail_bytes"] += it.partial_tail_bytes


# ----------------------------------------------------------------- kafka layout


def _bool(value: bool | None) -> str:
    return "unchecked" if value is None else str(value).lower()


def kafka_batch_line(b: BatchView) -> str:
    """``DumpLogSegments.printBatchLevel``; ``position`` is the byte position."""
    h = b.head
    if h.magic >= 2:
        count = "null" if b.count is None else str(b.count)
        horizon = b.delete_horizon_ms
        line = (
            f"baseOffset: {h.base_offset} lastOffset: {b.last_offset} count: {count}"
            f" baseSequence: {h.base_sequence} lastSequence: {b.last_sequence}"
            f" producerId: {h.producer_id} producerEpoch: {h.producer_epoch}"
            f" partitionLeaderEpoch: {h.partition_leader_epoch}"
            f" isTransactional: {_bool(h.is_transactional)}"
            f" isControl: {_bool(h.is_control)}"
            " deleteHorizonMs: "
            + ("OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]")
        )
    else:
        line = f"offset: {b.last_offset}"
    return (
        f"{line} position: {h.position}"
        f" {_TIMESTAMP_NAMES[h.timestamp_type]}: {h.max_timestamp}"
        f" size: {b.size} magic: {h.magic} compresscodec: {b.compression}"
        f" crc: {h.crc} isvalid: {_bool(b.is_valid)}"
    )


def _string(data: bytes) -> str:
    """Kafka's ``StringDecoder``: UTF-8, malformed input replaced."""
    return data.decode("utf-8", "replace")


def kafka_record_line(
    b: BatchView, r: Record, decoder: str | RecordDecoder | None = None
) -> str:
    """``printRecordMetadata`` and, outside control batches, the contents: UTF-8
    text, or what ``decoder`` (one of :data:`~kproto.cli._log_decoders.DECODERS`,
    or the typed key/value formats' :class:`~kproto.cli._formats.RecordDecoder`)
    prints for them."""
    h = b.head
    parts = [
        f"| offset: {r.offset} {_TIMESTAMP_NAMES[h.timestamp_type]}: {r.timestamp}"
        f" keySize: {-1 if r.key is None else len(r.key)}"
        f" valueSize: {-1 if r.value is None else len(r.value)}"
    ]
    if h.magic >= 2:
        sequence = _sequence_at(h.base_sequence, r.offset - h.base_offset)
        keys = ",".join(name for name, _ in r.headers)
        parts.append(f" sequence: {sequence} headerKeys: [{keys}]")
    else:
        parts.append(f" isValid: {_bool(b.is_valid)}")
        if b.compression == "none":  # one message: its checksum is the batch's
            parts.append(f" crc: {h.crc}")
    if r.control is not None:
        ctype = r.control.type
        if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            name = ControlRecordType(ctype).name
            parts.append(
                f" endTxnMarker: {name} coordinatorEpoch: {r.control.coordinator_epoch}"
            )
        else:
            text = control_record_text(ctype, r.value)
            if text is None:
                name = getattr(ctype, "name", "UNKNOWN")
                text = f" controlType: {name}({int(ctype)})"
            parts.append(text)
    elif not h.is_control:
        key, payload = _contents(r, decoder)
        if key is not None:
            parts.append(f" key: {key}")
        if payload is not None:
            parts.append(f" payload: {payload}")
    return "".join(parts)


def _contents(r: Record, decoder: str | RecordDecoder | None) -> Decoded:
    if isinstance(decoder, RecordDecoder):
        return decoder.texts(r)
    if decoder is not None:
        return decode_record(decoder, r)
    return (
        None if r.key is None else _string(r.key),
        None if r.value is None else _string(r.value),
    )


# ----------------------------------------------------------------- kproto layout


def _text(data: bytes | None) -> str:
    if data is None:
        return "null"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + data.hex()
    return text if text.isprintable() else repr(text)


def kproto_batch_line(b: BatchView) -> str:
    """kproto's own layout (``--format kproto``): snake_case ``name=value``."""
    h = b.head
    parts = [
        f"batch base_offset={h.base_offset} last_offset={b.last_offset} "
        f"count={b.count}",
        f"position={h.position} size={b.size} magic={h.magic}",
        f"compression={b.compression} timestamp_type={h.timestamp_type.name}",
        f"crc={h.crc} valid={_bool(b.is_valid)}",
    ]
    if h.magic == 2:
        parts.append(
            f"producer_id={h.producer_id} producer_epoch={h.producer_epoch} "
            f"base_sequence={h.base_sequence} leader_epoch={h.partition_leader_epoch} "
            f"transactional={_bool(h.is_transactional)} "
            f"control={_bool(h.is_control)}"
        )
    return " ".join(parts)


def kproto_record_line(r: Record, decoder: str | RecordDecoder | None = None) -> str:
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
    elif decoder is not None:
        key, payload = _contents(r, decoder)
        text += f" key={key or 'null'} value={payload or 'null'}"
    else:
        text += f" key={_text(r.key)} value={_text(r.value)}"
    return text


# ----------------------------------------------------------------- JSON


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def batch_json(b: BatchView) -> dict[str, Any]:
    """Every field of a batch, snake_case, as JSON values (``compression`` as
    ``none|gzip|snappy|lz4|zstd``, ``timestamp_type`` as ``CREATE_TIME|
    LOG_APPEND_TIME|NO_TIMESTAMP``, ``is_valid`` null when not checked)."""
    h = b.head
    return {
        "position": h.position,
        "base_offset": h.base_offset,
        "last_offset": b.last_offset,
        "count": b.count,
        "batch_length": h.batch_length,
        "size": b.size,
        "partition_leader_epoch": h.partition_leader_epoch,
        "magic": h.magic,
        "crc": h.crc,
        "is_valid": b.is_valid,
        "attributes": h.attributes,
        "compression": b.compression,
        "timestamp_type": h.timestamp_type.name,
        "is_transactional": h.is_transactional,
        "is_control": h.is_control,
        "delete_horizon_ms": b.delete_horizon_ms,
        "base_timestamp": h.base_timestamp,
        "max_timestamp": h.max_timestamp,
        "producer_id": h.producer_id,
        "producer_epoch": h.producer_epoch,
        "base_sequence": h.base_sequence,
        "last_sequence": b.last_sequence,
        "error": b.error,
    }


def record_json(b: BatchView, r: Record | None) -> dict[str, Any]:
    """One record (or ``None``: the record fields null, for a batch whose records
    did not decode) with its batch's fields: the contract's keys first."""
    out: dict[str, Any] = {
        "offset": None if r is None else r.offset,
        "timestamp": None if r is None else r.timestamp,
        "key": None if r is None else _b64(r.key),
        "value": None if r is None else _b64(r.value),
        "headers": [] if r is None else [[k, _b64(v)] for k, v in r.headers],
        "sequence": (
            None
            if r is None
            else (
                _sequence_at(b.head.base_sequence, r.offset - b.head.base_offset)
                if b.head.magic >= 2
                else -1
            )
        ),
        "control": (
            None
            if r is None or r.control is None
            else {
                "type": getattr(r.control.type, "name", r.control.type),
                "coordinator_epoch": r.control.coordinator_epoch,
            }
        ),
    }
    out.update(batch_json(b))
    return out


# ----------------------------------------------------------------- command


def add_dump_arguments(parser: argparse.ArgumentParser) -> None:
    """``kproto dump-log``'s arguments: the paths, the four ``kafka-dump-log.sh``
    decoder flags, the typed keys and values, the output format and the checks."""
    parser.add_argument(
        "files",
        nargs="+",
        metavar="PATH",
        help="a .log segment file, a partition directory <topic>-<partition> (its "
        "segments by base offset) or a data directory (every partition directory in "
        "it, by topic then partition)",
    )
    chosen = parser.add_mutually_exclusive_group()
    for name in DECODERS:
        topic = next(t for t, d in DECODER_FOR_TOPIC.items() if d == name)
        chosen.add_argument(
            f"--{name}-decoder",
            dest="decoder",
            action="store_const",
            const=name,
            help=f"decode keys and values as {topic} records (kafka-dump-log.sh's "
            f"--{name}-decoder; chosen by itself for a {topic}-N directory)",
        )
    chosen.add_argument(
        "--no-decoder",
        action="store_true",
        help="print keys and values as UTF-8 text, internal topics included",
    )
    add_typed_arguments(
        parser,
        "decoder",
        lambda field: f"decode each {field} in this format (Confluent-framed avro, "
        "protobuf, json by schema id with --schema-registry; Kafka's primitives) "
        "and print it as JSON",
    )
    parser.add_argument(
        "--format",
        choices=("kafka", "kproto"),
        default="kafka",
        help="kafka (default): kafka-dump-log.sh --deep-iteration --print-data-log's "
        "layout and field names; kproto: name=value pairs",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per record per line on stdout (with file, topic, "
        "partition and every batch field); summary on stderr",
    )
    parser.add_argument(
        "--no-crc-check",
        action="store_true",
        help="do not verify batch checksums (isvalid: unchecked)",
    )
    parser.add_argument(
        "--fail-on-corrupt",
        action="store_true",
        help="exit 1 when a batch fails its checksum or does not decode, or a file "
        "ends inside a batch (default: report them and exit 0)",
    )
    parser.set_defaults(func=cmd_dump_log)


def expand_paths(names: list[str]) -> list[str]:
    """Files to dump, in Kafka's order (a file as given, a directory through
    :func:`kproto.records.segments.segment_files`).

    Raises:
        CliError: a directory holding no ``.log`` segment.
    """
    out: list[str] = []
    for name in names:
        if name == "-" or not Path(name).is_dir():
            out.append(name)
            continue
        try:
            out.extend(str(p) for p in segment_files(Path(name)))
        except ValueError as exc:
            raise CliError(str(exc)) from None
    return out


def topic_partition(path: Path) -> tuple[str | None, int | None]:
    """Topic and partition from Kafka's layout ``<topic>-<partition>/<base>.log``."""
    return parse_topic_partition(path.resolve(), segment_name_required=False)


def _dump_file(
    name: str,
    data: bytes,
    args: argparse.Namespace,
    out: IO[str],
    err: IO[str],
    totals: Counter[str],
    codecs: Counter[str],
) -> None:
    path = Path(name)
    fmt = "json" if args.json else args.format
    topic, partition = topic_partition(path)
    where = {"file": name, "topic": topic, "partition": partition}
    decoder: str | RecordDecoder | None = args.decoder
    if args.record_decoder is not None:
        decoder = args.record_decoder.for_file(topic, partition)
    elif decoder is None and not args.no_decoder and topic is not None:
        decoder = DECODER_FOR_TOPIC.get(topic)
    if fmt == "kafka":
        print(f"Dumping {name}", file=out)
        stem = path.name.split(".")[0]
        if path.name.endswith(".log") and stem.isdigit():
            print(f"Log starting offset: {int(stem)}", file=out)
    elif fmt == "kproto":
        print(f"Dumping {name} ({len(data)} bytes)", file=out)
    tail_before = totals["partial_tail_bytes"]
    for item in iter_batches(data, check_crc=not args.no_crc_check, totals=totals):
        if isinstance(item, tuple):
            position, message = item
            print(
                f"{name}: cannot frame batch at position {position}: {message}",
                file=err,
            )
            totals["partial_tail_bytes"] += len(data) - position
            continue
        b = item
        codecs[b.compression] += 1
        if b.error is not None:
            print(
                f"{name}: corrupt batch at position {b.head.position} "
                f"(base offset {b.head.base_offset}): {b.error}",
                file=err,
            )
        elif b.is_valid is False:
            print(
                f"{name}: batch at position {b.head.position} (base offset "
                f"{b.head.base_offset}) fails its checksum (stored crc {b.head.crc})",
                file=err,
            )
        if fmt == "json":
            for r in b.records or (None,):
                row = {**record_json(b, r), **where}
                if isinstance(decoder, RecordDecoder):
                    if r is not None and not b.head.is_control:
                        row["decoded"] = decoder.json(r)
                elif decoder is not None and r is not None and not b.head.is_control:
                    row["decoded"] = decoded_json(decoder, r)
                print(json.dumps(row, separators=(",", ":")), file=out)
            continue
        kafka = fmt == "kafka"
        print(kafka_batch_line(b) if kafka else kproto_batch_line(b), file=out)
        for r in b.records:
            line = (
                kafka_record_line(b, r, decoder)
                if kafka
                else kproto_record_line(r, None if b.head.is_control else decoder)
            )
            print(line, file=out)
        if b.error is not None:
            print(f"| error: {b.error}", file=out)
    tail = totals["partial_tail_bytes"] - tail_before
    if tail:
        if fmt == "kafka":
            print(f"Found {tail} invalid bytes at the end of {path.name}", file=out)
        print(f"{name}: {tail} bytes at the end do not hold a whole batch", file=err)


def cmd_dump_log(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``kproto dump-log``: every batch and record of the given files.

    Returns 0, or 1 with ``--fail-on-corrupt`` when a batch failed its checksum or
    did not decode or a file ended inside a batch.
    """
    totals: Counter[str] = Counter()
    codecs: Counter[str] = Counter()
    key_or_value = args.key_decoder or args.value_decoder
    if key_or_value and (args.decoder or args.no_decoder):
        raise CliError(
            "--key-decoder/--value-decoder and the internal topics' decoders are exclusive"
        )
    args.record_decoder = record_decoder(args)
    files = expand_paths(args.files)
    for name in files:
        data = read_input(name)
        totals["bytes"] += len(data)
        _dump_file(name, data, args, out, err, totals, codecs)
    codec_text = ", ".join(f"{c}={n}" for c, n in sorted(codecs.items())) or "-"
    summary = (
        f"Summary: files={len(files)} batches={totals['batches']} "
        f"records={totals['records']} bytes={totals['bytes']} codecs: {codec_text} "
        f"crc_failures={totals['crc_failures']} corrupt_batches={totals['corrupt']} "
        f"partial_tail_bytes={totals['partial_tail_bytes']}"
    )
    print(summary, file=out if args.format == "kproto" and not args.json else err)
    bad = totals["corrupt"] or totals["partial_tail_bytes"]
    return 1 if args.fail_on_corrupt and bad else 0
