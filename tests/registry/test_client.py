"""kproto's SchemaRegistryClient against a registry over HTTP (the in-memory double of
tests/registry_double.py): every call's request and answer shape, the caches (counted in
requests the registry saw), Basic auth, HTTPS, retries with backoff, typed errors."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import requests

from kproto.registry.client import (
    CompatibilityResult,
    RegistryConnectionError,
    Schema,
    SchemaReference,
    SchemaRegistryClient,
)
from kproto.registry.errors import RegistryError, RegistryErrorCode
from tests.registry_double import State, serve_registry

AVRO = '{"type":"record","name":"User","fields":[{"name":"id","type":"long"}]}'
AVRO2 = (
    '{"type":"record","name":"User","fields":[{"name":"id","type":"long"},'
    '{"name":"n","type":"string","default":""}]}'
)


@pytest.fixture
def registry() -> Iterator[tuple[SchemaRegistryClient, State]]:
    with serve_registry() as (url, state):
        client = SchemaRegistryClient(url, sleep=lambda s: None)
        yield client, state
        client.close()


def test_register_get_and_lookup(registry) -> None:
    client, state = registry
    schema_id = client.register_schema("users-value", Schema(AVRO))
    assert schema_id == 1
    assert client.register_schema("users-value", Schema(AVRO)) == 1  # cached
    assert state.requests.count(("POST", "/subjects/users-value/versions")) == 1
    # AVRO is sent without schemaType
    assert state.schemas[0]["schema"] == AVRO and "schemaType" not in state.schemas[0]
    assert client.get_schema(1) == Schema(AVRO)
    found = client.lookup_schema("users-value", Schema(AVRO))
    assert (found.schema_id, found.version, found.subject) == (1, 1, "users-value")
    assert client.register_schema("users-value", Schema(AVRO2)) == 2
    assert client.get_versions("users-value") == [1, 2]
    latest = client.get_latest_version("users-value")
    assert (latest.schema_id, latest.version, latest.schema) == (2, 2, Schema(AVRO2))
    assert client.get_version("users-value", 1).schema == Schema(AVRO)
    assert client.get_subjects() == ["users-value"]
    assert client.get_subjects(prefix="orders") == []
    assert client.get_subjects_by_schema_id(2) == ["users-value"]
    assert client.get_schema_types() == ["AVRO", "JSON", "PROTOBUF"]


def test_caches_spare_requests(registry) -> None:
    client, state = registry
    client.register_schema("s", Schema(AVRO))
    before = len(state.requests)
    for _ in range(3):
        client.get_schema(1)  # filled by the registration
        client.get_version("s", 1)
        client.get_latest_version("s")
    assert len(state.requests) - before == 2  # one version, one latest
    client.clear_caches()
    client.get_schema(1)
    assert len(state.requests) - before == 3


def test_latest_ttl_zero_never_caches() -> None:
    with serve_registry() as (url, state):
        client = SchemaRegistryClient(url, latest_ttl_s=0)
        client.register_schema("s", Schema(AVRO))
        client.get_latest_version("s")
        client.register_schema("s", Schema(AVRO2))
        assert client.get_latest_version("s").version == 2


def test_schema_types_and_references_on_the_wire(registry) -> None:
    client, state = registry
    refs = (SchemaReference("other.json", "other-value", 1),)
    client.register_schema("other-value", Schema('{"type":"string"}', "JSON"))
    client.register_schema("s", Schema('{"$ref":"other.json"}', "JSON", refs))
    stored = state.schemas[1]
    assert stored["schemaType"] == "JSON"
    assert stored["references"] == [
        {"name": "other.json", "subject": "other-value", "version": 1}
    ]
    assert client.get_schema(2).references == refs


def test_guid_lookup(registry) -> None:
    client, state = registry
    registered = client.register_schema_full_response("s", Schema(AVRO))
    assert (
        registered.guid is not None
    )  # the double answers a guid like newer registries
    by_guid = client.get_schema_by_guid(state.schemas[0]["guid"])
    assert by_guid.schema == Schema(AVRO) and by_guid.schema_id == 1


def test_soft_and_permanent_deletes(registry) -> None:
    client, _ = registry
    client.register_schema("s", Schema(AVRO))
    client.register_schema("s", Schema(AVRO2))
    assert client.delete_version("s", 2) == 2
    assert client.get_versions("s") == [1]
    assert client.get_versions("s", deleted=True) == [1, 2]
    with pytest.raises(RegistryError) as info:
        client.delete_subject("s", permanent=True)
    assert info.value.error_code == RegistryErrorCode.SUBJECT_NOT_SOFT_DELETED
    assert client.delete_subject("s") == [1]
    assert client.delete_subject("s", permanent=True) == [1, 2]
    with pytest.raises(RegistryError) as info:
        client.get_versions("s")
    assert info.value.error_code == RegistryErrorCode.SUBJECT_NOT_FOUND
    assert info.value.http_status == 404


def test_compatibility(registry) -> None:
    client, state = registry
    client.register_schema("s", Schema(AVRO))
    assert client.test_compatibility("s", Schema(AVRO2)) == CompatibilityResult(True)
    state.incompatible.append("s")
    result = client.test_compatibility("s", Schema(AVRO2), verbose=True)
    assert not result and result.messages == ("injected incompatibility",)
    assert ("POST", "/compatibility/subjects/s/versions/latest") in state.requests
    client.test_compatibility("s", Schema(AVRO2), version=None)
    assert ("POST", "/compatibility/subjects/s/versions") in state.requests
    with pytest.raises(RegistryError) as info:
        client.register_schema("s", Schema(AVRO2))
    assert info.value.error_code == RegistryErrorCode.INCOMPATIBLE_SCHEMA
    assert info.value.http_status == 409


def test_config_and_mode(registry) -> None:
    client, _ = registry
    assert client.get_config() == {"compatibilityLevel": "BACKWARD"}
    assert client.set_compatibility("full", "s") == "FULL"
    assert client.get_compatibility("s") == "FULL"
    assert client.get_compatibility("t") == "BACKWARD"  # defaultToGlobal
    with pytest.raises(RegistryError) as info:
        client.get_config("t")
    assert (
        info.value.error_code
        == RegistryErrorCode.SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED
    )
    with pytest.raises(RegistryError) as info:
        client.set_compatibility("SIDEWAYS")
    assert info.value.error_code == RegistryErrorCode.INVALID_COMPATIBILITY_LEVEL
    assert client.delete_config("s") == {"compatibilityLevel": "FULL"}
    assert client.get_mode() == "READWRITE"
    assert client.set_mode("READONLY", "s") == "READONLY"
    with pytest.raises(RegistryError) as info:
        client.register_schema("s", Schema(AVRO))
    assert info.value.error_code == RegistryErrorCode.OPERATION_NOT_PERMITTED
    assert client.delete_mode("s") == "READONLY"
    with pytest.raises(RegistryError) as info:
        client.set_mode("SOMETIMES")
    assert info.value.error_code == RegistryErrorCode.INVALID_MODE


def test_subject_names_are_quoted(registry) -> None:
    client, state = registry
    client.register_schema("a/b c", Schema(AVRO))
    assert ("POST", "/subjects/a%2Fb%20c/versions") in state.requests
    assert client.get_subjects() == ["a/b c"]


def test_errors_of_unknown_things(registry) -> None:
    client, _ = registry
    for call, code in [
        (lambda: client.get_schema(99), RegistryErrorCode.SCHEMA_NOT_FOUND),
        (
            lambda: client.get_latest_version("nope"),
            RegistryErrorCode.SUBJECT_NOT_FOUND,
        ),
        (lambda: client.request("GET", "no/such/route"), RegistryErrorCode.NOT_FOUND),
    ]:
        with pytest.raises(RegistryError) as info:
            call()
        assert info.value.error_code == code
    client.register_schema("s", Schema(AVRO))
    with pytest.raises(RegistryError) as info:
        client.get_version("s", 7)
    assert info.value.error_code == RegistryErrorCode.VERSION_NOT_FOUND
    with pytest.raises(RegistryError) as info:
        client.get_version("s", -3)
    assert info.value.error_code == RegistryErrorCode.INVALID_VERSION


def test_retries_5xx_with_bounded_backoff() -> None:
    waits: list[float] = []
    with serve_registry() as (url, state):
        client = SchemaRegistryClient(
            url,
            max_retries=3,
            retries_wait_ms=100,
            retries_max_wait_ms=250,
            sleep=waits.append,
        )
        state.fail_next = [503, 500, 502]
        assert client.get_schema_types() == ["AVRO", "JSON", "PROTOBUF"]
        assert len(waits) == 3
        assert 0 <= waits[0] <= 0.1 and 0 <= waits[1] <= 0.2 and 0 <= waits[2] <= 0.25
        state.fail_next = [503] * 4
        with pytest.raises(RegistryError) as info:
            client.get_schema_types()
        assert info.value.http_status == 503 and info.value.error_code == 50001
        assert state.fail_next == []  # 1 try + 3 retries


def test_4xx_is_not_retried() -> None:
    with serve_registry() as (url, state):
        client = SchemaRegistryClient(url, sleep=lambda s: None)
        state.fail_next = [404, 503]
        with pytest.raises(RegistryError):
            client.get_schema_types()
        assert state.fail_next == [503]


def test_connection_errors_are_retried_then_typed() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    waits: list[float] = []
    client = SchemaRegistryClient(
        f"http://127.0.0.1:{port}", max_retries=2, sleep=waits.append
    )
    with pytest.raises(RegistryConnectionError, match="no answer after 3 tries"):
        client.get_subjects()
    assert len(waits) == 2


def test_second_url_answers_when_the_first_does_not() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with serve_registry() as (url, _):
        client = SchemaRegistryClient(
            f"http://127.0.0.1:{port},{url}", sleep=lambda s: None
        )
        assert client.get_subjects() == []


def test_basic_auth() -> None:
    with serve_registry(auth=("alice", "s3cret")) as (url, _):
        with pytest.raises(RegistryError) as info:
            SchemaRegistryClient(url).get_subjects()
        assert info.value.http_status == 401
        client = SchemaRegistryClient.from_config(
            {"url": url, "basic.auth.user.info": "alice:s3cret"}
        )
        assert client.get_subjects() == []


def test_https_with_a_ca_file(tmp_path) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    server_ctx = __import__("ssl").create_default_context(
        __import__("ssl").Purpose.CLIENT_AUTH
    )
    cert.configure_cert(server_ctx)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    with serve_registry(ssl_context=server_ctx) as (url, _):
        assert url.startswith("https://")
        with pytest.raises(RegistryConnectionError):
            SchemaRegistryClient(url, max_retries=0).get_subjects()  # unknown CA
        client = SchemaRegistryClient.from_config(
            {"url": url, "ssl.ca.location": str(ca_file)}
        )
        assert client.get_subjects() == []


def test_answers_that_are_not_json() -> None:
    with serve_registry() as (url, _):
        client = SchemaRegistryClient(url)
        client.session.mount("http://", _Canned(200, b"<html>"))
        with pytest.raises(RegistryError, match="not JSON") as info:
            client.get_subjects()
        assert info.value.error_code == 50001
        client.session.mount("http://", _Canned(418, b"teapot"))
        with pytest.raises(RegistryError, match="teapot") as info:
            client.get_subjects()
        assert info.value.error_code == 418


def test_config_is_checked() -> None:
    with pytest.raises(ValueError, match="unknown schema registry config: colour"):
        SchemaRegistryClient.from_config({"url": "http://x", "colour": "red"})
    with pytest.raises(ValueError, match="needs 'url'"):
        SchemaRegistryClient.from_config({})
    with pytest.raises(ValueError, match="user:password"):
        SchemaRegistryClient.from_config(
            {"url": "http://x", "basic.auth.user.info": "alice"}
        )
    with pytest.raises(ValueError, match="http:// or https://"):
        SchemaRegistryClient("ftp://x")


class _Canned(requests.adapters.BaseAdapter):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__()
        self.status, self.body = status, body

    def send(self, request, **kwargs):  # type: ignore[no-untyped-def]
        response = requests.Response()
        response.status_code = self.status
        response._content = self.body
        response.request = request
        return response

    def close(self) -> None:
        pass


def test_against_the_cluster_registry() -> None:
    """The same calls against kproto's real registry (Cluster(schema_registry=True))."""
    from kproto.broker import Cluster

    with Cluster(nodes=1, schema_registry=True) as cluster:
        client = SchemaRegistryClient.from_config(cluster.schema_registry_config())
        assert client.register_schema("users-value", Schema(AVRO)) == 1
        assert client.register_schema("users-value", Schema(AVRO2)) == 2
        found = SchemaRegistryClient(client.urls[0]).lookup_schema(
            "users-value", Schema(AVRO)
        )
        assert (found.schema_id, found.version) == (1, 1)
        assert client.get_version("users-value", 2).schema_id == 2
        assert client.get_subjects() == ["users-value"]
        bad = Schema(AVRO2.replace("]}", ',{"name":"must","type":"int"}]}'))
        verdict = client.test_compatibility("users-value", bad, verbose=True)
        assert not verdict.is_compatible and verdict.messages
        with pytest.raises(RegistryError) as info:
            client.register_schema("users-value", bad)
        assert info.value.error_code == RegistryErrorCode.INCOMPATIBLE_SCHEMA
        assert client.set_compatibility("NONE", "users-value") == "NONE"
        assert client.get_compatibility("users-value") == "NONE"
        assert client.delete_version("users-value", 2) == 2
        assert client.get_versions("users-value") == [1]
        assert client.delete_subject("users-value") == [1]
        assert client.delete_subject("users-value", permanent=True) == [1, 2]
        with pytest.raises(RegistryError) as info:
            client.get_versions("users-value")
        assert info.value.error_code == RegistryErrorCode.SUBJECT_NOT_FOUND
        assert client.set_mode("READONLY") == "READONLY"
        assert client.get_mode() == "READONLY"


def test_caches_are_bounded_and_forget_deleted_subjects() -> None:
    with serve_registry() as (url, state):
        client = SchemaRegistryClient(url, cache_capacity=2)
        for i in range(4):
            client.register_schema(f"s{i}", Schema(AVRO))
        client.register_schema("s3", Schema(AVRO))  # still cached: no request
        assert state.requests.count(("POST", "/subjects/s3/versions")) == 1
        client.register_schema("s0", Schema(AVRO))  # least recently used: dropped
        assert state.requests.count(("POST", "/subjects/s0/versions")) == 2
        client.delete_subject("s3")
        client.register_schema("s3", Schema(AVRO))  # forgotten: asked again
        assert state.requests.count(("POST", "/subjects/s3/versions")) == 2
