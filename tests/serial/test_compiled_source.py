"""The compiled readers and writers are readable: named functions, field-named locals,
a comment per field, linecache names that say which class, ``kproto.serial.source``,
and ``KPROTO_DEBUG=1`` keeping the compiled error as ``__cause__``."""

from __future__ import annotations

import doctest
import io
import linecache
import traceback
from collections.abc import Callable
from typing import Literal

import pytest

import kproto.serial.compile
from kproto.meta import wire_fields
from kproto.schema.api_versions.v3 import ApiVersionsRequest
from kproto.schema.metadata.v12 import MetadataResponse
from kproto.schema.produce.v3 import ProduceRequest
from kproto.serial import (
    DecodeError,
    EncodeError,
    decode,
    encode,
    entity_reader,
    entity_writer,
    source,
)
from kproto.serial.compile import decoder, encoder

METADATA = "kproto.schema.metadata.v12.response.MetadataResponse"


def _classes(cls: type) -> list[type]:
    """``cls`` and every struct class nested in it."""
    found = [cls]
    for _, w in wire_fields(cls):
        nested = w.element.entity if w.element is not None else w.entity
        if nested is not None and nested not in found:
            found += [c for c in _classes(nested) if c not in found]
    return found


@pytest.mark.parametrize("kind", ["decode", "encode"])
def test_function_and_file_are_named_after_the_class(
    kind: Literal["decode", "encode"],
) -> None:
    fn = (decoder if kind == "decode" else encoder)(MetadataResponse)
    assert fn.__name__ == f"{kind}_MetadataResponse"
    filename = f"<kproto {kind} {METADATA}>"
    assert fn.__code__.co_filename == filename
    assert "".join(linecache.getlines(filename)) == source(MetadataResponse, kind)


@pytest.mark.parametrize("kind", ["decode", "encode"])
@pytest.mark.parametrize("cls", [MetadataResponse, ProduceRequest])
def test_every_field_has_a_comment(
    cls: type, kind: Literal["decode", "encode"]
) -> None:
    text = source(cls, kind)
    assert text.startswith(f"def {kind}_{cls.__name__}(")
    for klass in _classes(cls):
        for field, w in wire_fields(klass):
            if w.kind == "unknown_tags":
                continue
            assert f"# {klass.__name__}.{field.name} ({w.type}" in text, field.name


def test_locals_are_named_after_fields() -> None:
    text = source(MetadataResponse, "decode")
    assert "# MetadataResponse.cluster_id (string, nullable)" in text
    for line in (
        "cluster_id = _str(buf[pos:pos + cluster_id_len], 'utf-8')",
        "topics = _tuple(topics_list)",
        "topic_id = _new(_UUID)",
    ):
        assert line in text
    assert "f1 " not in text and "n2 " not in text  # no numbered temporaries
    text = source(MetadataResponse, "encode")
    assert "cluster_id = obj.cluster_id" in text
    assert "for topics_item in topics:" in text


def test_source_argument_errors() -> None:
    with pytest.raises(ValueError, match="'decode' or 'encode'"):
        source(MetadataResponse, "read")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        source(int)
    with pytest.raises(TypeError):
        source(MetadataResponse())  # type: ignore[arg-type]


def test_source_doctest() -> None:
    failures, tried = doctest.testmod(kproto.serial.compile)
    assert tried >= 2 and failures == 0


TRUNCATED = encode(ApiVersionsRequest(client_software_name="kproto"))[:4]


def test_compiled_error_is_dropped_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KPROTO_DEBUG", raising=False)
    with pytest.raises(DecodeError) as info:
        decode(ApiVersionsRequest, TRUNCATED)
    assert info.value.__cause__ is None and info.value.__suppress_context__


@pytest.mark.parametrize(
    "read",
    [
        lambda data: decode(ApiVersionsRequest, data),
        lambda data: entity_reader(ApiVersionsRequest)(io.BytesIO(data)),
        # seekable, not a BytesIO: the read-ahead path
        lambda data: entity_reader(ApiVersionsRequest)(
            io.BufferedReader(io.BytesIO(data))
        ),
    ],
    ids=["decode", "bytesio", "file"],
)
def test_kproto_debug_keeps_the_compiled_decode_error(
    monkeypatch: pytest.MonkeyPatch, read: Callable[[bytes], object]
) -> None:
    monkeypatch.setenv("KPROTO_DEBUG", "1")
    with pytest.raises(DecodeError, match="client_software_name") as info:
        read(TRUNCATED)
    cause = info.value.__cause__
    assert cause is not None and not isinstance(cause, DecodeError)
    frames = traceback.extract_tb(cause.__traceback__)
    generated = [
        f
        for f in frames
        if f.filename
        == f"<kproto decode {ApiVersionsRequest.__module__}.ApiVersionsRequest>"
    ]
    assert generated and generated[-1].name == "decode_ApiVersionsRequest"
    assert generated[-1].line  # the generated line is shown, from linecache


def test_kproto_debug_keeps_the_compiled_encode_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KPROTO_DEBUG", "1")
    bad = MetadataResponse(throttle_time_ms=2**31)
    with pytest.raises(EncodeError, match="throttle_time_ms") as info:
        entity_writer(MetadataResponse)(io.BytesIO(), bad)
    cause = info.value.__cause__
    assert cause is not None
    names = [f.name for f in traceback.extract_tb(cause.__traceback__)]
    assert "encode_MetadataResponse" in names
