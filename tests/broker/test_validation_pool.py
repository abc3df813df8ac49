"""Where produced batches are validated: inline for small requests, on the
validation threads for large ones and for clients that sent decompression bombs."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from kproto.broker.log_validator import LogPolicy, RecordValidationError, ValidBatch
from kproto.broker.topic_config import TopicConfig
from kproto.broker.validation_pool import OFF_LOOP_REQUESTS, ValidationPool
from kproto.errors import ErrorCode
from kproto.records import Compression, encode_batch

from .test_log_validator import _LAST_OFFSET_DELTA_AT, patched


def test_small_compressed_requests_validate_inline_and_large_ones_on_a_thread() -> None:
    submitted: list[int] = []
    threads = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    class Counting(concurrent.futures.Executor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            submitted.append(len(args[0]))
            return threads.submit(fn, *args)

    pool = ValidationPool(Counting())
    policy = LogPolicy.for_produce(
        TopicConfig.from_properties(
            {
                "cleanup.policy": "delete",
                "max.message.bytes": "1048588",
                "message.timestamp.type": "CreateTime",
                "message.timestamp.before.max.ms": str(2**63 - 1),
                "message.timestamp.after.max.ms": str(2**63 - 1),
            }
        ),
        0,
    )

    def check(records: bytes) -> list[ValidBatch] | ErrorCode:
        try:
            return asyncio.run(pool.validate(records, policy))
        except RecordValidationError as err:
            return err.error_code

    def records(n: int, size: int, codec: Compression) -> bytes:
        value = bytes(size)
        return encode_batch(
            [(b"k", value, (), 1000) for _ in range(n)], compression=codec
        )

    for codec in (Compression.LZ4, Compression.ZSTD, Compression.GZIP):
        small = records(100, 1000, codec)  # ~100 KB of records: inline
        assert len(small) < 64 * 1024
        assert [b.last_offset_delta for b in check(small)] == [99]  # type: ignore[union-attr]
        assert submitted == []
        large = records(1500, 1000, codec)  # ~1.5 MB: past the inline bound
        assert len(large) < 64 * 1024
        assert [b.last_offset_delta for b in check(large)] == [1499]  # type: ignore[union-attr]
        assert submitted == [len(large)]
        # past the topic's bound (one record of at most max.message.bytes):
        # refused, on the thread
        bomb = records(1, 2 << 20, codec)
        assert len(bomb) < 64 * 1024
        assert check(bomb) == ErrorCode.RECORD_LIST_TOO_LARGE
        assert submitted == [len(large), len(bomb)]
        # a corrupt small batch is refused inline as on the thread
        bad = patched(small, _LAST_OFFSET_DELTA_AT, ">i", 5)
        assert check(bad) == ErrorCode.INVALID_RECORD
        assert len(submitted) == 2
        submitted.clear()

    # a client whose batch expanded past the bound goes to the threads directly
    # for its next 100 requests; other clients still validate inline
    def sent(records: bytes, client: str) -> int:
        before = len(submitted)
        asyncio.run(pool.validate(records, policy, client=client))
        return len(submitted) - before

    small = records(100, 1000, Compression.ZSTD)
    large = records(1500, 1000, Compression.ZSTD)
    assert sent(small, "bomber") == 0
    assert sent(large, "bomber") == 1
    assert [sent(small, "bomber") for _ in range(OFF_LOOP_REQUESTS)] == [
        1
    ] * OFF_LOOP_REQUESTS
    assert sent(small, "bomber") == 0  # forgiven
    assert sent(small, "other") == 0
    assert len(pool.off_loop_clients) == 0
    # a second cluster's pool remembers nothing of this one's clients
    assert ValidationPool().off_loop_clients == {}
    threads.shutdown()
