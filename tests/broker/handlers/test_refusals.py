"""The refusals' response shapes (``kproto.broker.handlers.refusals``): an error
written into every API's response at every version, the entries of refused
topics, and the answer to a version advertised but not served."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import attrs
import pytest

from kproto.broker import Cluster
from kproto.broker.dispatch import SERVED_APIS
from kproto.broker.handlers import RequestContext
from kproto.broker.handlers.refusals import (
    TOPIC_SHAPES,
    check_error_response,
    error_response,
    refused_topics,
    unsupported_version,
)
from kproto.broker.state import ClusterState
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions, request_type, response_type
from kproto.serial import decode, encode
from tests.broker.handlers.support import send
from tests.strategies import sample_entity


def _context(state: ClusterState, api_key: ApiKey, version: int) -> RequestContext:
    """A context for building a response (the coordinators are not used)."""
    fields: dict[str, Any] = {f.name: None for f in attrs.fields(RequestContext)}
    fields.update(
        state=state,
        served_apis=SERVED_APIS,
        node_id=1,
        header=SimpleNamespace(request_api_key=api_key),
        api_version=version,
        client_id=None,
        client_host="127.0.0.1",
    )
    return RequestContext(**fields)


def _error_codes(entity: Any) -> list[int]:
    """Every ``error_code`` in ``entity``, nested entries included."""
    found: list[int] = []
    for field in attrs.fields(type(entity)):
        value = getattr(entity, field.name)
        if field.name in ("error_code", "partition_error_code"):
            found.append(value)
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if attrs.has(type(item)):
                found.extend(_error_codes(item))
    return found


#: The APIs served when fault injection was written.
HANDLERS_BEFORE_FAULTS = (
    ApiKey.PRODUCE,
    ApiKey.FETCH,
    ApiKey.LIST_OFFSETS,
    ApiKey.METADATA,
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.FIND_COORDINATOR,
    ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS,
    ApiKey.API_VERSIONS,
    ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS,
    ApiKey.DELETE_RECORDS,
    ApiKey.DESCRIBE_CONFIGS,
    ApiKey.ALTER_CONFIGS,
    ApiKey.CREATE_PARTITIONS,
    ApiKey.DELETE_GROUPS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.OFFSET_DELETE,
    ApiKey.DESCRIBE_CLUSTER,
)

#: The transaction APIs, served or not, whose error answers are built too.
_TRANSACTION_APIS = (
    ApiKey.INIT_PRODUCER_ID,
    ApiKey.ADD_PARTITIONS_TO_TXN,
    ApiKey.ADD_OFFSETS_TO_TXN,
    ApiKey.END_TXN,
    ApiKey.TXN_OFFSET_COMMIT,
    ApiKey.DESCRIBE_PRODUCERS,
    ApiKey.DESCRIBE_TRANSACTIONS,
    ApiKey.LIST_TRANSACTIONS,
)


def test_error_responses_of_every_api_and_version(tmp_path: Path) -> None:
    """Each API the broker serves either refuses error injection up front or gets
    an encodable response of the request's version whose every error_code (top
    level and per entry) is the injected one."""
    state = ClusterState(tmp_path, [1])
    refused = []
    apis = dict.fromkeys([*SERVED_APIS, *_TRANSACTION_APIS])
    for api_key in apis:
        try:
            check_error_response(api_key)
        except ValueError:
            refused.append(api_key)
            continue
        versions = api_versions(api_key)
        low, high = SERVED_APIS.get(api_key, (versions.start, versions.stop - 1))
        for version in range(low, high + 1):
            request = sample_entity(request_type(api_key, version))
            ctx = _context(state, api_key, version)
            response = error_response(ctx, request, ErrorCode.UNKNOWN_SERVER_ERROR)
            assert type(response) is response_type(api_key, version)
            decoded = decode(type(response), encode(response))
            codes = _error_codes(decoded)
            where = f"{api_key.name} v{version}"
            assert codes, where
            assert set(codes) == {ErrorCode.UNKNOWN_SERVER_ERROR}, where
    # every API served can be injected (one a later branch adds may be refused,
    # which is the documented answer; the ones clients use most never are)
    assert not set(refused) & {*_TRANSACTION_APIS, *HANDLERS_BEFORE_FAULTS}, refused


def test_refused_topics_of_every_topic_keyed_api_and_version(tmp_path: Path) -> None:
    """The entries the ACL checks answer for refused topics build into the response
    of every version, each partition of the request with the error and its -1
    offsets, under the topic's name (or id, where the version names by id)."""
    state = ClusterState(tmp_path, [1])
    denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    for api_key, shape in TOPIC_SHAPES.items():
        for version in api_versions(api_key):
            request = sample_entity(request_type(api_key, version))
            ctx = _context(state, api_key, version)
            topics = getattr(request, shape.topics)
            response = error_response(ctx, request, denied)
            built = refused_topics(shape, topics, denied)
            assert len(getattr(response, shape.out_topics)) == len(built) > 0
            for entry, topic in zip(
                getattr(response, shape.out_topics), topics, strict=True
            ):
                indexes = [
                    getattr(p, shape.index) for p in getattr(topic, shape.partitions)
                ]
                partitions = getattr(entry, shape.out_partitions)
                assert [getattr(p, shape.out_index) for p in partitions] == indexes
                for p in partitions:
                    assert p.error_code == denied
                    for name, value in shape.defaults.items():
                        if hasattr(p, name):
                            assert getattr(p, name) == value, (api_key, version, name)


def test_unsupported_version_answers_every_partition(tmp_path: Path) -> None:
    """Produce v0-v2: every partition UNSUPPORTED_VERSION; acks=0 gets no answer."""
    state = ClusterState(tmp_path, [1])
    for version in range(SERVED_APIS[ApiKey.PRODUCE][0], 3):
        ctx = _context(state, ApiKey.PRODUCE, version)
        request = attrs.evolve(
            sample_entity(request_type(ApiKey.PRODUCE, version)), acks=-1
        )
        response = asyncio.run(unsupported_version(ctx, request))
        assert type(response) is response_type(ApiKey.PRODUCE, version)
        codes = {
            p.error_code for t in response.responses for p in t.partition_responses
        }
        assert codes == {ErrorCode.UNSUPPORTED_VERSION}
        no_acks = attrs.evolve(request, acks=0)
        assert asyncio.run(unsupported_version(ctx, no_acks)) is None


@pytest.mark.parametrize("version", api_versions(ApiKey.OFFSET_FETCH)[8:])
def test_injected_error_on_batched_offset_fetch_answers_each_group(
    cluster: Cluster, conn: Connection, version: int
) -> None:
    # v8+ batches groups: the error is each group's, and an empty batch answers
    # an empty list (not the single-group shape of v0-v7)
    error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    cluster.inject_errors(ApiKey.OFFSET_FETCH, [error, error])
    r = send(conn, ApiKey.OFFSET_FETCH, version, groups=[], require_stable=False)
    assert r.groups == ()
    topic = {"name": "fetched", "topic_id": uuid.UUID(int=7)}  # v10: by id
    asked = [
        {"group_id": "fetch-a", "topics": [{**topic, "partition_indexes": [0, 1]}]},
        {"group_id": "fetch-b", "topics": None},
    ]
    r = send(conn, ApiKey.OFFSET_FETCH, version, groups=asked, require_stable=False)
    assert [(g.group_id, g.error_code) for g in r.groups] == [
        ("fetch-a", error),
        ("fetch-b", error),
    ]
    (answer,) = r.groups[0].topics
    assert [
        (p.partition_index, p.error_code, p.committed_offset) for p in answer.partitions
    ] == [(0, error, -1), (1, error, -1)]
    assert r.groups[1].topics == ()
