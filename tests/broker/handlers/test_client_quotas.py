"""DescribeClientQuotas and AlterClientQuotas (handlers/client_quotas.py) at
every version kproto generates, and their storage across a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions
from tests.broker.handlers.support import connect, send


def _entity(**pairs: str | None) -> list[dict[str, str | None]]:
    return [
        {"entity_type": k.replace("_", "-"), "entity_name": v} for k, v in pairs.items()
    ]


def _set(key: str, value: float, **entity: str | None) -> dict[str, Any]:
    """An AlterClientQuotas entry setting quota ``key`` to ``value`` for ``entity``."""
    return {
        "entity": _entity(**entity),
        "ops": [{"key": key, "value": value, "remove": False}],
    }


def test_client_quotas(cluster: Cluster, conn: Connection) -> None:
    for version in api_versions(ApiKey.ALTER_CLIENT_QUOTAS):
        answer = send(
            conn,
            ApiKey.ALTER_CLIENT_QUOTAS,
            version,
            validate_only=False,
            entries=[
                _set("producer_byte_rate", 1024.0, user="alice"),
                _set("request_percentage", 12.5, user="alice", client_id=None),
                _set("connection_creation_rate", 5.0, ip=None),
                _set("producer_byte_rate", 1.5, user="bob"),
                _set("no_such_quota", 1.0, user="bob"),
                _set("connection_creation_rate", 1.0, ip="1.2.3.4", user="x"),
                _set("connection_creation_rate", 1.0, ip="not-an-ip"),
                _set("consumer_byte_rate", 0.0, user="carol"),
            ],
        )
        errors = [e.error_code for e in answer.entries]
        assert errors == [ErrorCode.NONE] * 3 + [ErrorCode.INVALID_REQUEST] * 5
    for version in api_versions(ApiKey.DESCRIBE_CLIENT_QUOTAS):

        def describe(
            strict: bool, *components: tuple[str, int, str | None], v: int = version
        ) -> Any:
            return send(
                conn,
                ApiKey.DESCRIBE_CLIENT_QUOTAS,
                v,
                strict=strict,
                components=[
                    {"entity_type": t, "match_type": m, "match": n}
                    for t, m, n in components
                ],
            )

        exact = describe(True, ("user", 0, "alice"))
        assert exact.error_code == ErrorCode.NONE
        ((entity, values),) = [
            ({(e.entity_type, e.entity_name) for e in x.entity}, x.values)
            for x in exact.entries
        ]
        assert entity == {("user", "alice")}
        assert [(v.key, v.value) for v in values] == [("producer_byte_rate", 1024.0)]
        loose = describe(False, ("user", 2, None))
        assert len(loose.entries) == 2  # alice alone, and alice with the default client
        default_client = describe(False, ("client-id", 1, None))
        assert len(default_client.entries) == 1
        ips = describe(False, ("ip", 1, None))
        assert [v.key for v in ips.entries[0].values] == ["connection_creation_rate"]
        bad = describe(False, ("ip", 2, None), ("user", 2, None))
        assert bad.error_code == ErrorCode.INVALID_REQUEST
    removed = conn.request(
        ApiKey.ALTER_CLIENT_QUOTAS,
        validate_only=False,
        entries=[
            {
                "entity": _entity(ip=None),
                "ops": [
                    {"key": "connection_creation_rate", "value": 0.0, "remove": True}
                ],
            }
        ],
    )
    assert removed.entries[0].error_code == ErrorCode.NONE
    assert cluster.state.dynamic.quotas.get((("ip", None),)) is None


def test_client_quotas_survive_a_restart(tmp_path: Path) -> None:
    with Cluster(data_dir=tmp_path) as c:
        conn = connect(c, c.state.node_ids[0])
        answer = conn.request(
            ApiKey.ALTER_CLIENT_QUOTAS,
            validate_only=False,
            entries=[_set("consumer_byte_rate", 2048.0, client_id="app")],
        )
        assert answer.entries[0].error_code == ErrorCode.NONE
        conn.close()
    with Cluster(data_dir=tmp_path) as c:
        assert c.state.dynamic.quotas == {
            (("client-id", "app"),): {"consumer_byte_rate": 2048.0}
        }
