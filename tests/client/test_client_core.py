"""The client's sans-IO operations, driven with made-up responses (no broker):
request shapes per version, leader routing, the one metadata refresh, error mapping."""

from __future__ import annotations

import ast
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kproto.client import (
    BrokerError,
    ClientError,
    TopicPartition,
    admin,
    partition_for_key,
)
from kproto.client.core import ClientCore
from kproto.client.metadata import parse_bootstrap
from kproto.client.protocol import ANY_NODE, Op, Pager, WaitingOp, fit
from kproto.client.results import ProducedRecord
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type, response_type
from kproto.meta import build_entity
from kproto.records import Compression, RecordInput, encode_batch
from tests.fresh_interpreter import run_python

TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def metadata(
    leaders: dict[int, int], *, controller: int = 1, error: int = 0
) -> dict[str, Any]:
    return {
        "brokers": [
            {"node_id": n, "host": f"b{n}", "port": 9000 + n} for n in (1, 2, 3)
        ],
        "controller_id": controller,
        "cluster_id": "c",
        "topics": [
            {
                "name": "orders",
                "topic_id": TOPIC_ID,
                "error_code": error,
                "partitions": [
                    {
                        "partition_index": p,
                        "leader_id": n,
                        "replica_nodes": [n],
                        "isr_nodes": [n],
                    }
                    for p, n in leaders.items()
                ],
            }
        ],
    }


class Script:
    """Answers each call with the next scripted response (fields dicts), built at the
    version given per api_key; records (node, request entity) of every call."""

    def __init__(self, versions: dict[int, int], *answers: tuple[int, Any]) -> None:
        self.versions = versions
        self.answers = list(answers)
        self.sent: list[tuple[int, Any]] = []

    def run(self, op: Op[Any], *, last: bool = True) -> Any:
        try:
            call = next(op)
            while True:
                v = self.versions.get(call.api_key, 0)
                cls = request_type(call.api_key, v)
                request = build_entity(cls, fit(cls, call.build(v)))
                self.sent.append((call.node, request))
                api_key, answer = self.answers.pop(0)
                assert api_key == call.api_key, (ApiKey(api_key), ApiKey(call.api_key))
                response = (
                    None
                    if answer is None
                    else build_entity(
                        response_type(api_key, v),
                        fit(response_type(api_key, v), answer),
                    )
                )
                call = op.send(response)
        except StopIteration as stop:
            assert not (last and self.answers), f"unused answers {self.answers}"
            return stop.value

    def requests(self, api_key: int) -> list[tuple[int, Any]]:
        return [(n, r) for n, r in self.sent if r.__api_key__ == api_key]


def produce_answer(parts: dict[int, tuple[int, int]]) -> dict[str, Any]:
    """{partition: (error_code, base_offset)}"""
    return {
        "responses": [
            {
                "name": "orders",
                "topic_id": TOPIC_ID,
                "partition_responses": [
                    {"index": p, "error_code": e, "base_offset": o}
                    for p, (e, o) in parts.items()
                ],
            }
        ]
    }


def produce_op(
    core: ClientCore,
    topic: str,
    records: Sequence[RecordInput],
    *,
    partition: int | None = 0,
    acks: int = -1,
    timeout_ms: int = 100,
) -> WaitingOp[list[ProducedRecord]]:
    """``core``'s produce of ``records`` to ``topic``, uncompressed."""
    return core.produce(
        topic,
        records,
        partition=partition,
        acks=acks,
        compression=Compression.NONE,
        timeout_ms=timeout_ms,
    )


MD = ApiKey.METADATA
PRODUCE = ApiKey.PRODUCE
FETCH = ApiKey.FETCH


def test_fit_keeps_only_the_fields_of_the_version() -> None:
    fields = {
        "acks": 1,
        "timeout_ms": 5,
        "bogus": 1,
        "topic_data": [{"name": "t", "topic_id": TOPIC_ID, "partition_data": []}],
    }
    assert fit(request_type(PRODUCE, 3), fields)["topic_data"] == [
        {"name": "t", "partition_data": []}
    ]
    assert fit(request_type(PRODUCE, 13), fields)["topic_data"] == [
        {"topic_id": TOPIC_ID, "partition_data": []}
    ]
    assert "bogus" not in fit(request_type(PRODUCE, 13), fields)


@pytest.mark.parametrize("version", [3, 9, 13])
def test_produce_routes_keyed_records_to_murmur2_partition_leaders(
    version: int,
) -> None:
    core = ClientCore("b1:9001")
    records = [(b"d", b"1"), (b"f", b"2"), (b"d", b"3")]
    # murmur2 % 4 (as kafka-python computes it): b"d" -> 1, b"f" -> 3
    pa, pb = partition_for_key(b"d", 4), partition_for_key(b"f", 4)
    assert (pa, pb) == (1, 3)
    leaders = {0: 1, 1: 2, 2: 3, 3: 1}
    script = Script(  # requests go out by leader node id: node 1 (p3), node 2 (p1)
        {MD: 12, PRODUCE: version},
        (MD, metadata(leaders)),
        (PRODUCE, produce_answer({pb: (0, 20)})),
        (PRODUCE, produce_answer({pa: (0, 10)})),
    )
    out = script.run(produce_op(core, "orders", records, partition=None))
    assert [(r.partition, r.offset) for r in out] == [(pa, 10), (pb, 20), (pa, 11)]
    sent = script.requests(PRODUCE)
    assert sorted(n for n, _ in sent) == sorted([leaders[pa], leaders[pb]])
    for node, request in sent:
        (topic,) = request.topic_data
        assert (topic.topic_id if version >= 13 else topic.name) == (
            TOPIC_ID if version >= 13 else "orders"
        )
        (part,) = topic.partition_data
        assert leaders[part.index] == node
    assert script.sent[0][1].allow_auto_topic_creation is True


def test_produce_refreshes_metadata_once_on_not_leader() -> None:
    core = ClientCore("b1:9001")
    script = Script(
        {MD: 12, PRODUCE: 9},
        (MD, metadata({0: 1})),
        (PRODUCE, produce_answer({0: (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)})),
        (MD, metadata({0: 3})),
        (PRODUCE, produce_answer({0: (0, 7)})),
    )
    out = script.run(produce_op(core, "orders", [(None, b"v")], acks=1))
    assert [(r.partition, r.offset) for r in out] == [(0, 7)]
    assert [n for n, _ in script.requests(PRODUCE)] == [1, 3]


def test_produce_raises_typed_error_the_second_time() -> None:
    core = ClientCore("b1:9001")
    not_leader = produce_answer({0: (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)})
    script = Script(
        {MD: 12, PRODUCE: 9},
        (MD, metadata({0: 1})),
        (PRODUCE, not_leader),
        (MD, metadata({0: 2})),
        (PRODUCE, not_leader),
    )
    with pytest.raises(BrokerError) as info:
        script.run(produce_op(core, "orders", [(b"k", b"v")]))
    err = info.value
    assert err.error_code is ErrorCode.NOT_LEADER_OR_FOLLOWER and err.retriable
    assert (err.topic, err.partition) == ("orders", 0)
    assert "Produce orders-0" in str(err)


def test_produce_error_that_is_not_stale_metadata_is_raised_at_once() -> None:
    core = ClientCore("b1:9001")
    script = Script(
        {MD: 12, PRODUCE: 9},
        (MD, metadata({0: 1})),
        (PRODUCE, produce_answer({0: (ErrorCode.MESSAGE_TOO_LARGE, -1)})),
    )
    with pytest.raises(BrokerError) as info:
        script.run(produce_op(core, "orders", [(b"k", b"v")]))
    assert info.value.error_code is ErrorCode.MESSAGE_TOO_LARGE
    assert not info.value.retriable


def test_produce_acks_zero_and_unknown_topic() -> None:
    core = ClientCore("b1:9001")
    script = Script({MD: 12, PRODUCE: 9}, (MD, metadata({0: 1})), (PRODUCE, None))
    out = script.run(produce_op(core, "orders", [(b"k", b"v")], acks=0, timeout_ms=1))
    assert [r.offset for r in out] == [-1]
    core = ClientCore("b1:9001")
    script = Script(
        {MD: 12}, (MD, metadata({}, error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    )
    with pytest.raises(
        BrokerError, match="UNKNOWN_TOPIC_OR_PARTITION at Metadata orders"
    ):
        script.run(
            produce_op(core, "orders", [(b"k", b"v")], partition=None, timeout_ms=1)
        )
    with pytest.raises(
        ClientError, match=r"records\[1\]\.key: bytes or None expected, got int"
    ):
        Script({MD: 12}, (MD, metadata({0: 1}))).run(
            produce_op(
                core, "orders", [(b"k", b"v"), (5, b"v")], partition=None, timeout_ms=1
            )
        )
    with pytest.raises(ClientError, match="acks must be"):
        Script({}).run(
            produce_op(
                core, "orders", [(b"k", b"v")], partition=None, acks=2, timeout_ms=1
            )
        )


def fetch_answer(records: bytes, *, hw: int, error: int = 0) -> dict[str, Any]:
    part = {
        "partition_index": 0,
        "error_code": error,
        "high_watermark": hw,
        "log_start_offset": 0,
        "records": records,
    }
    return {
        "responses": [{"topic": "orders", "topic_id": TOPIC_ID, "partitions": [part]}]
    }


def batch(base: int, n: int) -> bytes:
    return encode_batch(
        [(b"k%d" % i, b"v%d" % (base + i), [], 1000) for i in range(n)],
        base_offset=base,
    )


@pytest.mark.parametrize("version", [4, 12, 13, 16])
def test_fetch_drops_records_below_offset_and_keeps_partial_tail(version: int) -> None:
    core = ClientCore("b1:9001")
    data = batch(0, 3) + batch(3, 2)
    truncated = data + batch(5, 4)[:-7]
    script = Script(
        {MD: 12, FETCH: version},
        (MD, metadata({0: 2})),
        (FETCH, fetch_answer(truncated, hw=9)),
    )
    result = script.run(core.fetch("orders", 0, 1, max_bytes=1000, max_wait_ms=0))
    assert [r.offset for r in result.records] == [1, 2, 3, 4]
    assert result.raw == data  # whole batches, without the partial tail
    assert (result.next_offset, result.high_watermark, result.log_start_offset) == (
        5,
        9,
        0 if version >= 5 else -1,
    )
    ((node, request),) = script.requests(FETCH)
    assert node == 2
    (topic,) = request.topics
    assert (topic.topic_id if version >= 13 else topic.topic) == (
        TOPIC_ID if version >= 13 else "orders"
    )
    assert topic.partitions[0].fetch_offset == 1


@pytest.mark.parametrize("decode", [True, False])
def test_fetch_next_offset_counts_records_compacted_away(decode: bool) -> None:
    # A batch whose last records were compacted away keeps its last_offset_delta:
    # the next fetch starts past it (else the same batch would come back forever).
    core = ClientCore("b1:9001")
    compacted = bytearray(batch(0, 2))
    compacted[23:27] = (4).to_bytes(4, "big")  # last_offset_delta 4: offsets 0..4
    import crc32c

    compacted[17:21] = crc32c.crc32c(bytes(compacted[21:])).to_bytes(4, "big")
    data = bytes(compacted) + batch(5, 2)
    script = Script(
        {MD: 12, FETCH: 12},
        (MD, metadata({0: 1})),
        (FETCH, fetch_answer(data + batch(7, 3)[:-5], hw=10)),
    )
    result = script.run(
        core.fetch(
            "orders",
            0,
            0,
            max_bytes=1000,
            max_wait_ms=0,
            isolation_level=1,
            decode=decode,
        )
    )
    assert result.next_offset == 7 and result.raw == data
    assert [r.offset for r in result.records] == ([0, 1, 5, 6] if decode else [])
    ((_, request),) = script.requests(FETCH)
    assert request.isolation_level == 1


def test_fetch_without_decoding_refuses_a_bad_header() -> None:
    core = ClientCore("b1:9001")
    bad = bytearray(batch(0, 2))
    bad[16] = 9  # magic 9
    script = Script(
        {MD: 12, FETCH: 12},
        (MD, metadata({0: 1})),
        (FETCH, fetch_answer(bytes(bad), hw=2)),
    )
    with pytest.raises(ClientError, match="magic"):
        script.run(
            core.fetch("orders", 0, 0, max_bytes=1000, max_wait_ms=0, decode=False)
        )


def test_fetch_of_only_a_partial_batch_is_an_error_not_a_hang() -> None:
    core = ClientCore("b1:9001")
    script = Script(
        {MD: 12, FETCH: 2},
        (MD, metadata({0: 1})),
        (FETCH, fetch_answer(batch(0, 3)[:-1], hw=3)),
    )
    with pytest.raises(ClientError, match="larger than max_bytes=10"):
        script.run(core.fetch("orders", 0, 0, max_bytes=10, max_wait_ms=0))


def test_fetch_v13_without_topic_id_is_refused() -> None:
    core = ClientCore("b1:9001")
    md = metadata({0: 1})
    md["topics"][0]["topic_id"] = uuid.UUID(int=0)
    script = Script({MD: 12, FETCH: 13}, (MD, md))
    with pytest.raises(ClientError, match="needs a topic id"):
        script.run(core.fetch("orders", 0, 0, max_bytes=10, max_wait_ms=0))


def test_fetch_offset_out_of_range_is_raised_with_its_code() -> None:
    core = ClientCore("b1:9001")
    script = Script(
        {MD: 12, FETCH: 12},
        (MD, metadata({0: 1})),
        (FETCH, fetch_answer(b"", hw=3, error=ErrorCode.OFFSET_OUT_OF_RANGE)),
    )
    with pytest.raises(BrokerError) as info:
        script.run(core.fetch("orders", 0, 99, max_bytes=10, max_wait_ms=0))
    assert info.value.error_code is ErrorCode.OFFSET_OUT_OF_RANGE


def test_pager_stops_at_the_first_high_watermark() -> None:
    from kproto.client import FetchResult
    from kproto.records import decode_records

    pager = Pager(1, follow=False)
    recs = tuple(decode_records(batch(1, 3)))
    assert [r.offset for r in pager.take(FetchResult(recs[:2], 3, 3, 0), "t-0")] == [
        1,
        2,
    ]
    assert pager.done
    pager = Pager(0, follow=False)
    with pytest.raises(
        ClientError, match="no batch returned below the high watermark 5"
    ):
        pager.take(FetchResult((), 0, 5, 0), "t-0")
    pager = Pager(0, follow=True)
    assert [r.offset for r in pager.take(FetchResult(recs, 4, 4, 0), "t-0")] == [
        1,
        2,
        3,
    ]
    assert not pager.done and pager.offset == 4


def test_list_offsets_groups_partitions_by_leader() -> None:
    core = ClientCore("b1:9001")

    def answer(parts: list[int]) -> dict[str, Any]:
        return {
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {"partition_index": p, "offset": 10 * p, "timestamp": -1}
                        for p in parts
                    ],
                }
            ]
        }

    script = Script(
        {MD: 12, ApiKey.LIST_OFFSETS: 7},
        (MD, metadata({0: 1, 1: 2, 2: 1})),
        (ApiKey.LIST_OFFSETS, answer([0, 2])),
        (ApiKey.LIST_OFFSETS, answer([1])),
    )
    out = script.run(core.list_offsets("orders", None, -2))
    assert {p: o.offset for p, o in out.items()} == {0: 0, 1: 10, 2: 20}
    sent = script.requests(ApiKey.LIST_OFFSETS)
    assert [
        (n, [p.partition_index for p in r.topics[0].partitions]) for n, r in sent
    ] == [(1, [0, 2]), (2, [1])]
    assert all(p.timestamp == -2 for _, r in sent for p in r.topics[0].partitions)


@pytest.mark.parametrize("version", [3, 7])
def test_create_topics_goes_to_the_controller_and_maps_errors(version: int) -> None:
    core = ClientCore("b1:9001")
    create = ApiKey.CREATE_TOPICS
    moved = {"topics": [{"name": "a", "error_code": ErrorCode.NOT_CONTROLLER}]}
    exists = {
        "topics": [
            {
                "name": "a",
                "error_code": ErrorCode.TOPIC_ALREADY_EXISTS,
                "error_message": "Topic 'a' already exists.",
            }
        ]
    }
    script = Script(
        {MD: 12, create: version},
        (MD, metadata({}, controller=2)),
        (create, moved),
        (MD, metadata({}, controller=3)),
        (create, exists),
    )
    with pytest.raises(BrokerError) as info:
        script.run(
            admin.create_topics(
                core,
                ["a"],
                num_partitions=3,
                replication_factor=1,
                configs={"cleanup.policy": "compact"},
                timeout_ms=1000,
                validate_only=False,
            )
        )
    err = info.value
    assert err.error_code is ErrorCode.TOPIC_ALREADY_EXISTS and not err.retriable
    assert err.topic == "a"
    assert "Topic 'a' already exists." in str(err)  # error_message, v1+
    (n1, r1), (n2, _) = script.requests(create)
    assert (n1, n2) == (2, 3)
    (t,) = r1.topics
    assert (t.name, t.num_partitions, t.replication_factor) == ("a", 3, 1)
    assert [(c.name, c.value) for c in t.configs] == [("cleanup.policy", "compact")]


@pytest.mark.parametrize("version", [3, 6])
def test_delete_topics_request_shape(version: int) -> None:
    core = ClientCore("b1:9001")
    delete = ApiKey.DELETE_TOPICS
    script = Script(
        {MD: 12, delete: version},
        (MD, metadata({}, controller=1 if version >= 6 else 0)),
        (delete, {"responses": [{"name": "a", "error_code": 0}]}),
    )
    script.run(admin.delete_topics(core, ["a"], timeout_ms=10))
    ((node, request),) = script.requests(delete)
    assert node == (1 if version >= 6 else ANY_NODE)  # controller 0: not a broker
    names = (
        [t.name for t in request.topics] if version >= 6 else list(request.topic_names)
    )
    assert names == ["a"]


@pytest.mark.parametrize("version", [2, 7, 8])
def test_offsets_without_membership_via_the_coordinator(version: int) -> None:
    core = ClientCore("b1:9001")
    fc, commit, fetch = (
        ApiKey.FIND_COORDINATOR,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
    )
    coordinator = {"node_id": 3, "host": "b3", "port": 9003, "error_code": 0}
    tps = [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    fetched_topics = [
        {
            "name": "orders",
            "partitions": [
                {"partition_index": 0, "committed_offset": 5, "error_code": 0},
                {"partition_index": 1, "committed_offset": -1, "error_code": 0},
            ],
        }
    ]
    fetched = (
        {"groups": [{"group_id": "g", "topics": fetched_topics}]}
        if version >= 8
        else {"topics": fetched_topics}
    )
    script = Script(
        {MD: 12, fc: 3, commit: version, fetch: version},
        (MD, metadata({0: 1, 1: 2})),
        (fc, coordinator),
        (
            commit,
            {
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [{"partition_index": 0, "error_code": 0}],
                    }
                ]
            },
        ),
        (fetch, fetched),
    )
    script.run(admin.commit_offsets(core, "g", {tps[0]: 5}, metadata=""), last=False)
    assert script.run(admin.fetch_offsets(core, "g", tps)) == {tps[0]: 5, tps[1]: -1}
    ((node, request),) = script.requests(commit)
    assert (
        node == 3
        and request.group_id == "g"
        and request.generation_id_or_member_epoch == -1
    )
    ((node, request),) = script.requests(fetch)
    group = request.groups[0] if version >= 8 else request
    assert (
        node == 3
        and group.group_id == "g"
        and list(group.topics[0].partition_indexes) == [0, 1]
    )
    assert script.requests(fc)[0][0] == ANY_NODE


def test_commit_refinds_the_coordinator_once() -> None:
    core = ClientCore("b1:9001")
    fc, commit = ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_COMMIT

    def answer(code: int) -> dict[str, Any]:
        return {
            "topics": [
                {
                    "name": "orders",
                    "partitions": [{"partition_index": 0, "error_code": code}],
                }
            ]
        }

    script = Script(
        {MD: 12, fc: 3, commit: 8},
        (MD, metadata({0: 1})),
        (fc, {"node_id": 1, "host": "b1", "port": 9001}),
        (commit, answer(ErrorCode.NOT_COORDINATOR)),
        (fc, {"node_id": 2, "host": "b2", "port": 9002}),
        (commit, answer(ErrorCode.UNKNOWN_MEMBER_ID)),
    )
    with pytest.raises(BrokerError) as info:
        script.run(
            admin.commit_offsets(
                core, "g", {TopicPartition("orders", 0): 1}, metadata=None
            )
        )
    assert info.value.error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert [n for n, _ in script.requests(commit)] == [1, 2]


@pytest.mark.parametrize(
    ("servers", "expected"),
    [("a:1,b:2", [("a", 1), ("b", 2)]), (" [::1]:9092 ,", [("::1", 9092)])],
)
def test_bootstrap_parsing(servers: str, expected: list[tuple[str, int]]) -> None:
    assert parse_bootstrap(servers) == expected


@pytest.mark.parametrize("servers", ["", "host", "host:x", "host:0", ":9092"])
def test_bad_bootstrap_names_the_entry(servers: str) -> None:
    with pytest.raises(ClientError, match="bootstrap"):
        parse_bootstrap(servers)


def test_blocking_client_modules_never_import_asyncio() -> None:
    pkg = Path(__file__).resolve().parents[2] / "src" / "kproto" / "client"
    blocking = [p for p in pkg.glob("*.py") if p.name != "aio.py"]
    assert len(blocking) >= 7
    for path in blocking:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
                if (
                    node.level
                    and node.module in (None, "aio")
                    and any(a.name == "AsyncClient" for a in node.names)
                ):
                    assert path.name == "__init__.py", path  # the lazy re-export only
                    continue
            for name in names:
                assert not name.startswith(
                    ("asyncio", "kproto.aio")
                ), f"{path.name} imports {name}"


def test_importing_the_blocking_client_does_not_import_asyncio() -> None:
    code = (
        "import sys, kproto.connection; before = 'asyncio' in sys.modules; "
        "from kproto.client import Client; print(before, 'asyncio' in sys.modules)"
    )
    out = run_python(code)
    before, after = out.stdout.split()
    if before == "True":
        pytest.skip("kproto.connection itself imports asyncio (issue 9c splits it)")
    assert after == "False", out.stderr
