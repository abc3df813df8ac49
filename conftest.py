"""The documentation's code runs as tests: every ```python block of README.md and
docs/**/*.md is executed by Sybil (``pytest README.md docs``), the blocks of one page
in order, sharing one namespace (a block of ``>>>`` lines is a doctest: its output is
compared, ``...`` matching anything, whitespace runs equal). A block that cannot run carries a
``<!-- skip: next -->`` comment (counted by tests/test_docs.py); blocks that
need Spark run only when ``KPROTO_DOCS_SPARK=1`` (``make test-docs`` runs the pages
that have such blocks again with it). Run them in one process (``-n 0``): a page's blocks share a namespace.
"""

from __future__ import annotations

import gc
import os
import sys
from doctest import ELLIPSIS, NORMALIZE_WHITESPACE
from pathlib import Path
from typing import Any

from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser


def _setup(namespace: dict[str, Any]) -> None:
    namespace["SPARK"] = os.environ.get("KPROTO_DOCS_SPARK") == "1"
    # Spark's Python workers run this interpreter (its pyarrow), not python3 on PATH
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def _teardown(namespace: dict[str, Any]) -> None:
    """Stop a broker a failed page left running, and drop what the page made (clients
    of a stopped cluster stop retrying)."""
    from kproto.broker import Cluster

    for value in namespace.values():
        if isinstance(value, Cluster):
            value.close()
    namespace.clear()
    gc.collect()


_collect = Sybil(
    parsers=[
        PythonCodeBlockParser(doctest_optionflags=ELLIPSIS | NORMALIZE_WHITESPACE),
        SkipParser(),
    ],
    patterns=["README.md", "docs/*.md", "docs/*/*.md", "docs/*/*/*.md"],
    setup=_setup,
    teardown=_teardown,
).pytest()


def pytest_collect_file(file_path: Path, parent: Any) -> Any:
    """Sybil's collector; with ``KPROTO_DOCS_SPARK=1`` only the pages that have Spark
    blocks (the second run of ``make test-docs``)."""
    if (
        os.environ.get("KPROTO_DOCS_SPARK") == "1"
        and file_path.suffix == ".md"
        and "if(not SPARK" not in file_path.read_text()
    ):
        return None
    return _collect(file_path, parent)
