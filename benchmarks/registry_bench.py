"""kproto's schema registry: requests/s on loopback, and the rebuild from ``_schemas``.

``python -m benchmarks.registry_bench [--requests N] [--subjects S] [--versions V]``:

1. Requests: a ``python -m kproto broker --schema-registry`` subprocess; this process
   sends, one at a time over one keep-alive ``requests`` session, N registrations
   (``POST /subjects/{s}/versions``: N distinct Avro records in N subjects, each
   parsed and stored in ``_schemas`` before the answer), N evolutions (a second
   version of each, checked BACKWARD against the first), then N lookups
   (``POST /subjects/{s}``), then N ``GET /schemas/ids/{id}``; requests/s of each.
2. Rebuild: a ``_schemas`` topic of S subjects x V versions (each version adds a
   field with a default, so ids run 1..S*V), written by a confluent-kafka producer
   in Confluent's record shapes; then a fresh process starts
   ``Cluster(data_dir, schema_registry=True)`` on it, and reports the time of
   ``start()`` and its peak RSS (``ru_maxrss``), beside the same process starting
   the cluster without the registry (the registry's share is the difference).
   The goal for 10,000 x 5: under 5 s and 100 MiB.

Every phase is bounded in time. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TIMEOUT_S = 120.0

REBUILD = """
import json, resource, sys, time
from kproto.broker import Cluster
registry = sys.argv[2] == "1"
began = time.perf_counter()
cluster = Cluster(data_dir=sys.argv[1], schema_registry=registry)
cluster.__enter__()
elapsed = time.perf_counter() - began
state = cluster.schema_registry.registry.state if registry else None
print(json.dumps({
    "start_s": elapsed,
    "subjects": len(state.subjects) if state else 0,
    "schemas": len(state.schemas) if state else 0,
    "max_id": state.max_id if state else 0,
    "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "rss_mib": int(open("/proc/self/statm").read().split()[1])
    * resource.getpagesize() / 2**20,
}))
cluster.close()
"""


def _env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    return {**os.environ, "PYTHONPATH": src}


def avro(subject: int, version: int) -> str:
    """Subject ``subject``'s schema of ``version`` (1-based): a record with
    ``version`` fields, each after the first with a default."""
    fields: list[dict[str, Any]] = [{"name": "id", "type": "long"}]
    for i in range(1, version):
        fields.append({"name": f"f{i}", "type": "string", "default": ""})
    return json.dumps(
        {
            "type": "record",
            "name": f"R{subject}",
            "namespace": "bench",
            "fields": fields,
        }
    )


def bench_requests(count: int) -> None:
    import requests

    with tempfile.TemporaryDirectory(prefix="kproto-registry-bench-") as data_dir:
        broker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kproto",
                "broker",
                "--schema-registry",
                "--data-dir",
                data_dir,
            ],
            env=_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert broker.stdout is not None
            broker.stdout.readline()
            url = broker.stdout.readline().strip()
            session = requests.Session()
            headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
            bodies = [json.dumps({"schema": avro(i, 2)}) for i in range(count)]
            deadline = time.monotonic() + TIMEOUT_S

            def run(what: str, call: Any) -> None:
                began = time.perf_counter()
                for i in range(count):
                    response = call(i)
                    if response.status_code != 200:
                        raise RuntimeError(f"{what} {i}: {response.text}")
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{what}: over {TIMEOUT_S} s")
                elapsed = time.perf_counter() - began
                print(
                    f"  {what:<10} {count / elapsed:8.0f} requests/s ({count} in {elapsed:.2f} s)"
                )

            run(
                "register",
                lambda i: session.post(
                    f"{url}/subjects/s{i}-value/versions",
                    data=bodies[i],
                    headers=headers,
                ),
            )
            evolved = [json.dumps({"schema": avro(i, 3)}) for i in range(count)]
            run(
                "evolve",
                lambda i: session.post(
                    f"{url}/subjects/s{i}-value/versions",
                    data=evolved[i],
                    headers=headers,
                ),
            )
            run(
                "lookup",
                lambda i: session.post(
                    f"{url}/subjects/s{i}-value", data=bodies[i], headers=headers
                ),
            )
            run("get by id", lambda i: session.get(f"{url}/schemas/ids/{i + 1}"))
        finally:
            broker.send_signal(signal.SIGINT)
            broker.wait(timeout=60)


def write_schemas_topic(data_dir: str, subjects: int, versions: int) -> float:
    """Write ``subjects`` x ``versions`` SCHEMA records; return the seconds taken."""
    from confluent_kafka import Producer

    from kproto.broker import Cluster
    from kproto.registry.records import SchemaKey, SchemaValue, encode_key, encode_value

    began = time.perf_counter()
    with Cluster(data_dir=data_dir) as cluster:
        cluster.create_topic("_schemas", 1, configs={"cleanup.policy": "compact"})
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "linger.ms": 20,
                "compression.type": "none",
                "queue.buffering.max.messages": 1_000_000,
                "log_level": 3,
            }
        )
        schema_id = 0
        for s in range(subjects):
            subject = f"subject-{s}-value"
            for v in range(1, versions + 1):
                schema_id += 1
                value = SchemaValue(subject, v, schema_id, avro(s, v))
                producer.produce(
                    "_schemas",
                    key=encode_key(SchemaKey(subject, v)),
                    value=encode_value(value),
                )
            producer.poll(0)
        left = producer.flush(TIMEOUT_S)
        del producer  # before the cluster stops: no reconnection attempts
        if left != 0:
            raise RuntimeError("the _schemas records were not all written")
    return time.perf_counter() - began


def bench_rebuild(subjects: int, versions: int) -> None:
    with tempfile.TemporaryDirectory(prefix="kproto-registry-rebuild-") as data_dir:
        took = write_schemas_topic(data_dir, subjects, versions)
        size = sum(f.stat().st_size for f in Path(data_dir, "_schemas-0").glob("*.log"))
        print(
            f"  _schemas: {subjects} subjects x {versions} versions, "
            f"{size / 2**20:.1f} MiB of segments (written in {took:.1f} s)"
        )
        results = {}
        for registry in ("0", "1"):
            out = subprocess.run(
                [sys.executable, "-c", REBUILD, data_dir, registry],
                env=_env(),
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=True,
            ).stdout
            results[registry] = json.loads(out.strip().splitlines()[-1])
        plain, full = results["0"], results["1"]
        print(
            f"  restart with the registry: {full['start_s']:.2f} s, peak RSS "
            f"{full['peak_rss_mib']:.0f} MiB, {full['rss_mib']:.0f} MiB after "
            f"({full['subjects']} subjects, "
            f"{full['schemas']} schemas, max id {full['max_id']})"
        )
        print(
            f"  restart without:           {plain['start_s']:.2f} s, peak RSS "
            f"{plain['peak_rss_mib']:.0f} MiB, {plain['rss_mib']:.0f} MiB after"
        )
        print(
            f"  the registry's share:      {full['start_s'] - plain['start_s']:.2f} s, "
            f"{full['peak_rss_mib'] - plain['peak_rss_mib']:.0f} MiB peak, "
            f"{full['rss_mib'] - plain['rss_mib']:.0f} MiB held "
            "(goal: under 5 s and 100 MiB)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--subjects", type=int, default=10_000)
    parser.add_argument("--versions", type=int, default=5)
    args = parser.parse_args()
    print("registry requests on loopback (one client, keep-alive, sequential):")
    bench_requests(args.requests)
    print("registry rebuild from _schemas at restart:")
    bench_rebuild(args.subjects, args.versions)


if __name__ == "__main__":
    main()
