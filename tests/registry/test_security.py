"""The registry follows the cluster's security: Basic auth for SASL, HTTPS for TLS."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from confluent_kafka.schema_registry import (
    Schema,
    SchemaRegistryClient,
    SchemaRegistryError,
)

from kproto.broker import Cluster

PASSWORD = "s3cret-pw"


@pytest.fixture(scope="module")
def sasl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(
        data_dir=tmp_path_factory.mktemp("sasl"),
        security_protocol="SASL_PLAINTEXT",
        users={"alice": PASSWORD},
        schema_registry=True,
    ) as cluster:
        yield cluster


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        basic("alice", "wrong"),
        basic("mallory", PASSWORD),
        {"Authorization": "Bearer abc"},
        {"Authorization": "Basic !!!notbase64"},
        {"Authorization": "Basic " + base64.b64encode(b"no-colon").decode()},
    ],
)
def test_unauthenticated_requests_get_401(
    sasl_cluster: Cluster, headers: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        response = requests.get(
            f"{sasl_cluster.schema_registry_url}/subjects", headers=headers, timeout=10
        )
    assert response.status_code == 401
    assert response.json()["error_code"] == 401
    assert response.headers["WWW-Authenticate"].startswith("Basic realm=")
    assert PASSWORD not in caplog.text and "wrong" not in caplog.text


def test_basic_auth_with_confluent_client(sasl_cluster: Cluster) -> None:
    config = sasl_cluster.schema_registry_config("alice")
    assert config["basic.auth.user.info"] == f"alice:{PASSWORD}"
    client = SchemaRegistryClient(config)
    schema_id = client.register_schema("auth-value", Schema('"string"', "AVRO"))
    assert client.get_schema(schema_id).schema_str == '"string"'
    anonymous = SchemaRegistryClient({"url": sasl_cluster.schema_registry_url})
    with pytest.raises(SchemaRegistryError) as err:
        anonymous.get_subjects()
    assert err.value.http_status_code == 401
    with pytest.raises(ValueError, match="user="):
        sasl_cluster.schema_registry_config()


def test_https_with_the_cluster_ca(tmp_path: Path) -> None:
    with Cluster(
        data_dir=tmp_path, security_protocol="SSL", schema_registry=True
    ) as cluster:
        url = cluster.schema_registry_url
        assert url.startswith("https://127.0.0.1:")
        config = cluster.schema_registry_config()
        assert config["ssl.ca.location"] == str(cluster.ca_file)
        client = SchemaRegistryClient(config)
        schema_id = client.register_schema("tls-value", Schema('"long"', "AVRO"))
        assert client.get_latest_version("tls-value").schema_id == schema_id
        # without the CA the certificate is refused; plain HTTP gets no answer
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(f"{url}/subjects", timeout=10)
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(url.replace("https", "http") + "/subjects", timeout=10)
        assert requests.get(
            f"{url}/subjects", verify=str(cluster.ca_file), timeout=10
        ).json() == ["tls-value"]
