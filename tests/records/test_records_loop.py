"""The record loop's two hand-written variants stay in step; header names match."""

from __future__ import annotations

import ast
import inspect

import attrs

from kproto.records import RecordBatch, _v2_loop
from kproto.records._header import RECORDS_AT, V2_HEADER, BatchHead, V2Header


def _shared_lines(fn: object) -> list[str]:
    """The body of ``fn`` without its docstring and without the lines marked sink."""
    source = inspect.getsource(fn)  # type: ignore[arg-type]
    func = ast.parse(source).body[0]
    assert isinstance(func, ast.FunctionDef)
    first = func.body[1].lineno  # after the docstring
    lines = source.splitlines()[first - 1 :]
    return [line for line in lines if not line.rstrip().endswith("# sink")]


def test_columns_and_records_loops_are_the_same_but_for_sink_lines() -> None:
    columns = _shared_lines(_v2_loop.v2_columns_fast)
    records = _shared_lines(_v2_loop.v2_records_fast)
    assert len(columns) > 100  # the whole loop, not an empty match
    assert columns == records


def test_sink_lines_only_store_values() -> None:
    # A sink line may append to a column, set a record slot or build the result:
    # never move the reading position, change a loop variable or branch.
    source = inspect.getsource(_v2_loop)
    sinks = [ln.strip() for ln in source.splitlines() if ln.rstrip().endswith("# sink")]
    assert len(sinks) > 20
    reader_names = {"data", "pos", "end", "count", "v", "w", "rec_end", "name"}
    for line in sinks:
        (stmt,) = ast.parse(line).body
        assert isinstance(
            stmt, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Expr | ast.Return
        ), line
        stored = {
            n.id
            for n in ast.walk(stmt)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        assert not stored & reader_names, line


def test_batch_head_is_record_batch_without_records() -> None:
    names = [a.name for a in attrs.fields(RecordBatch)]
    assert names[-1] == "records"
    assert list(BatchHead._fields) == names[:-1]


def test_v2_header_layout() -> None:
    assert V2_HEADER.size == RECORDS_AT == 61
    assert len(V2_HEADER.unpack(bytes(61))) == len(V2Header._fields) == 13
