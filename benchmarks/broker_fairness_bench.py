"""A well-behaved client pair beside hostile clients, against ``kproto broker``.

``make bench-broker-fairness`` (``python -m benchmarks.broker_fairness_bench
[--messages N] [--only ATTACK ...] [-- broker flags]``): the good pair is
:mod:`benchmarks.broker_bench`'s confluent-kafka Producer (N messages of 100
bytes, linger.ms 5, lz4, 4 partitions) then Consumer (from offset 0). It runs once
alone, then once beside each attack of issue 17, each against a fresh ``kproto
broker`` subprocess on 127.0.0.1 whose peak RSS is sampled with psutil. Each attack
runs in its own process (at nice 10: on one machine it would otherwise take the
good pair's CPU, not the broker's) from one second before the pair starts until it
is done
(at most ``--attack-s`` seconds, and a bounded count of connections and frames):

* ``metadata-flood``: 50 connections sending Metadata (all topics) back to back;
  ``flood+quota`` the same against a broker with a default client quota
  (``--quota request_percentage=25``; the ratio is still to the quiet run
  without quota);
* ``zstd-bomb``: a 32 KB zstd batch expanding to 1 GiB of zeros, produced again
  and again;
* ``million-empty``: a batch of 1,000,000 empty records (zstd, so within
  ``max.message.bytes``), produced again and again;
* ``idle``: 1,000 connections that send nothing;
* ``size-claims``: connections whose first 4 bytes claim a 2 GB frame;
* ``slowloris``: 200 connections sending a request one byte every 100 ms;
* ``malformed``: 10,000 frames of random bytes;
* ``mutated``: 20,000 real request frames (ApiVersions, Metadata, Produce) with
  random bytes changed;
* ``create-topics``: CreateTopics requests of 10,000 one-partition topics each
  (Kafka's per-request cap), one after the other, at most 4 (issue 27).

Prints per attack the good pair's time and its throughput as a ratio of a quiet
run made just before it (goal >= 0.8x), what the attack achieved, and the broker's peak RSS (goal <=
150 MiB). Not a test: nothing is asserted; on a shared machine expect noise.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import resource
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.broker_bench import PARTITIONS, PeakRss, consume, produce

_HEADER = struct.Struct(">qiibIhiqqqhii")
#: The default client quota of the ``flood+quota`` run.
FLOOD_QUOTA = "request_percentage=25"


# ------------------------------------------------------------------ frames


def _request(request: Any, correlation_id: int = 1) -> bytes:
    from kproto.framing import encode_request

    return encode_request(request, correlation_id=correlation_id, client_id="attacker")


def metadata_frame() -> bytes:
    from kproto.schema.metadata.v12 import MetadataRequest

    return _request(MetadataRequest(topics=None, allow_auto_topic_creation=False))


def api_versions_frame() -> bytes:
    from kproto.schema.api_versions.v3 import ApiVersionsRequest

    return _request(
        ApiVersionsRequest(client_software_name="x", client_software_version="1")
    )


def raw_batch(records: bytes, count: int, codec: int = 0) -> bytes:
    """A magic 2 batch around an encoded (and compressed) records region."""
    import crc32c

    now = int(time.time() * 1000)
    head = _HEADER.pack(
        0, 49 + len(records), -1, 2, 0, codec, count - 1, now, now, -1, -1, -1, count
    )
    body = head[21:] + records
    return head[:17] + struct.pack(">I", crc32c.crc32c(body)) + body


def produce_frame(topic: str, records: bytes) -> bytes:
    from kproto.meta import build_entity
    from kproto.schema.produce.v9 import ProduceRequest

    request = build_entity(
        ProduceRequest,
        {
            "acks": 1,
            "timeout_ms": 30_000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": 0, "records": records}]}
            ],
        },
    )
    return _request(request)


def zstd_bomb() -> bytes:
    """A batch of one record whose zstd body expands to 1 GiB of zeros."""
    import cramjam

    compressor = cramjam.zstd.Compressor(level=1)
    chunk = bytes(1 << 20)
    for _ in range(1024):
        compressor.compress(chunk)
    return raw_batch(bytes(compressor.finish()), 1, codec=4)


def empty_records(count: int) -> bytes:
    """``count`` records without key, value or headers."""
    out = bytearray()
    for i in range(count):
        delta = bytearray()
        v = i << 1
        while v >= 0x80:
            delta.append(v & 0x7F | 0x80)
            v >>= 7
        delta.append(v)
        body = b"\x00\x00" + delta + b"\x01\x01\x00"
        out += bytes([len(body) << 1]) + body
    return bytes(out)


# ----------------------------------------------------------------- attacks


async def _open(host: str, port: int) -> tuple[asyncio.StreamReader, Any]:
    return await asyncio.open_connection(host, port)


async def _exchange(reader: asyncio.StreamReader, writer: Any, frame: bytes) -> None:
    writer.write(frame)
    await writer.drain()
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    await reader.readexactly(size)


async def _repeat(host: str, port: int, frame: bytes, until: float) -> int:
    """Send ``frame`` and read its response again and again; return the count."""
    reader, writer = await _open(host, port)
    done = 0
    try:
        while time.monotonic() < until:
            await _exchange(reader, writer, frame)
            done += 1
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()
    return done


async def metadata_flood(host: str, port: int, until: float) -> str:
    frame = metadata_frame()
    counts = await asyncio.gather(
        *(_repeat(host, port, frame, until) for _ in range(50))
    )
    return f"{sum(counts)} Metadata requests"


async def bomb(host: str, port: int, until: float) -> str:
    frame = produce_frame("attack", zstd_bomb())
    return f"{await _repeat(host, port, frame, until)} bombs of {len(frame)} bytes"


async def million_empty(host: str, port: int, until: float) -> str:
    import cramjam

    records = bytes(cramjam.zstd.compress(empty_records(1_000_000), level=3))
    frame = produce_frame("attack", raw_batch(records, 1_000_000, codec=4))
    return f"{await _repeat(host, port, frame, until)} batches of {len(frame)} bytes"


async def idle(host: str, port: int, until: float) -> str:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    conns = []
    for _ in range(1000):
        try:
            conns.append(await _open(host, port))
        except OSError:
            break
    await asyncio.sleep(max(until - time.monotonic(), 0))
    for _, writer in conns:
        writer.close()
    return f"{len(conns)} idle connections"


async def _closed_after(host: str, port: int, data: bytes) -> bool:
    reader, writer = await _open(host, port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(1), 5) == b""
    except (ConnectionError, TimeoutError):
        return True
    finally:
        writer.close()


async def size_claims(host: str, port: int, until: float) -> str:
    done = 0
    while time.monotonic() < until and done < 20_000:
        await _closed_after(host, port, struct.pack(">i", 2_000_000_000) + b"\0" * 10)
        done += 1
    return f"{done} connections claiming 2 GB"


async def slowloris(host: str, port: int, until: float) -> str:
    frame = metadata_frame()

    async def one() -> int:
        reader, writer = await _open(host, port)
        sent = 0
        try:
            while time.monotonic() < until:
                writer.write(frame[sent % len(frame) : sent % len(frame) + 1])
                await writer.drain()
                sent += 1
                await asyncio.sleep(0.1)
        except ConnectionError:
            pass
        finally:
            writer.close()
        return sent

    sent = await asyncio.gather(*(one() for _ in range(200)))
    return f"200 connections, {sum(sent)} bytes"


async def _garbage(
    host: str, port: int, until: float, frames: int, make: Callable[[], bytes]
) -> int:
    done = 0
    reader, writer = await _open(host, port)
    while time.monotonic() < until and done < frames:
        try:
            writer.write(make())
            await writer.drain()
            # the broker answers or closes; a reply or EOF within 50 ms moves on
            try:
                got = await asyncio.wait_for(reader.read(65536), 0.05)
            except TimeoutError:
                got = b"-"
            if not got:
                raise ConnectionError
        except ConnectionError:
            writer.close()
            reader, writer = await _open(host, port)
        done += 1
    writer.close()
    return done


async def malformed(host: str, port: int, until: float) -> str:
    rnd = random.Random(17)

    def make() -> bytes:
        body = rnd.randbytes(rnd.randrange(0, 200))
        return struct.pack(">i", len(body)) + body

    counts = await asyncio.gather(
        *(_garbage(host, port, until, 1000, make) for _ in range(10))
    )
    return f"{sum(counts)} malformed frames"


async def mutated(host: str, port: int, until: float) -> str:
    rnd = random.Random(17)
    real = [
        api_versions_frame(),
        metadata_frame(),
        produce_frame("attack", raw_batch(empty_records(10), 10)),
    ]

    def make() -> bytes:
        frame = bytearray(rnd.choice(real))
        for _ in range(rnd.randrange(1, 4)):
            frame[rnd.randrange(4, len(frame))] = rnd.randrange(256)
        return bytes(frame)

    counts = await asyncio.gather(
        *(_garbage(host, port, until, 2000, make) for _ in range(10))
    )
    return f"{sum(counts)} mutated frames"


def create_topics_frame(prefix: str, count: int) -> bytes:
    """CreateTopics v7 of ``count`` topics of one partition each."""
    from kproto.meta import build_entity
    from kproto.schema.create_topics.v7 import CreateTopicsRequest

    request = build_entity(
        CreateTopicsRequest,
        {
            "timeout_ms": 60_000,
            "topics": [
                {"name": f"{prefix}-{i}", "num_partitions": 1, "replication_factor": 1}
                for i in range(count)
            ],
        },
    )
    return _request(request)


async def create_topics_flood(host: str, port: int, until: float) -> str:
    reader, writer = await _open(host, port)
    done = 0
    try:
        while time.monotonic() < until and done < 4:
            await _exchange(reader, writer, create_topics_frame(f"flood{done}", 10_000))
            done += 1
    finally:
        writer.close()
    return f"{done} CreateTopics of 10,000 topics"


ATTACKS: dict[str, Callable[[str, int, float], Any]] = {
    "metadata-flood": metadata_flood,
    "flood+quota": metadata_flood,
    "zstd-bomb": bomb,
    "million-empty": million_empty,
    "idle": idle,
    "size-claims": size_claims,
    "slowloris": slowloris,
    "malformed": malformed,
    "mutated": mutated,
    "create-topics": create_topics_flood,
}


def _attack(name: str, bootstrap: str, seconds: float, ready: Any, out: Any) -> None:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    # a real attacker runs on its own machine: here it yields the CPU to the
    # broker and the good pair, so what is measured is the broker's fairness
    os.nice(10)

    async def main() -> str:
        from kproto.meta import build_entity
        from kproto.schema.metadata.v12 import MetadataRequest

        create = build_entity(
            MetadataRequest,
            {"topics": [{"name": "attack"}], "allow_auto_topic_creation": True},
        )
        reader, writer = await _open(host, int(port))
        await _exchange(reader, writer, _request(create))
        writer.close()
        until = time.monotonic() + seconds
        ready.set()
        return str(await ATTACKS[name](host, int(port), until))

    try:
        out.put(asyncio.run(main()))
    except Exception as err:  # reported, not raised: the pair's figures stand
        out.put(f"attack failed: {err!r}")


# ------------------------------------------------------------------- runs


def run(
    n: int,
    attack: str | None,
    attack_s: float,
    broker_args: list[str],
    warmup_s: float = 1.0,
) -> dict[str, Any]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kproto", "broker", "--partitions", str(PARTITIONS)]
        + broker_args,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    worker = None
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip()
        rss = PeakRss(proc.pid)
        ctx = multiprocessing.get_context("spawn")
        ready, out = ctx.Event(), ctx.Queue()
        if attack is not None:
            worker = ctx.Process(
                target=_attack, args=(attack, bootstrap, attack_s, ready, out)
            )
            worker.start()
            ready.wait(60)
            time.sleep(warmup_s)
        start = time.perf_counter()
        deadline = time.monotonic() + 120  # each half bounded
        p = produce(bootstrap, n, deadline)
        c = consume(bootstrap, n, time.monotonic() + 120)
        elapsed = time.perf_counter() - start
        result = "-"
        if worker is not None:
            worker.join(attack_s + 60)
            result = out.get(timeout=5) if not out.empty() else "no report"
        rss.stop()
        return {
            "produce_s": p,
            "consume_s": c,
            "elapsed": elapsed,
            "rss_peak": rss.peak,
            "attack": result,
        }
    finally:
        if worker is not None and worker.is_alive():
            worker.terminate()
            worker.join(10)
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:  # still busy (thousands of topics)
            proc.kill()
            proc.wait(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument(
        "--attack-s",
        type=float,
        default=0.0,
        help="how long each attack runs (default: 1.5x the quiet run, at least 5 s)",
    )
    parser.add_argument(
        "--warmup-s",
        type=float,
        default=1.0,
        help="how long each attack runs before the pair starts (default 1 s)",
    )
    parser.add_argument("--only", nargs="*", choices=list(ATTACKS), default=None)
    parser.add_argument("broker_args", nargs="*", help="extra `kproto broker` flags")
    args = parser.parse_args(argv)
    n = args.messages
    quiet = run(n, None, 0, args.broker_args)
    attack_s = args.attack_s or args.warmup_s + max(5.0, 1.5 * quiet["elapsed"])
    print(
        f"good pair: {n} messages of 100 bytes produced then consumed "
        f"(confluent-kafka, linger.ms 5, lz4, {PARTITIONS} partitions); "
        f"attacks run up to {attack_s:.0f} s"
    )
    print(
        f"{'attack':<16}{'pair s':>8}{'ratio':>8}{'produce':>9}{'consume':>9}"
        f"{'peak RSS':>10}  attack did"
    )

    def line(name: str, r: dict[str, Any], quiet: dict[str, Any]) -> None:
        print(
            f"{name:<16}{r['elapsed']:>8.2f}{quiet['elapsed'] / r['elapsed']:>7.2f}x"
            f"{quiet['produce_s'] / r['produce_s']:>8.2f}x"
            f"{quiet['consume_s'] / r['consume_s']:>8.2f}x"
            f"{r['rss_peak'] / 2**20:>7.0f} MiB  {r['attack']}",
            flush=True,
        )

    line("(quiet)", quiet, quiet)
    for name in args.only or list(ATTACKS):
        extra = ["--quota", FLOOD_QUOTA] if name == "flood+quota" else []
        # a quiet run just before each attack: the machine's load drifts
        quiet = run(n, None, 0, args.broker_args)
        result = run(n, name, attack_s, args.broker_args + extra, args.warmup_s)
        line(name, result, quiet)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
