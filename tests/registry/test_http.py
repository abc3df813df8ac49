"""The registry's REST API over raw HTTP: error bodies, bad input, bounds, IMPORT."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
import requests

from kproto.broker import Cluster
from kproto.registry.rest import CONTENT_TYPE, DEFAULT_MAX_REQUEST_BYTES

Subject = Callable[[], str]
HEADERS = {"Content-Type": CONTENT_TYPE}


def call(
    cluster: Cluster, method: str, path: str, body: Any = None, **kwargs: Any
) -> requests.Response:
    data = kwargs.pop("data", None)
    if body is not None:
        data = json.dumps(body)
    headers = kwargs.pop("headers", HEADERS)
    return requests.request(
        method,
        cluster.schema_registry_url + path,
        data=data,
        headers=headers,
        timeout=10,
        **kwargs,
    )


def error(response: requests.Response) -> tuple[int, int, str]:
    """(HTTP status, error_code, message) of an error response."""
    assert response.headers["Content-Type"] == CONTENT_TYPE
    body = response.json()
    assert set(body) == {"error_code", "message"}
    return response.status_code, body["error_code"], body["message"]


def test_root_contexts_metadata(registry_cluster: Cluster) -> None:
    assert call(registry_cluster, "GET", "/").json() == {}
    assert call(registry_cluster, "GET", "/contexts").json() == ["."]
    scope = call(registry_cluster, "GET", "/v1/metadata/id").json()["scope"]
    assert scope["clusters"]["kafka-cluster"] == registry_cluster.state.cluster_id


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/nothing/here", 404),
        ("GET", "/subjects/a/versions/1/nothing", 404),
        ("GET", "/schemas/ids/abc", 404),
        ("PATCH", "/subjects", 405),
        ("PUT", "/subjects/a/versions", 405),
    ],
)
def test_unknown_routes(
    registry_cluster: Cluster, method: str, path: str, status: int
) -> None:
    assert error(call(registry_cluster, method, path))[:2] == (status, status)


def test_bad_json_and_shapes(
    registry_cluster: Cluster, subject: Subject, caplog: pytest.LogCaptureFixture
) -> None:
    name = subject()
    path = f"/subjects/{name}/versions"
    with caplog.at_level(logging.DEBUG):
        status, code, message = error(
            call(registry_cluster, "POST", path, data="{oops")
        )
        assert (status, code) == (400, 400) and "not JSON" in message
        assert error(call(registry_cluster, "POST", path, body=[1, 2]))[:2] == (
            422,
            422,
        )
        assert error(call(registry_cluster, "POST", path, body={}))[:2] == (422, 42201)
        assert error(call(registry_cluster, "POST", path, body={"schema": 5}))[:2] == (
            422,
            42201,
        )
        status, code, message = error(
            call(
                registry_cluster,
                "POST",
                path,
                body={"schema": "{}", "schemaType": "XML"},
            )
        )
        assert (status, code) == (422, 42201) and "XML" in message
        bad_refs = {"schema": '"string"', "references": [{"name": 1}]}
        assert error(call(registry_cluster, "POST", path, body=bad_refs))[:2] == (
            422,
            422,
        )
        bad_id = {"schema": '"string"', "id": "seven"}
        assert error(call(registry_cluster, "POST", path, body=bad_id))[:2] == (
            422,
            422,
        )
        status, code, message = error(
            call(registry_cluster, "GET", f"/subjects/{name}/versions/0")
        )
        assert (status, code) == (422, 42202) and "'0'" in message
        assert error(call(registry_cluster, "GET", "/subjects?offset=x"))[:2] == (
            422,
            422,
        )
    # a client's mistakes are answered, never logged as a failure
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_content_types(registry_cluster: Cluster, subject: Subject) -> None:
    body = json.dumps({"schema": '{"type": "string"}'})
    for content_type in (
        CONTENT_TYPE,
        "application/vnd.schemaregistry+json",
        "application/json",
        "application/octet-stream",
    ):
        response = call(
            registry_cluster,
            "POST",
            f"/subjects/{subject()}/versions",
            data=body,
            headers={"Content-Type": content_type},
        )
        assert response.status_code == 200, response.text
        assert response.headers["Content-Type"] == CONTENT_TYPE
    status, code, message = error(
        call(
            registry_cluster,
            "POST",
            f"/subjects/{subject()}/versions",
            data=body,
            headers={"Content-Type": "text/xml"},
        )
    )
    assert (status, code) == (415, 415) and "text/xml" in message


def test_oversized_body(registry_cluster: Cluster, subject: Subject) -> None:
    big = b"x" * (DEFAULT_MAX_REQUEST_BYTES + 1)
    status, code, message = error(
        call(registry_cluster, "POST", f"/subjects/{subject()}/versions", data=big)
    )
    assert (status, code) == (422, 42209)
    assert str(DEFAULT_MAX_REQUEST_BYTES) in message

    # chunked (no Content-Length): cut off at the same bound
    def chunks() -> Any:
        for _ in range(DEFAULT_MAX_REQUEST_BYTES // 65536 + 2):
            yield b"y" * 65536

    status, code, _ = error(
        call(registry_cluster, "POST", f"/subjects/{subject()}/versions", data=chunks())
    )
    assert (status, code) == (422, 42209)
    # the server still answers
    assert call(registry_cluster, "GET", "/subjects").status_code == 200


def test_not_found_codes(registry_cluster: Cluster, subject: Subject) -> None:
    name = subject()
    assert (
        error(call(registry_cluster, "GET", f"/subjects/{name}/versions"))[1] == 40401
    )
    assert error(call(registry_cluster, "GET", "/schemas/ids/999999"))[1] == 40403
    call(registry_cluster, "POST", f"/subjects/{name}/versions", {"schema": '"int"'})
    assert (
        error(call(registry_cluster, "GET", f"/subjects/{name}/versions/5"))[1] == 40402
    )
    assert error(call(registry_cluster, "GET", f"/mode/{name}"))[1] == 40409
    assert error(call(registry_cluster, "DELETE", f"/mode/{name}"))[1] == 40409
    assert error(call(registry_cluster, "DELETE", f"/config/{name}"))[1] == 40408


def test_version_body_schema_and_listing(
    registry_cluster: Cluster, subject: Subject
) -> None:
    prefix = subject().replace("-value", "-pfx")
    names = [f"{prefix}-{i}" for i in range(3)]
    for name in names:
        assert call(
            registry_cluster,
            "POST",
            f"/subjects/{name}/versions",
            {"schema": '{"type": "long"}'},
        ).ok
    got = call(registry_cluster, "GET", f"/subjects/{names[0]}/versions/latest").json()
    # no schemaType for AVRO, no references when none
    assert set(got) == {"subject", "version", "id", "guid", "schema"}
    raw = call(registry_cluster, "GET", f"/subjects/{names[0]}/versions/1/schema")
    assert raw.text == '"long"'  # Avro's canonical form
    assert (
        call(registry_cluster, "GET", f"/schemas/ids/{got['id']}/schema").text
        == raw.text
    )
    listed = call(registry_cluster, "GET", f"/subjects?subjectPrefix={prefix}").json()
    assert listed == names
    assert (
        call(
            registry_cluster,
            "GET",
            f"/subjects?subjectPrefix={prefix}&offset=1&limit=1",
        ).json()
        == names[1:2]
    )
    found = call(
        registry_cluster, "GET", f"/schemas/ids/{got['id']}?subject={names[0]}"
    )
    assert found.json() == {"guid": got["guid"], "schema": '"long"'}
    assert (
        error(call(registry_cluster, "GET", f"/schemas/ids/{got['id']}?subject=other"))[
            1
        ]
        == 40403
    )


def test_compatibility_verbose(registry_cluster: Cluster, subject: Subject) -> None:
    name = subject()
    body = {"schema": '{"type": "string"}'}
    assert call(registry_cluster, "POST", f"/subjects/{name}/versions", body).ok
    answer = call(
        registry_cluster,
        "POST",
        f"/compatibility/subjects/{name}/versions/latest?verbose=true",
        body,
    ).json()
    assert answer == {"is_compatible": True, "messages": []}
    answer = call(
        registry_cluster, "POST", f"/compatibility/subjects/{name}/versions", body
    ).json()
    assert answer == {"is_compatible": True}


def test_import_mode_with_explicit_ids(
    registry_cluster: Cluster, subject: Subject
) -> None:
    name = subject()
    body = {"schema": '{"type":"record","name":"Imported","fields":[]}', "id": 5000}
    status, code, _ = error(
        call(registry_cluster, "POST", f"/subjects/{name}/versions", body)
    )
    assert (status, code) == (422, 42205)  # ids only in IMPORT mode
    assert call(
        registry_cluster, "PUT", f"/mode/{name}", {"mode": "IMPORT"}
    ).json() == {"mode": "IMPORT"}
    assert call(registry_cluster, "GET", f"/mode/{name}").json() == {"mode": "IMPORT"}
    got = call(registry_cluster, "POST", f"/subjects/{name}/versions", body)
    assert got.json()["id"] == 5000
    with_version = {"schema": '"bytes"', "id": 4000, "version": 7}
    assert (
        call(
            registry_cluster, "POST", f"/subjects/{name}/versions", with_version
        ).json()["id"]
        == 4000
    )
    assert call(registry_cluster, "GET", f"/subjects/{name}/versions").json() == [1, 7]
    # another schema under a taken id is refused
    clash = {"schema": '"float"', "id": 5000}
    assert (
        error(call(registry_cluster, "POST", f"/subjects/{name}/versions", clash))[1]
        == 42207
    )
    assert call(registry_cluster, "GET", "/schemas/ids/5000").json()["schema"] == (
        '{"type":"record","name":"Imported","fields":[]}'
    )
    # back to READWRITE: new ids come after the imported ones
    assert call(registry_cluster, "PUT", f"/mode/{name}", {"mode": "READWRITE"}).ok
    fresh = call(
        registry_cluster,
        "POST",
        f"/subjects/{subject()}/versions",
        {"schema": '"double"'},
    )
    assert fresh.json()["id"] > 5000
    # IMPORT over a subject with schemas: only with force
    assert (
        error(call(registry_cluster, "PUT", f"/mode/{name}", {"mode": "IMPORT"}))[1]
        == 42205
    )
    assert call(
        registry_cluster, "PUT", f"/mode/{name}?force=true", {"mode": "IMPORT"}
    ).ok


def test_readonly_override(registry_cluster: Cluster, subject: Subject) -> None:
    name = subject()
    assert call(
        registry_cluster, "PUT", f"/mode/{name}", {"mode": "READONLY_OVERRIDE"}
    ).ok
    status, code, message = error(
        call(
            registry_cluster, "POST", f"/subjects/{name}/versions", {"schema": '"int"'}
        )
    )
    assert (status, code) == (422, 42205) and "read-only" in message
    assert call(registry_cluster, "DELETE", f"/mode/{name}").json() == {
        "mode": "READONLY_OVERRIDE"
    }


def test_guids_and_schema_listing(registry_cluster: Cluster, subject: Subject) -> None:
    name = subject()
    text = '{"type":"enum","name":"Guid","symbols":["A","B"]}'
    registered = call(
        registry_cluster, "POST", f"/subjects/{name}/versions", {"schema": text}
    ).json()
    guid = registered["guid"]
    by_guid = call(registry_cluster, "GET", f"/schemas/guids/{guid}").json()
    assert (by_guid["id"], by_guid["guid"], by_guid["schema"]) == (
        registered["id"],
        guid,
        text,
    )
    assert (
        call(registry_cluster, "GET", f"/schemas/ids/{registered['id']}").json()["guid"]
        == guid
    )
    # the same schema in another subject: the same id and GUID
    again = call(
        registry_cluster, "POST", f"/subjects/{subject()}/versions", {"schema": text}
    )
    assert again.json() == registered
    missing = "00000000-0000-0000-0000-000000000000"
    assert error(call(registry_cluster, "GET", f"/schemas/guids/{missing}"))[1] == 40403
    listed = call(registry_cluster, "GET", f"/schemas?subjectPrefix={name}").json()
    assert [(s["subject"], s["version"], s["id"]) for s in listed] == [
        (name, 1, registered["id"])
    ]
    version = call(registry_cluster, "GET", "/v1/metadata/version").json()
    assert set(version) == {"version", "commitId"}


COMMON_PROTO = 'syntax = "proto3";\npackage kproto.test;\n\nmessage Money {\n  int64 units = 1;\n}\n'
PAYMENT_PROTO = (
    'syntax = "proto3";\npackage kproto.test;\n\nimport "common.proto";\n\n'
    "message Payment {\n  Money amount = 1;\n  string memo = 2;\n}\n"
)


def test_protobuf_references_and_serialized_format(
    registry_cluster: Cluster, subject: Subject
) -> None:
    from google.protobuf import descriptor_pb2

    common, payment = subject(), subject()
    body = {"schema": COMMON_PROTO, "schemaType": "PROTOBUF"}
    assert call(registry_cluster, "POST", f"/subjects/{common}/versions", body).ok
    ref = {"name": "common.proto", "subject": common, "version": 1}
    body = {"schema": PAYMENT_PROTO, "schemaType": "PROTOBUF", "references": [ref]}
    registered = call(registry_cluster, "POST", f"/subjects/{payment}/versions", body)
    assert registered.status_code == 200, registered.text
    schema_id = registered.json()["id"]
    got = call(registry_cluster, "GET", f"/schemas/ids/{schema_id}").json()
    assert got["schemaType"] == "PROTOBUF" and got["references"] == [ref]
    serialized = call(
        registry_cluster, "GET", f"/schemas/ids/{schema_id}?format=serialized"
    ).json()["schema"]
    descriptor = descriptor_pb2.FileDescriptorProto.FromString(
        base64.b64decode(serialized)
    )
    assert [m.name for m in descriptor.message_type] == ["Payment"]
    assert list(descriptor.dependency) == ["common.proto"]
    # lookup finds it; without its reference the import does not resolve
    found = call(registry_cluster, "POST", f"/subjects/{payment}", body).json()
    assert (found["id"], found["version"]) == (schema_id, 1)
    no_ref = {"schema": PAYMENT_PROTO, "schemaType": "PROTOBUF"}
    assert (
        error(
            call(registry_cluster, "POST", f"/subjects/{subject()}/versions", no_ref)
        )[1]
        == 42201
    )
    # BACKWARD: changing a field's type is refused, adding one is fine
    changed = {
        **body,
        "schema": PAYMENT_PROTO.replace("string memo = 2", "int64 memo = 2"),
    }
    assert (
        error(call(registry_cluster, "POST", f"/subjects/{payment}/versions", changed))[
            1
        ]
        == 40901
    )
    added = {**body, "schema": PAYMENT_PROTO.replace("}\n", "  bool paid = 3;\n}\n", 2)}
    second = call(registry_cluster, "POST", f"/subjects/{payment}/versions", added)
    assert second.status_code == 200, second.text
    referencing = call(
        registry_cluster, "GET", f"/subjects/{common}/versions/1/referencedby"
    ).json()
    assert referencing == [schema_id, second.json()["id"]]


def test_schema_type_mismatch_is_incompatible(
    registry_cluster: Cluster, subject: Subject
) -> None:
    name = subject()
    assert call(
        registry_cluster, "POST", f"/subjects/{name}/versions", {"schema": '"string"'}
    ).ok
    json_schema = {"schema": '{"type": "string"}', "schemaType": "JSON"}
    status, code, message = error(
        call(registry_cluster, "POST", f"/subjects/{name}/versions", json_schema)
    )
    assert (status, code) == (409, 40901) and "AVRO" in message


@pytest.mark.parametrize("name", ["__GLOBAL", "tab%09in", "nl%0Ain"])
def test_invalid_subject_names(registry_cluster: Cluster, name: str) -> None:
    status, code, _ = error(
        call(
            registry_cluster, "POST", f"/subjects/{name}/versions", {"schema": '"int"'}
        )
    )
    assert (status, code) == (422, 42208)


def test_client_vanishing_mid_body(
    registry_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(registry_cluster.schema_registry_url)
    with caplog.at_level(logging.DEBUG):
        for _ in range(3):
            with socket.create_connection(
                (where.hostname, where.port), timeout=10
            ) as s:
                s.sendall(
                    b"POST /subjects/gone-value/versions HTTP/1.1\r\nHost: x\r\n"
                    b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                    b'{"schema": '
                )
        # not JSON, no headers: an HTTP error, not a crash
        with socket.create_connection((where.hostname, where.port), timeout=10) as s:
            s.sendall(b"\x16\x03\x01garbage\r\n\r\n")
            assert s.recv(100).startswith(b"HTTP/1.")
        assert call(registry_cluster, "GET", "/subjects").status_code == 200
    tracebacks = [
        r for r in caplog.records if r.exc_info and r.levelno >= logging.WARNING
    ]
    assert not tracebacks


@pytest.mark.parametrize(
    ("path", "body", "code"),
    [
        ("/config", {}, 42203),
        ("/config", {"compatibility": None}, 42203),
        ("/config", {"compatibility": 3}, 42203),
        ("/config/x", {"compatibility": "sideways"}, 42203),
        ("/mode", {}, 42204),
        ("/mode/x", {"mode": ["IMPORT"]}, 42204),
    ],
)
def test_bad_config_and_mode_bodies(
    registry_cluster: Cluster, path: str, body: dict[str, object], code: int
) -> None:
    assert error(call(registry_cluster, "PUT", path, body))[:2] == (422, code)
    assert call(registry_cluster, "GET", "/config").json() == {
        "compatibilityLevel": "BACKWARD"
    }


def test_concurrent_registrations_get_distinct_increasing_ids(
    registry_cluster: Cluster, subject: Subject
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    names = [subject() for _ in range(40)]

    def register(i: int) -> int:
        text = json.dumps({"type": "fixed", "name": f"Concurrent{i}", "size": 4})
        answer = call(
            registry_cluster, "POST", f"/subjects/{names[i]}/versions", {"schema": text}
        )
        assert answer.status_code == 200, answer.text
        result: int = answer.json()["id"]
        return result

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(register, range(len(names))))
    assert len(set(ids)) == len(ids)
    assert max(ids) - min(ids) == len(ids) - 1  # no gaps, no reuse
    for name, schema_id in zip(names, ids, strict=True):
        assert (
            call(registry_cluster, "GET", f"/subjects/{name}/versions/1").json()["id"]
            == schema_id
        )


def test_long_lists_are_encoded_off_the_loop(
    registry_cluster: Cluster, subject: Subject, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kproto.registry.rest

    for _ in range(3):
        call(
            registry_cluster,
            "POST",
            f"/subjects/{subject()}/versions",
            {"schema": '"null"'},
        )
    small = call(registry_cluster, "GET", "/subjects").json()
    every = call(registry_cluster, "GET", "/schemas").json()
    monkeypatch.setattr(kproto.registry.rest, "LARGE_LIST", 1)
    response = call(registry_cluster, "GET", "/subjects")
    assert response.headers["Content-Type"] == CONTENT_TYPE
    assert response.json() == small
    assert call(registry_cluster, "GET", "/schemas").json() == every
