"""The core of kproto.avro does not import pyarrow: only kproto.avro.arrow does."""

from __future__ import annotations

from tests.fresh_interpreter import run_python


def test_core_package_does_not_import_pyarrow() -> None:
    code = (
        "import sys, json, kproto.avro as a; "
        "from array import array; "
        "p = a.avro_plan('\"long\"'); "
        "c = a.decode_avro(p, 1, array('i', [0, 1]).tobytes(), None, b'\\x02'); "
        "assert c.buffers[0][3] == (1).to_bytes(8, 'little'), c.buffers; "
        "print('pyarrow' in sys.modules)"
    )
    out = run_python(code)
    assert out.stdout.strip() == "False"
