"""The demo's sections, run in order. Produce, ListOffsets and Fetch go through
:class:`kproto.client.Client`, other requests through its connections."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from kproto.client import EARLIEST, LATEST, Client
from kproto.client.protocol import ANY_NODE, check_code
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions, data_type
from kproto.meta import build_entity
from kproto.negotiation import FIRST_API_VERSIONS_VERSION
from kproto.records import Compression, decode_batches
from kproto.serial import decode, encode

from .tables import Printer, cell

TOPICS = ("kproto-demo-orders", "kproto-demo-clicks")
GROUP = "kproto-demo-group"


@attrs.define
class Tour:
    """What the sections share: the printer, the client, what earlier ones found."""

    p: Printer
    client: Client
    brokers: dict[int, tuple[str, int]]
    segments: Path
    coordinator: int = -1
    fetched: dict[tuple[str, int], bytes] = attrs.Factory(dict)

    def ask(self, api_key: ApiKey, node: int = ANY_NODE, **fields: Any) -> Any:
        conn = self.client.connection(node)  # negotiated; fields by name
        return conn.send(conn.build_request(api_key, fields))

    def title(self, api_key: ApiKey, text: str) -> None:
        api = api_key.name.title().replace("_", "")
        version = self.client.connection(ANY_NODE).version_for(api_key)
        self.p.section(f"{api} v{version} {text}")


def name(error_code: int) -> str:
    return ErrorCode(error_code).name


def api_versions_section(t: Tour) -> None:
    conn, rows = t.client.connection(ANY_NODE), []
    assert conn.broker_api_versions is not None
    first, got = FIRST_API_VERSIONS_VERSION, conn.api_versions_version
    handshake = f"v{got}" if got == first else f"v{first} refused, v{got}"
    using = conn.versions.get(ApiKey.API_VERSIONS)
    t.p.section(f"ApiVersions (handshake {handshake} answered; later ones v{using})")
    for key, (lo, hi) in conn.broker_api_versions.items():
        try:
            api, ours = ApiKey(key).name, api_versions(key)
            kp = f"{ours.start}-{ours.stop - 1}"
        except ValueError:
            api, kp = "?", "-"
        v = conn.versions.get(key)
        rows.append((key, api, f"{lo}-{hi}", kp, None if v is None else f"v{v}"))
    t.p.table("key|api|broker|kproto|using", rows)


def metadata_section(t: Tour) -> None:
    topics = [{"name": n} for n in TOPICS]
    md = t.ask(ApiKey.METADATA, topics=topics, allow_auto_topic_creation=True)
    t.p.section("Metadata (auto-creating two topics)")
    t.p.line(f"cluster id: {md.cluster_id}   controller: {md.controller_id}")
    brokers = [(b.node_id, b.host, b.port, b.rack) for b in md.brokers]
    t.p.table("node|host|port|rack", brokers)
    rows = [
        (tp.name, tp.topic_id, p.partition_index, p.leader_id)
        + (p.replica_nodes, p.isr_nodes, name(p.error_code))
        for tp in md.topics
        for p in sorted(tp.partitions, key=lambda x: x.partition_index)
    ]
    t.p.line()
    t.p.table("topic|topic id|partition|leader|replicas|isr|error", rows)


def find_coordinator_section(t: Tour) -> None:
    found = t.ask(ApiKey.FIND_COORDINATOR, key=GROUP, key_type=0)
    coordinators = getattr(found, "coordinators", [found])  # v4+: a list
    t.p.section(f"FindCoordinator (group {GROUP!r})")
    rows = [(c.node_id, c.host, c.port, name(c.error_code)) for c in coordinators]
    t.p.table("node|host|port|error", rows)
    check_code(coordinators[0].error_code, "FindCoordinator")
    t.coordinator = coordinators[0].node_id


def produce_section(t: Tour) -> None:
    t.title(ApiKey.PRODUCE, "(Client.produce, one batch per codec)")
    rows, now = [], int(time.time() * 1000)
    for topic in TOPICS:
        for part in (0, 1):
            for codec in Compression:
                key = f"{topic[-6:]}-{part}-{codec.label}"
                value = '{"n": %d, "codec": "%s"}'
                recs = [
                    (b"%s-%d" % (key.encode(), i), (value % (i, codec.label)).encode())
                    + ([("source", b"kproto-demo"), ("seq", b"%d" % i)], now + i)
                    for i in range(3)
                ]
                out = t.client.produce(topic, recs, partition=part, compression=codec)
                leader = t.client.core.metadata.topics[topic].leaders[part]
                rows.append((topic, part, leader, codec.label, 3, out[0].offset))
    t.p.table("topic|partition|leader|codec|records|base offset", rows)


def list_offsets_section(t: Tour) -> None:
    t.title(ApiKey.LIST_OFFSETS, "(Client.list_offsets: earliest / latest)")
    rows = []
    for topic in TOPICS:
        first = t.client.list_offsets(topic, timestamp=EARLIEST)
        last = t.client.list_offsets(topic, timestamp=LATEST)
        rows += [(topic, p, first[p].offset, last[p].offset) for p in sorted(last)]
    t.p.table("topic|partition|earliest|latest", rows)


def fetch_section(t: Tour) -> None:
    t.title(ApiKey.FETCH, "(Client.fetch, pages of 600 bytes; kproto.records)")
    summary, rows = [], []
    for topic in TOPICS:
        for part in sorted(t.client.core.metadata.topics[topic].leaders):
            pages: list[bytes] = []
            offset = hw = 0
            while not pages or offset < hw:
                page = t.client.fetch(topic, part, offset, max_bytes=600)
                pages.append(page.raw)
                offset, hw = page.next_offset, page.high_watermark
            raw = t.fetched[(topic, part)] = b"".join(pages)
            batches = list(decode_batches(raw))
            count = sum(len(b.records) for b in batches)
            summary.append((topic, part, hw, len(batches), count, len(raw), len(pages)))
            for b in batches:
                for r in dict.fromkeys([b.records[0], b.records[-1]]):
                    headers = [f"{k}={cell(v)}" for k, v in r.headers]
                    row = (topic, part, r.offset, r.timestamp, r.key, r.value)
                    rows.append(row + (headers, b.compression.label))
    t.p.table("topic|partition|high watermark|batches|records|bytes|fetches", summary)
    t.p.line("\nfirst and last record of each batch:")
    t.p.table("topic|partition|offset|timestamp (ms)|key|value|headers|codec", rows)


def _embedded(type_name: str, version: int, **fields: Any) -> bytes:
    """Consumer-protocol bytes in JoinGroup/SyncGroup: int16 version, the struct."""
    entity: Any = build_entity(data_type(type_name, version), fields)
    return struct.pack(">h", version) + encode(entity)


def group_section(t: Tour) -> None:
    conn, steps = t.client.connection(t.coordinator), []
    t.p.section(f"Consumer group {GROUP!r} (coordinator: node {t.coordinator})")

    def step(api_key: ApiKey, **fields: Any) -> Any:
        response = t.ask(api_key, t.coordinator, group_id=GROUP, **fields)
        version, error = conn.version_for(api_key), name(response.error_code)
        steps.append((api_key.name, version, error))
        return response

    subscription = _embedded("ConsumerProtocolSubscription", 1, topics=list(TOPICS))
    protocols = [{"name": "range", "metadata": subscription}]
    join_fields: dict[str, Any] = dict(protocol_type="consumer", protocols=protocols)
    join_fields.update(session_timeout_ms=10_000, rebalance_timeout_ms=10_000)
    join = step(ApiKey.JOIN_GROUP, member_id="", **join_fields)
    if join.error_code == ErrorCode.MEMBER_ID_REQUIRED:  # KIP-394: again with the id
        join = step(ApiKey.JOIN_GROUP, member_id=join.member_id, **join_fields)
    check_code(join.error_code, "JoinGroup")
    me, is_leader = join.member_id, join.leader == join.member_id
    member = dict(generation_id=join.generation_id, member_id=me)
    assigned = [{"topic": n, "partitions": [0, 1, 2, 3]} for n in TOPICS]
    blob = _embedded("ConsumerProtocolAssignment", 1, assigned_partitions=assigned)
    plan = [{"member_id": m.member_id, "assignment": blob} for m in join.members]
    sync_fields: dict[str, Any] = {"assignments": plan if is_leader else []}
    if conn.version_for(ApiKey.SYNC_GROUP) >= 5:
        sync_fields.update(protocol_type="consumer", protocol_name=join.protocol_name)
    sync = step(ApiKey.SYNC_GROUP, **member, **sync_fields)
    check_code(sync.error_code, "SyncGroup")
    step(ApiKey.HEARTBEAT, **member)
    if conn.version_for(ApiKey.LEAVE_GROUP) >= 3:
        step(ApiKey.LEAVE_GROUP, members=[{"member_id": me}])
    else:
        step(ApiKey.LEAVE_GROUP, member_id=me)
    t.p.table("step|version|error|member id", (s + (me,) for s in steps))
    leader = "us" if is_leader else join.leader
    t.p.line(
        f"\ngeneration {join.generation_id}, leader {leader}, {len(join.members)} member(s)"
    )
    if sync.assignment:
        (version,) = struct.unpack_from(">h", sync.assignment)
        cls = data_type("ConsumerProtocolAssignment", version)
        got: Any = decode(cls, sync.assignment[2:])
        rows = [(a.topic, a.partitions) for a in got.assigned_partitions]
        t.p.table("assigned topic|partitions", rows)


def segments_section(t: Tour) -> None:
    # Kafka's layout: <topic>-<partition>/<first base offset, 20 digits>.log
    written = []
    for (topic, partition), raw in sorted(t.fetched.items()):
        if raw:
            folder = t.segments / f"{topic}-{partition}"
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{next(iter(decode_batches(raw))).base_offset:020d}.log"
            path.write_bytes(raw)
            written.append(path)
    t.p.section("Segments")
    t.p.table("file|bytes", ((str(f), f.stat().st_size) for f in written))


SECTIONS: list[Callable[[Tour], None]] = [api_versions_section, metadata_section]
SECTIONS += [find_coordinator_section, produce_section, list_offsets_section]
SECTIONS += [fetch_section, group_section, segments_section]
