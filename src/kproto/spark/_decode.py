"""Decode binary DataFrame columns into typed struct columns (``mapInArrow``)."""

from __future__ import annotations

import io
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any, Final

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    DataType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from kproto.internal_topics import COORDINATOR_TOPICS, key_messages, value_message
from kproto.spark._schema import entities_to_arrow, spark_schema
from kproto.spark._session import ensure_python_workers

__all__ = [
    "INTERNAL_TOPICS",
    "decode_column",
    "decode_internal_topic",
    "merged_schema",
    "internal_topic_schema",
]

Reader = Callable[[IO[bytes]], Any]


def _internal_topics() -> dict[str, tuple[dict[int, str], dict[str, str]]]:
    out = {}
    for topic in COORDINATOR_TOPICS:
        keys = key_messages(topic)
        if topic == "__consumer_offsets":
            # Record type 0 (LegacyOffsetCommitKey in Kafka 4) is OffsetCommitKey
            # v0, the same fields: both offset commit types share its columns.
            keys[0] = "OffsetCommitKey"
        out[topic] = (keys, {k: value_message(k) for k in keys.values()})
    return out


#: Internal topics :func:`decode_internal_topic` knows: key version (the record
#: type) -> key message, and key message -> value message; read from the
#: generated classes (:mod:`kproto.internal_topics`): ``__consumer_offsets``
#: (offset commits, classic groups, KIP-848 consumer groups, share and streams
#: groups), ``__transaction_state`` and ``__share_group_state``.
INTERNAL_TOPICS: Final[dict[str, tuple[dict[int, str], dict[str, str]]]] = (
    _internal_topics()
)
_VERSION: Final = struct.Struct(">h")


def _default_reader(entity_cls: type) -> Reader:
    from kproto.serial import entity_reader

    return entity_reader(entity_cls)


def _read_whole(read: Reader, data: bytes, start: int = 0) -> Any:
    """Decode ``data[start:]`` with ``read``; trailing bytes are an error."""
    stream = io.BytesIO(data)
    stream.seek(start)
    entity = read(stream)
    left = len(data) - stream.tell()
    if left:
        raise ValueError(f"{left} trailing bytes after {type(entity).__name__}")
    return entity


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def decode_column(
    df: DataFrame,
    column: str,
    entity_cls: type,
    *,
    error_column: str | None = "decode_error",
    reader: Reader | None = None,
    version_prefix: bool = False,
) -> DataFrame:
    """Replace binary ``column`` of ``df`` by its decoded struct.

    Every non-null value must be exactly one encoded ``entity_cls`` (no length
    prefix; with ``version_prefix``, after an int16 version); it is decoded with ``kproto.serial.entity_reader(entity_cls)`` (or
    ``reader``) in a ``mapInArrow`` task and converted column by column to the Arrow
    form of :func:`~kproto.spark.spark_schema`. Null values stay null.

    Args:
        df: any DataFrame with a binary ``column``.
        column: name of that column; it keeps its position, its type becomes
            ``spark_schema(entity_cls)`` (nullable).
        entity_cls: a generated kproto entity class, picklable by reference.
        error_column: name of a string column appended to hold, per row, why the
            value did not decode (null if it did; the struct is then null). ``None``:
            fail the Spark job on the first bad value instead.
        reader: ``read(stream) -> entity`` to use instead of
            ``kproto.serial.entity_reader(entity_cls)``; must be picklable.
        version_prefix: each value starts with the big-endian int16 version of
            ``entity_cls``, as the keys and values of internal topics
            (``__consumer_offsets``, ``__transaction_state``, ``__cluster_metadata``
            records) do; it is checked against ``entity_cls.__version__`` (a
            mismatch is that row's error) and skipped. Default ``False``: values
            are the bare entity, as before. A value that fails to decode without
            this option but starts with ``entity_cls``'s version gets an error
            naming the option. Mixed versions: use :func:`decode_internal_topic`.

    Returns:
        A lazy DataFrame: ``df``'s columns with ``column`` decoded, plus
        ``error_column``.

    Python workers are set up as for :func:`~kproto.spark.read_log_segments`
    (``sys.executable`` on a local master unless ``PYSPARK_PYTHON`` or
    ``spark.pyspark.python`` says otherwise).

    Raises:
        ValueError: ``column`` is missing or not binary, or ``error_column`` exists.
    """
    names = df.columns
    if column not in names:
        raise ValueError(f"no column {column!r} in {names}")
    if df.schema[column].dataType.typeName() != "binary":
        raise ValueError(
            f"column {column!r} is {df.schema[column].dataType}, not binary"
        )
    if error_column is not None and error_column in names:
        raise ValueError(f"column {error_column!r} already exists")
    target_spark = spark_schema(entity_cls)
    fields = [
        StructField(column, target_spark, True) if f.name == column else f
        for f in df.schema.fields
    ]
    if error_column is not None:
        fields.append(StructField(error_column, StringType(), True))
    out_schema = StructType(fields)
    index = names.index(column)
    version: int | None = getattr(entity_cls, "__version__", None)
    target = to_arrow_type(target_spark, timezone="UTC")
    out_names = out_schema.fieldNames()

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Built in the worker: compiled readers need not be picklable.
        read = reader if reader is not None else _default_reader(entity_cls)
        for batch in batches:
            values = batch.column(index).to_pylist()
            entities: list[Any] = []
            errors: list[str | None] = []
            for v in values:
                if v is None:
                    entities.append(None)
                    errors.append(None)
                    continue
                try:
                    entities.append(_read_value(read, v, version, version_prefix))
                    errors.append(None)
                except Exception as exc:
                    if error_column is None:
                        raise
                    entities.append(None)
                    errors.append(_error_text(exc))
            arrays = list(batch.columns)
            arrays[index] = entities_to_arrow(entities, entity_cls, target)
            if error_column is not None:
                arrays.append(pa.array(errors, pa.string()))
            yield pa.RecordBatch.from_arrays(arrays, names=out_names)

    ensure_python_workers(df.sparkSession)
    return df.mapInArrow(run, out_schema)


def _read_value(read: Reader, data: bytes, version: int | None, prefixed: bool) -> Any:
    """One :func:`decode_column` value: the entity, after the int16 ``version``
    prefix when ``prefixed``.

    Raises:
        ValueError: a missing or different version prefix; trailing bytes (with a
            hint at ``version_prefix=True`` when the value starts with ``version``).
        kproto.serial.DecodeError: the bytes do not decode.
    """
    if prefixed:
        if len(data) < 2:
            raise ValueError(
                f"value too short for an int16 version ({len(data)} bytes)"
            )
        found = _VERSION.unpack_from(data)[0]
        if version is not None and found != version:
            raise ValueError(f"version prefix {found}, but decoding as v{version}")
        return _read_whole(read, data, 2)
    try:
        return _read_whole(read, data)
    except Exception as exc:
        if version is None or len(data) < 2 or _VERSION.unpack_from(data)[0] != version:
            raise
        raise ValueError(
            f"{exc} (the value starts with int16 {version}, this class's version, "
            "as internal-topic records do: pass version_prefix=True)"
        ) from exc


# --- internal topics --------------------------------------------------------------


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _merge_types(a: DataType, b: DataType) -> DataType:
    if isinstance(a, StructType) and isinstance(b, StructType):
        return _merge_structs([a, b])
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return ArrayType(_merge_types(a.elementType, b.elementType), a.containsNull)
    if a != b:
        raise ValueError(f"incompatible types across versions: {a} vs {b}")
    return a


def _merge_structs(structs: Sequence[StructType]) -> StructType:
    """Union of fields by name; a field missing from some struct becomes nullable."""
    order: list[str] = []
    merged: dict[str, StructField] = {}
    counts: dict[str, int] = {}
    for s in structs:
        for f in s.fields:
            counts[f.name] = counts.get(f.name, 0) + 1
            if f.name not in merged:
                order.append(f.name)
                merged[f.name] = f
            else:
                old = merged[f.name]
                merged[f.name] = StructField(
                    f.name,
                    _merge_types(old.dataType, f.dataType),
                    old.nullable or f.nullable,
                )
    return StructType(
        [
            StructField(
                n,
                merged[n].dataType,
                merged[n].nullable or counts[n] < len(structs),
            )
            for n in order
        ]
    )


def merged_schema(message: str) -> StructType:
    """One Spark struct covering every generated version of a data message.

    Fields are the union over versions (by name, newest version's order first); a
    field absent from some version, or nullable in any, is nullable.

    Raises:
        kproto.index.UnknownMessageError: no such message.
    """
    from kproto.index import data_type, data_versions

    versions = list(data_versions(message))
    return _merge_structs(
        [spark_schema(data_type(message, v)) for v in reversed(versions)]
    )


def _messages(topic: str) -> list[str]:
    keys, values = INTERNAL_TOPICS[topic]
    out: list[str] = []
    for k in list(keys.values()) + list(values.values()):
        if k not in out:
            out.append(k)
    return out


def internal_topic_schema(topic: str) -> list[StructField]:
    """The columns :func:`decode_internal_topic` appends for ``topic``.

    Raises:
        ValueError: ``topic`` is not in :data:`INTERNAL_TOPICS`.
    """
    if topic not in INTERNAL_TOPICS:
        raise ValueError(
            f"unknown internal topic {topic!r}; known: {sorted(INTERNAL_TOPICS)}"
        )
    fields = [
        StructField("key_version", ShortType(), True),
        StructField("value_version", ShortType(), True),
        StructField("record_type", StringType(), True),
    ]
    for message in _messages(topic):
        fields.append(StructField(_snake(message), merged_schema(message), True))
    fields.append(StructField("error", StringType(), True))
    return fields


class _Dispatch:
    """Per-task decoder for one internal topic (lazy class lookups, cached)."""

    def __init__(self, topic: str) -> None:
        self.keys, self.values = INTERNAL_TOPICS[topic]
        self.readers: dict[tuple[str, int], tuple[type, Reader]] = {}

    def reader(self, message: str, version: int) -> tuple[type, Reader]:
        hit = self.readers.get((message, version))
        if hit is None:
            from kproto.index import data_type

            cls = data_type(message, version)
            hit = (cls, _default_reader(cls))
            self.readers[(message, version)] = hit
        return hit

    def decode(
        self, key: bytes | None, value: bytes | None
    ) -> tuple[int | None, int | None, str | None, Any, Any, str | None]:
        """(key_version, value_version, key message, key entity, value entity, error)."""
        if key is None:
            return None, None, None, None, None, "null key"
        if len(key) < 2:
            return None, None, None, None, None, f"key too short ({len(key)} bytes)"
        kv = _VERSION.unpack_from(key)[0]
        vv = (
            _VERSION.unpack_from(value)[0]
            if value is not None and len(value) >= 2
            else None
        )
        key_message = self.keys.get(kv)
        if key_message is None:
            known = ", ".join(str(v) for v in sorted(self.keys))
            return (
                kv,
                vv,
                None,
                None,
                None,
                f"unknown key version {kv} (known: {known})",
            )
        try:
            _, read = self.reader(key_message, kv)
            k = _read_whole(read, key, 2)
        except Exception as exc:
            return kv, vv, key_message, None, None, f"key: {_error_text(exc)}"
        if value is None:
            return kv, None, key_message, k, None, None  # tombstone
        if vv is None:
            return (
                kv,
                None,
                key_message,
                k,
                None,
                f"value too short ({len(value)} bytes)",
            )
        value_message = self.values[key_message]
        try:
            _, read = self.reader(value_message, vv)
        except LookupError as exc:
            return (
                kv,
                vv,
                key_message,
                k,
                None,
                f"unknown {value_message} version {vv}: {exc}",
            )
        try:
            v = _read_whole(read, value, 2)
        except Exception as exc:
            return kv, vv, key_message, k, None, f"value: {_error_text(exc)}"
        return kv, vv, key_message, k, v, None


def decode_internal_topic(df: DataFrame, topic: str) -> DataFrame:
    """Decode the records of an internal Kafka topic held in a Kafka-shaped DataFrame.

    ``df`` needs binary columns ``key`` and ``value`` (like Spark's Kafka source or
    :func:`~kproto.spark.read_log_segments`); other columns pass through. Each key and
    value starts with an int16 version that selects the generated class
    (``kproto.index.data_type``; the table is :data:`INTERNAL_TOPICS`): for
    ``__consumer_offsets`` key versions 0/1 are ``OffsetCommitKey`` and 2
    ``GroupMetadataKey``, their values ``OffsetCommitValue`` /
    ``GroupMetadataValue`` (v0-v4), 3-8 and 16 the KIP-848 ``ConsumerGroup*``
    records, 10-15 the share group and 17-23 the streams group records; for
    ``__transaction_state`` ``TransactionLogKey`` / ``TransactionLogValue``; for
    ``__share_group_state`` ``ShareSnapshotKey`` / ``ShareUpdateKey`` and values.

    Appended columns: ``key_version``, ``value_version`` (smallint, null if absent),
    ``record_type`` (the key message name, e.g. ``"OffsetCommitKey"``), one struct
    column per message (``offset_commit_key``, ``offset_commit_value``,
    ``group_metadata_key``, ``group_metadata_value`` or ``transaction_log_key``,
    ``transaction_log_value``; typed by :func:`merged_schema`, the union of all
    versions; set only for the row's own type), and ``error`` (string). Tombstones
    (null value) keep a null value struct and no error. Unknown versions and
    undecodable bytes do not fail the job: they set ``error``.

    :func:`~kproto.spark.read_log_segments` output composes directly:
    ``decode_internal_topic(read_log_segments(spark, path), "__consumer_offsets")``.
    Its string ``error`` column is kept in place (not appended again): a row's error
    is the segment's (a corrupt batch) when set, else the decoding one. Rows with
    ``is_control`` true (transaction markers, which ``__consumer_offsets`` holds
    for transactional offset commits) are passed through undecoded, with no error.

    Raises:
        ValueError: unknown ``topic``, ``df`` lacks binary ``key``/``value``, a
            column this appends already exists (other than a string ``error``).
    """
    extra = internal_topic_schema(topic)
    for name in ("key", "value"):
        if name not in df.columns or df.schema[name].dataType.typeName() != "binary":
            raise ValueError(f"decode_internal_topic needs a binary column {name!r}")
    # An input error column (read_log_segments') is merged into ours, not repeated.
    error_index = (
        df.columns.index("error")
        if "error" in df.columns and isinstance(df.schema["error"].dataType, StringType)
        else None
    )
    if error_index is not None:
        extra = [f for f in extra if f.name != "error"]
    clash = {f.name for f in extra} & set(df.columns)
    if clash:
        raise ValueError(f"columns {sorted(clash)} already exist")
    out_schema = StructType(list(df.schema.fields) + extra)
    out_names = out_schema.fieldNames()
    key_index = df.columns.index("key")
    value_index = df.columns.index("value")
    control_index = (
        df.columns.index("is_control")
        if "is_control" in df.columns
        and df.schema["is_control"].dataType.typeName() == "boolean"
        else None
    )
    keys, values = INTERNAL_TOPICS[topic]
    messages = _messages(topic)
    targets = {
        m: to_arrow_type(out_schema[_snake(m)].dataType, timezone="UTC")
        for m in messages
    }
    value_of = dict(values)

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        dispatch = _Dispatch(topic)
        for batch in batches:
            ks = batch.column(key_index).to_pylist()
            vs = batch.column(value_index).to_pylist()
            given = (
                batch.column(error_index).to_pylist()
                if error_index is not None
                else [None] * len(ks)
            )
            control = (
                batch.column(control_index).to_pylist()
                if control_index is not None
                else [None] * len(ks)
            )
            kvs: list[int | None] = []
            vvs: list[int | None] = []
            types: list[str | None] = []
            errors: list[str | None] = []
            per_message: dict[str, list[Any]] = {m: [None] * len(ks) for m in messages}
            for i, (k, v) in enumerate(zip(ks, vs, strict=True)):
                if given[i] is not None or control[i]:
                    kvs.append(None)
                    vvs.append(None)
                    types.append(None)
                    errors.append(given[i])
                    continue
                kv, vv, km, ke, ve, err = dispatch.decode(k, v)
                kvs.append(kv)
                vvs.append(vv)
                types.append(km)
                errors.append(err)
                if km is not None:
                    per_message[km][i] = ke
                    per_message[value_of[km]][i] = ve
            arrays = list(batch.columns)
            if error_index is not None:
                arrays[error_index] = pa.array(errors, pa.string())
            arrays.append(pa.array(kvs, pa.int16()))
            arrays.append(pa.array(vvs, pa.int16()))
            arrays.append(pa.array(types, pa.string()))
            for m in messages:
                arrays.append(_mixed_entities_to_arrow(per_message[m], targets[m]))
            if error_index is None:
                arrays.append(pa.array(errors, pa.string()))
            yield pa.RecordBatch.from_arrays(arrays, names=out_names)

    ensure_python_workers(df.sparkSession)
    return df.mapInArrow(run, out_schema)


def _mixed_entities_to_arrow(entities: Sequence[Any], target: pa.DataType) -> pa.Array:
    """Entities of possibly different classes (versions) to one array of ``target``.

    Rows are grouped by class, each group converted by name into ``target`` (fields
    the class lacks are null), and the groups put back in row order.
    """
    assert isinstance(target, pa.StructType)
    groups: dict[type, list[int]] = {}
    for i, e in enumerate(entities):
        if e is not None:
            groups.setdefault(type(e), []).append(i)
    if not groups:
        return pa.nulls(len(entities), target)
    if len(groups) == 1 and len(next(iter(groups.values()))) == len(entities):
        cls = next(iter(groups))
        return entities_to_arrow(entities, cls, target)
    pieces: list[pa.Array] = [pa.nulls(1, target)]  # index 0: the null row
    take = [0] * len(entities)
    start = 1
    for cls, rows in groups.items():
        pieces.append(entities_to_arrow([entities[i] for i in rows], cls, target))
        for j, i in enumerate(rows):
            take[i] = start + j
        start += len(rows)
    combined = pa.concat_arrays(pieces)
    return combined.take(pa.array(take, pa.int32()))
