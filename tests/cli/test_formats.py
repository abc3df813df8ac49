"""The typed key/value formats of the CLI (:mod:`kproto.cli._formats`): Kafka's
primitive encodings both ways with their errors, one-line messages, and the CLI
without the serde dependencies (as on a plain ``pip install kproto``)."""

from __future__ import annotations

import struct
import textwrap
from pathlib import Path

import pytest

from kproto.cli._common import CliError
from kproto.cli._formats import LineError, ValueReader, ValueWriter
from kproto.cli._registry import one_line
from kproto.records import encode_batch
from kproto.serde import (
    DoubleSerializer,
    IntegerSerializer,
    LongSerializer,
    UUIDSerializer,
)
from tests.fresh_interpreter import run_python

UID = "123e4567-e89b-12d3-a456-426614174000"


@pytest.mark.parametrize(
    ("fmt", "text", "data", "printed"),
    [
        ("int", "-2", IntegerSerializer()(-2), -2),
        ("long", str(2**62), LongSerializer()(2**62), 2**62),
        ("double", "0.1", DoubleSerializer()(0.1), 0.1),
        ("double", "3", DoubleSerializer()(3.0), 3.0),
        ("uuid", UID.upper(), UUIDSerializer()(__import__("uuid").UUID(UID)), UID),
        ("string", "héllo", "héllo".encode(), "héllo"),
        ("binary", "AP8=", b"\x00\xff", "AP8="),
    ],
)
def test_primitives_as_kafkas_serializers(
    fmt: str, text: str, data: bytes, printed: object
) -> None:
    assert ValueWriter(fmt, "value", "t", None)(text, "t", []) == data
    assert ValueReader(fmt, "value", None)(data, "t") == (printed, None)
    assert ValueReader(fmt, "value", None)(None, "t") == (None, None)


@pytest.mark.parametrize(
    ("fmt", "text", "message"),
    [
        ("int", "2147483648", "value: 2147483648 does not fit an int"),
        ("long", "1.5", "value: not a long: '1.5' is not an integer"),
        ("long", "true", "value: not a long: 'true' is not an integer"),
        ("double", '"x"', "value: not a double: '\"x\"' is not a number"),
        ("uuid", "nope", "value: not a uuid: badly formed hexadecimal UUID string"),
        ("binary", "***", "value: not a binary: "),
    ],
)
def test_bad_primitive_text(fmt: str, text: str, message: str) -> None:
    with pytest.raises(LineError) as info:
        ValueWriter(fmt, "value", "t", None)(text, "t", [])
    assert str(info.value).startswith(message)


def test_bad_primitive_bytes() -> None:
    with pytest.raises(ValueError, match="key: 3 bytes are not a long"):
        ValueReader("long", "key", None)(b"abc", "t")
    with pytest.raises(ValueError, match="is not a UUID"):
        ValueReader("uuid", "key", None)(b"x" * 36, "t")
    assert ValueReader("double", "value", None)(
        struct.pack(">d", float("nan")), "t"
    ) == (
        "nan",
        None,
    )
    with pytest.raises(CliError, match="--value-format long takes no schema"):
        ValueWriter("long", "value", "t", None, schema_file="x.avsc")


def test_one_line() -> None:
    assert one_line("a\n  b\n\nWARNING: noise\nc ") == "a | b | c"


def test_the_cli_runs_without_the_serde_dependencies(tmp_path: Path) -> None:
    segment = tmp_path / "t-0" / "00000000000000000000.log"
    segment.parent.mkdir()
    segment.write_bytes(encode_batch([(b"k", b"v")]))
    script = textwrap.dedent(f"""
        import sys
        for name in ("fastavro", "jsonschema", "referencing", "google", "requests"):
            sys.modules[name] = None
        from kproto.cli import main
        for argv in (["--help"], ["consume", "--help"], ["schemas", "get", "--help"]):
            try:
                main(argv)
            except SystemExit as done:
                assert done.code == 0, argv
        assert main(["dump-log", "--json", "--key-decoder=string", {str(segment)!r}]) == 0
        assert main(["schemas", "subjects", "--schema-registry=http://127.0.0.1:9"]) == 2
        assert main(["dump-log", "--value-decoder=avro", "--schema-registry=http://x",
                     {str(segment)!r}]) == 2
        loaded = [m for m in ("kproto.registry.client", "kproto.serde.avro") if m in sys.modules]
        assert not loaded, loaded
        """)
    done = run_python(script)
    errors = [line for line in done.stderr.splitlines() if line.startswith("kproto:")]
    assert errors == [
        "kproto: error: the schema registry needs kproto[serde] (pip install "
        "'kproto[serde]'): import of requests halted; None in sys.modules",
        "kproto: error: the schema registry needs kproto[serde] (pip install "
        "'kproto[serde]'): import of requests halted; None in sys.modules",
    ]
    assert '"decoded":{"key":"k"}' in done.stdout
