"""The C entity reader (kproto._entity_reader) against the compiled Python readers.

Contract (see :mod:`kproto.speedups`): on any input the C reader of a class returns what
the class's compiled Python decoder returns (an equal entity and the same end
position) or falls back to that decoder, so errors are the same. Checked here for every
generated class on hypothesis-made entities, intact and with bytes mutated.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproto import speedups
from kproto.schema.api_versions.v3 import ApiVersionsRequest
from kproto.serial import decode, encode
from kproto.serial.compile import decoder
from tests.serial.every_class import ALL_TYPES, drawn_and_written, every_class

pytestmark = pytest.mark.skipif(
    not speedups.available(), reason=f"no C extension: {speedups.reason()}"
)


def _outcome(cls: type, data: bytes, native: bool) -> Any:
    with speedups.using(native):
        try:
            entity, end = decoder(cls)(data, 0)
        except Exception as exc:  # the same type and message on both paths
            return ("error", type(exc), str(exc))
    return ("ok", entity, end)


def test_every_class_reads_natively() -> None:
    native = [c for c in ALL_TYPES if type(decoder(c)).__name__ == "Reader"]
    assert len(native) == len(ALL_TYPES)


@every_class
@given(data=st.data())
def test_native_and_python_readers_agree(cls: type, data: st.DataObject) -> None:
    entity, written = drawn_and_written(cls, data)
    encoded = written + b"\x00\x7f"
    got = _outcome(cls, encoded, True)
    # repr: equal field by field, NaN included (nan != nan)
    assert repr(got) == repr(_outcome(cls, encoded, False))
    assert got[0] == "ok" and repr(got[1]) == repr(entity)
    # damaged bytes: equal entities or the same error
    rng = random.Random(data.draw(st.integers(0, 1 << 30)))
    damaged = bytearray(encoded)
    for _ in range(rng.randint(1, 3)):
        damaged[rng.randrange(len(damaged))] = rng.choice((0, 1, 0x7F, 0x80, 0xFF))
    native = _outcome(cls, bytes(damaged), True)
    assert repr(native) == repr(_outcome(cls, bytes(damaged), False))


def test_a_reader_stands_in_for_its_compiled_decoder() -> None:
    """Attributes it lacks and calls it does not take go to the compiled decoder it
    wraps (its ``__wrapped__``), errors included."""
    read: Any = decoder(ApiVersionsRequest)
    compiled = read.__wrapped__
    assert type(read).__name__ == "Reader" and type(compiled).__name__ == "function"
    assert read.__name__ == compiled.__name__ == "decode_ApiVersionsRequest"
    assert read.__code__ is compiled.__code__
    data = encode(
        ApiVersionsRequest(client_software_name="k", client_software_version="1")
    )
    expected = (decode(ApiVersionsRequest, data), len(data))
    assert read(data, 0) == compiled(data, 0) == expected
    assert read(buf=data, pos=0) == expected  # keywords: the compiled decoder's call
    with pytest.raises(TypeError, match=r"^decode_ApiVersionsRequest\(\) takes 2"):
        read(data, 0, 0)
    with pytest.raises(
        AttributeError, match="^'function' object has no attribute 'nope'$"
    ):
        read.nope  # noqa: B018
