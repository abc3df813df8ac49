"""The Python blocks of docs/guide/transactions.md run, in order, as written."""

from __future__ import annotations

import contextlib
import io

from tests.guides import run_page


def test_guide_code_blocks_run() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run_page("transactions.md") >= 1
    printed = out.getvalue().splitlines()
    assert printed[0].startswith("<TransactionalProducer 'invoicer' READY TV2")
    assert printed[1] == "[b'invoice for 2 apples']"
    assert printed[2] == "{TopicPartition(topic='orders', partition=0): 1}"
