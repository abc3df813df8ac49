"""The careful magic 2 record reader: explains why the fast loop rejected a batch.

It restates the record grammar of ``DefaultRecord.java`` (see
:mod:`kproto.records._v2_loop`) with a bounds check on every read, and returns the
:class:`~kproto.exceptions.DecodeError` naming the first bad record, field and
byte offset. It runs only after :func:`~kproto.records._v2_loop.v2_records_fast` or
:func:`~kproto.records._v2_loop.v2_columns_fast` has failed, so its speed does not
matter.
"""

from __future__ import annotations

from kproto._varint import VarintError, read_uvarint, read_uvarlong
from kproto.exceptions import DecodeError

__all__ = ["v2_records_checked"]


class _Checked:
    """A bounds-checked reader used to explain why a batch was rejected."""

    __slots__ = ("data", "pos", "shift", "where")

    def __init__(self, data: bytes, pos: int, shift: int, where: str) -> None:
        self.data = data
        self.pos = pos
        self.shift = shift  # added to positions to report input byte offsets
        self.where = where  # appended to reasons ("" or " (in decompressed data)")

    def fail(self, reason: str, path: str, at: int) -> DecodeError:
        return DecodeError(reason + self.where, path=path, offset=at + self.shift)

    def varint(self, limit: int, path: str, max_bytes: int) -> int:
        """A zigzag varint (5 bytes) or varlong (10 bytes) ending before ``limit``."""
        start = self.pos
        read = read_uvarint if max_bytes == 5 else read_uvarlong
        try:
            result, self.pos = read(memoryview(self.data)[:limit], start)
        except IndexError:
            raise self.fail("truncated varint", path, start) from None
        except VarintError as exc:
            reason = (
                f"varint longer than {max_bytes} bytes"
                if exc.too_long
                else "varint out of range"
            )
            raise self.fail(reason, path, start) from None
        return (result >> 1) ^ -(result & 1)

    def blob(self, limit: int, path: str) -> bytes | None:
        start = self.pos
        n = self.varint(limit, path + ".length", 5)
        if n == -1:
            return None
        if n < 0:
            raise self.fail(f"negative length {n}", path, start)
        if self.pos + n > limit:
            raise self.fail(
                f"length {n} runs past the end of the record ({limit - self.pos} bytes left)",
                path,
                start,
            )
        value = self.data[self.pos : self.pos + n]
        self.pos += n
        return value


def v2_records_checked(
    data: bytes, pos: int, end: int, count: int, path: str, shift: int, where: str
) -> DecodeError:
    """Re-read the records of a rejected batch and return the error to raise."""
    r = _Checked(data, pos, shift, where)
    if count < 0:
        return r.fail(f"negative record count {count}", path + ".records_count", pos)
    i = 0
    try:
        for i in range(count):
            rpath = f"{path}.records[{i}]"
            if r.pos >= end:
                return r.fail(
                    f"batch declares {count} records but holds only {i}", rpath, r.pos
                )
            start = r.pos
            length = r.varint(end, rpath + ".length", 5)
            if length <= 0 or r.pos + length > end:
                return r.fail(
                    f"record length {length} does not fit in the batch "
                    f"({end - r.pos} bytes left)",
                    rpath + ".length",
                    start,
                )
            rec_end = r.pos + length
            r.pos += 1  # attributes
            r.varint(rec_end, rpath + ".timestamp_delta", 10)
            r.varint(rec_end, rpath + ".offset_delta", 5)
            r.blob(rec_end, rpath + ".key")
            r.blob(rec_end, rpath + ".value")
            hstart = r.pos
            hcount = r.varint(rec_end, rpath + ".headers.count", 5)
            if hcount < 0:
                return r.fail(
                    f"negative header count {hcount}", rpath + ".headers", hstart
                )
            if hcount * 2 > rec_end - r.pos:
                return r.fail(
                    f"header count {hcount} does not fit in the record",
                    rpath + ".headers",
                    hstart,
                )
            for j in range(hcount):
                hpath = f"{rpath}.headers[{j}]"
                kstart = r.pos
                name = r.blob(rec_end, hpath + ".key")
                if name is None:
                    return r.fail("null header key", hpath + ".key", kstart)
                try:
                    name.decode()
                except UnicodeDecodeError as exc:
                    return r.fail(
                        f"header key is not UTF-8 ({exc.reason})",
                        hpath + ".key",
                        kstart,
                    )
                r.blob(rec_end, hpath + ".value")
            if r.pos != rec_end:
                return r.fail(
                    f"record length says {length} bytes but its fields take "
                    f"{length + r.pos - rec_end}",
                    rpath + ".length",
                    start,
                )
    except DecodeError as exc:
        return exc
    if r.pos != end:
        return r.fail(
            f"{end - r.pos} bytes after the {count} declared records",
            path,
            r.pos,
        )
    return r.fail(
        "malformed records", path, pos
    )  # pragma: no cover - fast/careful disagree
