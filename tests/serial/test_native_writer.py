"""The C entity writer (kproto._entity_writer) against the compiled Python writers.

Contract (see :mod:`kproto.speedups`): for any entity the C writer of a class writes
the bytes the class's compiled Python encoder writes, or falls back to that encoder, so
errors are the same (type and message of the compiled code's own exception, and the
EncodeError with its field path that kproto.serial makes of it). Checked here for every
generated class on hypothesis-made entities, intact and with one value (at any depth)
replaced by an odd one; on deterministic entities with every field set, nullable
fields null, and unknown tagged fields; and on tagged-field sections read back and
written again byte for byte.

The comparisons need the extension; the behaviour tests at the end run on whichever
path is active (CI runs the suite also with ``KPROTO_NO_EXTENSIONS=1``).
"""

from __future__ import annotations

import copy
import enum
import io
import math
import random
import uuid
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproto import speedups
from kproto.meta import Wire, wire_fields
from kproto.schema.api_versions.v3 import ApiVersionsRequest, ApiVersionsResponse
from kproto.schema.metadata.v12 import MetadataRequest, MetadataResponse
from kproto.schema.metadata.v12.request import MetadataRequestTopic
from kproto.schema.produce.v10 import ProduceRequest
from kproto.schema.produce.v10.response import (
    PartitionProduceResponse,
    TopicProduceResponse,
)
from kproto.serial import EncodeError, decode, encode, entity_writer
from kproto.serial.compile import encoder
from tests import strategies
from tests.serial.every_class import ALL_TYPES, every_class

native_only = pytest.mark.skipif(
    not speedups.available(), reason=f"no C extension: {speedups.reason()}"
)


def _raw(entity: Any, native: bool) -> tuple[Any, ...]:
    """What the compiled encoder (C or Python) does: bytes, or its exception."""
    parts: list[bytes] = []
    with speedups.using(native):
        try:
            encoder(type(entity))(entity, parts.append)
        except Exception as exc:
            return ("error", type(exc), str(exc))
    return ("ok", b"".join(parts))


def _public(entity: Any, native: bool) -> tuple[Any, ...]:
    """What ``encode`` and ``entity_writer`` do: the same bytes, or one EncodeError."""
    with speedups.using(native):
        try:
            data = encode(entity)
        except EncodeError as exc:
            data = ("error", str(exc), exc.path)
        stream = io.BytesIO()
        try:
            entity_writer(type(entity))(stream, entity)
        except EncodeError as exc:
            assert stream.getvalue() == b""  # nothing written on error
            assert data == ("error", str(exc), exc.path)
            return data
    assert data == stream.getvalue()
    return ("ok", data)


def _same_on_both_paths(entity: Any) -> tuple[Any, ...]:
    raw = _raw(entity, True)
    assert raw == _raw(entity, False)
    public = _public(entity, True)
    assert public == _public(entity, False)
    assert (raw[0] == "ok") == (public[0] == "ok")
    return public


# ------------------------------------------------------------------- odd values


class _Str(str):
    def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        return b"not what str.encode says"


class _Bytes(bytes):
    pass


class _Int(int):
    pass


class _Code(enum.IntEnum):
    NONE = 0
    BIG = 70000


def _uuid_with_int(value: Any) -> uuid.UUID:
    u = uuid.UUID(int=1)
    object.__setattr__(u, "int", value)
    return u


_ANY_ODD: list[Any] = [
    None,
    object(),
    "text",
    b"raw",
    1.5,
    math.nan,
    -1,
    True,
    (),
    [],
    {1: 2},
    frozenset({1}),
]

_ODD: dict[str, list[Any]] = {
    "int": [
        2**7,
        -(2**7) - 1,
        2**15,
        -(2**15) - 1,
        2**16,
        2**31,
        -(2**31) - 1,
        2**32,
        2**63,
        -(2**63) - 1,
        2**64,
        0,
        -1,
        True,
        False,
        _Int(3),
        _Int(2**40),
        _Code.NONE,
        _Code.BIG,
        1.0,
        "1",
        math.inf,
    ],
    "float64": [0.0, -0.0, math.nan, math.inf, -math.inf, 1e308, 3, 2**1100, True],
    "bool": [0, 1, None, "True", True, False],
    "uuid": [
        uuid.UUID(int=0),
        uuid.UUID(int=2**128 - 1),
        _uuid_with_int(-1),
        _uuid_with_int(2**128),
        _uuid_with_int("x"),
        str(uuid.UUID(int=5)),
        uuid.UUID(int=5).bytes,
    ],
    "string": [
        "",
        "é" * 3,
        "\ud800",
        "x" * 32767,
        "x" * 32768,
        _Str("abc"),
        b"abc",
        bytearray(b"abc"),
    ],
    "bytes": [
        b"",
        bytearray(b"abc"),
        memoryview(b"abcdef"),
        memoryview(b"abcdef")[::2],
        memoryview(b"\x00\x01\x02\x03\x04\x05\x06\x07").cast("i"),
        _Bytes(b"sub"),
        "abc",
        5,
        b"x" * 70000,
    ],
    "unknown_tags": [
        ((1, b"x"), (1, b"y")),
        ((3, b"b"), (1, b"a")),
        ((0, b""), (2**32 - 1, b"max")),
        ((-1, b""),),
        ((2**32, b""),),
        ((1, "str"),),
        ((1, bytearray(b"x")),),
        [(5, b"a")],
        ((5, b"a", 3),),
        ([5, b"a"],),
        ((True, b"a"),),
        ((_Int(7), b"a"),),
        ((0, b"collides with a known tag 0, if any"),),
        None,
        (None,),
    ],
}


def _odd_value(w: Wire, current: Any, rng: random.Random) -> Any:
    """A value for field ``w`` the writers may or may not accept."""
    if rng.random() < 0.15:
        return rng.choice(_ANY_ODD)
    if w.kind == "unknown_tags":
        return rng.choice(_ODD["unknown_tags"])
    if w.kind == "array":
        items = tuple(current or ())
        element = items[0] if items else None
        choices: list[Any] = [
            list(items),
            items + (None,),
            items + ("wrong",),
            iter(items),
            None,
        ]
        if element is not None:
            # a huge array of valid elements: as many bytes out on both paths
            choices.append((element,) * rng.choice((1000, 70000)))
        return rng.choice(choices)
    if w.kind == "struct":
        return rng.choice([None, object(), ApiVersionsRequest(), current])
    t = w.type
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return rng.choice(_ODD["int"])
    if t == "records":
        t = "bytes"
    return rng.choice(_ODD[t])


def _mutate(entity: Any, rng: random.Random) -> Any:
    """``entity`` with one value, at this level or in a nested struct, replaced (a
    copy: the original is unchanged)."""
    fields = [(f.name, w) for f, w in wire_fields(type(entity))]
    if not fields:
        return entity
    name, w = rng.choice(fields)
    value = getattr(entity, name)
    nested = w.kind == "struct" and value is not None
    items = w.kind == "array" and isinstance(value, tuple) and value
    if nested and rng.random() < 0.6:
        new = _mutate(value, rng)
    elif items and w.element is not None and w.element.kind == "struct":
        i = rng.randrange(len(value))
        new = value[:i] + (_mutate(value[i], rng),) + value[i + 1 :]
    else:
        new = _odd_value(w, value, rng)
    return _with(entity, name, new)


def _with(entity: Any, name: str, value: Any) -> Any:
    """A copy of ``entity`` with field ``name`` set to ``value`` as it is (no attrs
    converter runs: a list stays a list)."""
    changed = copy.copy(entity)
    object.__setattr__(changed, name, value)
    return changed


# ------------------------------------------------------------------ parity tests


@native_only
def test_every_class_writes_natively() -> None:
    native = [c for c in ALL_TYPES if type(encoder(c)).__name__ == "Writer"]
    assert len(native) == len(ALL_TYPES)


@native_only
@every_class
@given(data=st.data())
def test_native_and_python_writers_agree(cls: type, data: st.DataObject) -> None:
    entity = data.draw(strategies.entities(cls))
    outcome = _same_on_both_paths(entity)
    assert outcome[0] == "ok"
    with speedups.using(True):
        assert repr(decode(cls, outcome[1])) == repr(entity)
    # one odd value (at any depth): the same bytes or the same errors
    rng = random.Random(data.draw(st.integers(0, 1 << 30)))
    _same_on_both_paths(_mutate(entity, rng))


@native_only
@every_class
def test_every_field_set_null_and_unknown_tags(cls: type) -> None:
    for entity in (
        strategies.sample_entity(cls, 3),
        strategies.sample_entity(cls, 4, null=True),
        strategies.sample_entity(cls, 5, unknown_tags=True),
    ):
        outcome = _same_on_both_paths(entity)
        assert outcome[0] == "ok"
        # written back byte for byte after a read (tagged fields known and unknown)
        with speedups.using(True):
            assert encode(decode(cls, outcome[1])) == outcome[1]


@native_only
def test_a_writer_stands_in_for_its_compiled_encoder() -> None:
    """Attributes it lacks and calls it does not take go to the compiled encoder it
    wraps (its ``__wrapped__``), errors included; ``to_bytes`` returns what it
    appends."""
    write: Any = encoder(ApiVersionsRequest)
    compiled = write.__wrapped__
    assert type(write).__name__ == "Writer" and type(compiled).__name__ == "function"
    assert write.__name__ == compiled.__name__ == "encode_ApiVersionsRequest"
    assert write.__code__ is compiled.__code__
    entity = ApiVersionsRequest(client_software_name="k", client_software_version="1")
    parts: list[bytes] = []
    write(entity, parts.append)
    assert parts == [write.to_bytes(entity)] == [b"\x02k\x021\x00"]
    parts.clear()
    write(obj=entity, w=parts.append)  # keywords: the compiled encoder's call
    assert b"".join(parts) == b"\x02k\x021\x00"
    with pytest.raises(TypeError, match=r"^encode_ApiVersionsRequest\(\) missing 1"):
        write(entity)
    with pytest.raises(
        AttributeError, match="^'function' object has no attribute 'nope'$"
    ):
        write.nope  # noqa: B018


@native_only
def test_mutation_fuzz_on_large_entities() -> None:
    """Many odd values in a deep entity (MetadataResponse v12 with every field set)."""
    rng = random.Random(18)
    base = strategies.sample_entity(MetadataResponse, 1, unknown_tags=True)
    for _ in range(400):
        entity = base
        for _ in range(rng.randint(1, 3)):
            entity = _mutate(entity, rng)
        _same_on_both_paths(entity)


@native_only
def test_a_list_that_changes_while_written_goes_to_python() -> None:
    """A tagged field's comparison with its default runs Python code that grows the
    array being written: the C writer notices and the Python writer decides."""
    partitions: list[Any] = []
    extra = PartitionProduceResponse(index=1)

    class GrowsTheList:
        def __ne__(self, other: object) -> bool:
            if extra not in partitions:
                partitions.append(extra)
            return False  # "equal to the default": not written

    partitions.append(PartitionProduceResponse(index=0, current_leader=GrowsTheList()))
    topic = _with(TopicProduceResponse(name="t"), "partition_responses", partitions)
    with speedups.using(True):
        data = encode(topic)
    assert len(partitions) == 2  # the C writer saw one element, then two
    assert [
        p.index for p in decode(TopicProduceResponse, data).partition_responses
    ] == [
        0,
        1,
    ]
    assert _same_on_both_paths(topic) == ("ok", data)


# ------------------------------------------------- behaviour, on the active path


def test_tagged_fields_roundtrip_byte_for_byte() -> None:
    # ApiVersionsResponse v3: tags 0 (supported_features), 1, 2, 3 known; 7 and 40
    # unknown, written between and after the known ones in tag order.
    response = strategies.sample_entity(ApiVersionsResponse, 7)
    known = encode(attrs.evolve(response, unknown_tagged_fields=()))
    with_unknown = encode(
        attrs.evolve(response, unknown_tagged_fields=((40, b"\x01\x02"), (7, b"")))
    )
    assert with_unknown != known
    back = decode(ApiVersionsResponse, with_unknown)
    assert back.unknown_tagged_fields == ((7, b""), (40, b"\x01\x02"))
    assert encode(back) == with_unknown
    # 4 known + 2 unknown tags in tag order: ..., 3 (zk_migration_ready), 7, 40
    assert with_unknown.endswith(b"\x03\x01\x01" + b"\x07\x00" + b"\x28\x02\x01\x02")


def test_tagged_field_at_its_default_is_omitted() -> None:
    plain = encode(ApiVersionsResponse())
    assert plain.endswith(b"\x00")  # an empty tagged-field section
    at_default = ApiVersionsResponse(finalized_features_epoch=-1)
    assert encode(at_default) == plain
    assert encode(ApiVersionsResponse(finalized_features_epoch=5)) != plain


def test_odd_values_raise_encode_error_with_the_path() -> None:
    with pytest.raises(EncodeError, match="does not fit int16") as info:
        encode(ApiVersionsResponse(error_code=2**15))
    assert info.value.path == "ApiVersionsResponse.error_code"
    request = attrs.evolve(
        ApiVersionsRequest(), client_software_name="x", client_software_version=None
    )
    with pytest.raises(EncodeError) as info:
        encode(request)
    assert info.value.path == "ApiVersionsRequest.client_software_version"
    topic = attrs.evolve(
        strategies.sample_entity(MetadataRequestTopic, 1), name="\ud800"
    )
    with pytest.raises(EncodeError, match="UTF-8") as info:
        encode(MetadataRequest(topics=(topic,)))
    assert info.value.path == "MetadataRequest.topics[0].name"
    duplicate = ApiVersionsRequest(unknown_tagged_fields=((3, b""), (3, b"")))
    with pytest.raises(EncodeError, match="twice"):
        encode(duplicate)


def test_buffers_and_int_subclasses_encode_as_their_values() -> None:
    request = ApiVersionsRequest(client_software_name="a", client_software_version="b")
    assert encode(request) == b"\x02a\x02b\x00"
    response = strategies.sample_entity(MetadataResponse, 2)
    as_enum = _with(response, "throttle_time_ms", _Code.BIG)
    assert encode(as_enum) == encode(_with(response, "throttle_time_ms", 70000))
    assert encode(_with(response, "topics", list(response.topics))) == encode(response)
    produce = strategies.sample_entity(ProduceRequest, 3)
    topic = produce.topic_data[0]
    partition = topic.partition_data[0]
    for records in (bytearray(b"abc"), memoryview(b"xabcx")[1:4]):
        changed = _with(partition, "records", records)
        changed_topic = _with(topic, "partition_data", (changed,))
        assert encode(_with(produce, "topic_data", (changed_topic,))) == encode(
            _with(
                produce,
                "topic_data",
                (
                    _with(
                        topic, "partition_data", (_with(partition, "records", b"abc"),)
                    ),
                ),
            )
        )


def test_a_large_entity_is_written_whole() -> None:
    topics = tuple(
        MetadataRequestTopic(topic_id=uuid.UUID(int=i), name=f"topic-{i:05d}")
        for i in range(20000)
    )
    data = encode(MetadataRequest(topics=topics, allow_auto_topic_creation=False))
    assert len(data) == 1 + 2 + 20000 * (16 + 1 + 11 + 1) + 1 + 1 + 1
    assert decode(MetadataRequest, data).topics == topics
