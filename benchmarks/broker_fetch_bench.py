"""CPU per Fetch inside the broker: the handler and the response encoding, no sockets.

``python -m benchmarks.broker_fetch_bench [--partitions 4,100] [--fetches N]``: an
in-process :class:`kproto.broker.Cluster` holds a topic of P partitions, each with 20
batches of 10 records of 100 bytes; a sessionless Fetch v16 (max_wait_ms 0) of every
partition is handed to the node's dispatcher and its response encoded
(:func:`kproto.framing.encode_response_parts`), N times, timed with
:func:`time.process_time`. Two cases: "data" (from the last batch of each partition:
one batch each) and "empty" (at the high watermark: what a long poll re-checks on
every append). Medians of 3 interleaved rounds, in microseconds per Fetch. Not a
test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from typing import Any

from kproto.broker import Cluster
from kproto.framing import encode_response_parts
from kproto.index import ApiKey, request_type
from kproto.meta import build_entity
from kproto.records import encode_batch
from kproto.schema.request_header.v2 import RequestHeader

VERSION = 16
BATCHES = 20
RECORDS = 10


def _request(topic_id: Any, partitions: int, offset: int) -> Any:
    return build_entity(
        request_type(ApiKey.FETCH, VERSION),
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 50 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition": p,
                            "fetch_offset": offset,
                            "partition_max_bytes": 1 << 20,
                        }
                        for p in range(partitions)
                    ],
                }
            ],
        },
        drop_absent=True,
    )


async def _measure(partitions: int, fetches: int, rounds: int) -> dict[str, float]:
    async with Cluster() as cluster:
        cluster.create_topic("bench", partitions)
        batch = encode_batch([(None, b"x" * 100)] * RECORDS)
        for p in range(partitions):
            plog = cluster.state.logs[("bench", p)]
            for _ in range(BATCHES):
                await plog.append(batch)
        dispatcher = cluster.servers[0].dispatcher
        handler = dispatcher.handler_for(ApiKey.FETCH, VERSION)
        assert handler is not None
        topic_id = cluster.state.topics["bench"].topic_id
        header = RequestHeader(
            request_api_key=ApiKey.FETCH,
            request_api_version=VERSION,
            correlation_id=1,
            client_id="bench",
        )
        cases = {
            "data": _request(topic_id, partitions, (BATCHES - 1) * RECORDS),
            "empty": _request(topic_id, partitions, BATCHES * RECORDS),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for request in cases.values():  # warm up
            for _ in range(20):
                encode_response_parts(
                    header,
                    await dispatcher.handle(handler, header, request, "127.0.0.1"),
                )
        for _ in range(rounds):
            for name, request in cases.items():
                start = time.process_time()
                for _ in range(fetches):
                    encode_response_parts(
                        header,
                        await dispatcher.handle(handler, header, request, "127.0.0.1"),
                    )
                times[name].append((time.process_time() - start) / fetches * 1e6)
        return {name: statistics.median(t) for name, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--partitions", default="4,100")
    parser.add_argument("--fetches", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(
        f"Fetch v{VERSION}, sessionless, handler + response encoding; CPU us per "
        f"Fetch, medians of {args.rounds} rounds"
    )
    print(f"{'partitions':>10}{'data':>10}{'empty':>10}")
    for partitions in (int(p) for p in args.partitions.split(",")):
        fetches = max(args.fetches * 4 // partitions, 20)
        m = asyncio.run(_measure(partitions, fetches, args.rounds))
        print(f"{partitions:>10}{m['data']:>10.1f}{m['empty']:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
