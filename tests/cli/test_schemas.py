"""``kproto schemas`` against the in-process registry (``Cluster(schema_registry=
True)``): every action's JSON and table output, what it changed in the registry (seen
through confluent-kafka's client), compatibility with verbose messages and its exit
status, soft and permanent deletes, config and mode, and errors as one line with the
registry's error code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentRegistry

from kproto.broker import Cluster
from kproto.cli import main
from kproto.cli.schemas import render_table, schema_type_for

V1 = {
    "type": "record",
    "name": "User",
    "namespace": "example",
    "fields": [{"name": "id", "type": "long"}],
}
V2 = {
    **V1,
    "fields": [*V1["fields"], {"name": "email", "type": "string", "default": ""}],
}
V2_NO_DEFAULT = {**V1, "fields": [*V1["fields"], {"name": "age", "type": "int"}]}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1, schema_registry=True) as cluster:
        yield cluster


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name, schema in (("v1", V1), ("v2", V2), ("v2bad", V2_NO_DEFAULT)):
        (tmp_path / f"{name}.avsc").write_text(json.dumps(schema))
    (tmp_path / "broken.avsc").write_text(
        '{"type": "record", "name": "X", "fields": 1}'
    )
    (tmp_path / "money.proto").write_text(
        'syntax = "proto3";\npackage ex;\nmessage Money { int64 units = 1; }\n'
    )
    return tmp_path


def schemas(
    capsys: pytest.CaptureFixture[str], cluster: Cluster, *argv: str
) -> tuple[int, str, str]:
    action, *rest = argv
    code = main(
        ["schemas", action, f"--schema-registry={cluster.schema_registry_url}", *rest]
    )
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def ok(capsys: pytest.CaptureFixture[str], cluster: Cluster, *argv: str) -> Any:
    code, out, err = schemas(capsys, cluster, *argv)
    assert (code, err) == (0, ""), (argv, err)
    return out if "--table" in argv or "--schema-only" in argv else json.loads(out)


def test_register_list_get_and_the_registry_agrees(
    cluster: Cluster, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    confluent = ConfluentRegistry({"url": cluster.schema_registry_url})
    assert ok(capsys, cluster, "subjects") == []
    first = ok(capsys, cluster, "register", "users-value", str(files / "v1.avsc"))
    assert first == {"id": confluent.get_latest_version("users-value").schema_id}
    # registering the same schema again gives the same id
    assert (
        ok(capsys, cluster, "register", "users-value", str(files / "v1.avsc")) == first
    )
    second = ok(capsys, cluster, "register", "users-value", str(files / "v2.avsc"))
    assert second["id"] != first["id"]
    money = ok(capsys, cluster, "register", "money-value", str(files / "money.proto"))
    assert confluent.get_schema(money["id"]).schema_type == "PROTOBUF"

    assert ok(capsys, cluster, "subjects") == ["money-value", "users-value"]
    assert ok(capsys, cluster, "subjects", "--prefix=users") == ["users-value"]
    assert (
        ok(capsys, cluster, "subjects", "--table")
        == "SUBJECT\nmoney-value\nusers-value\n"
    )
    assert ok(capsys, cluster, "versions", "users-value") == [1, 2]
    assert ok(capsys, cluster, "versions", "users-value", "--table") == (
        "SUBJECT      VERSION\nusers-value  1\nusers-value  2\n"
    )
    latest = ok(capsys, cluster, "get", "users-value")
    assert {k: latest[k] for k in ("subject", "version", "id", "schemaType")} == {
        "subject": "users-value",
        "version": 2,
        "id": second["id"],
        "schemaType": "AVRO",
    }
    assert json.loads(latest["schema"]) == V2
    assert ok(capsys, cluster, "get", "users-value", "--version=1")["id"] == first["id"]
    by_id = ok(capsys, cluster, "get", f"--id={first['id']}")
    assert "subject" not in by_id and json.loads(by_id["schema"]) == V1
    assert (
        json.loads(ok(capsys, cluster, "get", f"--id={first['id']}", "--schema-only"))
        == V1
    )
    assert ok(capsys, cluster, "get", "users-value", "--table") == (
        f"SUBJECT      VERSION  ID  SCHEMATYPE\nusers-value  2        {second['id']}   AVRO\n"
    )


def test_check_gives_verbose_messages_and_exit_status(
    cluster: Cluster, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok(capsys, cluster, "register", "users-value", str(files / "v1.avsc"))
    assert ok(capsys, cluster, "check", "users-value", str(files / "v2.avsc")) == {
        "is_compatible": True
    }
    code, out, err = schemas(
        capsys, cluster, "check", "users-value", str(files / "v2bad.avsc"), "--verbose"
    )
    assert (code, err) == (1, "")
    body = json.loads(out)
    assert body["is_compatible"] is False
    assert any("READER_FIELD_MISSING_DEFAULT_VALUE" in m for m in body["messages"])
    code, out, _ = schemas(
        capsys,
        cluster,
        "check",
        "users-value",
        str(files / "v2bad.avsc"),
        "--verbose",
        "--version=all",
        "--table",
    )
    assert code == 1
    assert out.startswith("IS_COMPATIBLE  MESSAGE\nfalse          {errorType:")


def test_delete_soft_then_permanent(
    cluster: Cluster, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok(capsys, cluster, "register", "users-value", str(files / "v1.avsc"))
    ok(capsys, cluster, "register", "users-value", str(files / "v2.avsc"))
    assert ok(capsys, cluster, "delete", "users-value", "--version=1") == [1]
    assert ok(capsys, cluster, "versions", "users-value") == [2]
    assert ok(capsys, cluster, "versions", "users-value", "--deleted") == [1, 2]
    code, _, err = schemas(capsys, cluster, "delete", "users-value", "--permanent")
    assert code == 2
    assert err.startswith("kproto: error: schema registry: ")
    assert err.rstrip().endswith("(error_code 40405)") and err.count("\n") == 1
    assert ok(capsys, cluster, "delete", "users-value") == [2]
    assert ok(capsys, cluster, "subjects") == []
    assert ok(capsys, cluster, "subjects", "--deleted-only") == ["users-value"]
    assert ok(capsys, cluster, "delete", "users-value", "--permanent", "--table") == (
        "SUBJECT      VERSION\nusers-value  1\nusers-value  2\n"
    )
    assert ok(capsys, cluster, "subjects", "--deleted") == []


def test_config_and_mode(
    cluster: Cluster, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    confluent = ConfluentRegistry({"url": cluster.schema_registry_url})
    ok(capsys, cluster, "register", "users-value", str(files / "v1.avsc"))
    assert ok(capsys, cluster, "config") == {"compatibilityLevel": "BACKWARD"}
    code, _, err = schemas(capsys, cluster, "config", "users-value")
    assert code == 2 and err.rstrip().endswith("(error_code 40408)")
    assert ok(capsys, cluster, "config", "users-value", "--default-to-global") == {
        "compatibilityLevel": "BACKWARD"
    }
    assert ok(capsys, cluster, "config", "users-value", "--set=none") == {
        "compatibility": "NONE"
    }
    assert confluent.get_compatibility("users-value") == "NONE"
    # now the field without a default registers
    ok(capsys, cluster, "register", "users-value", str(files / "v2bad.avsc"))
    assert ok(capsys, cluster, "config", "users-value", "--table") == (
        "SUBJECT      COMPATIBILITYLEVEL\nusers-value  NONE\n"
    )
    ok(capsys, cluster, "config", "users-value", "--delete")
    assert ok(capsys, cluster, "mode") == {"mode": "READWRITE"}
    assert ok(capsys, cluster, "mode", "users-value", "--set=readonly") == {
        "mode": "READONLY"
    }
    code, _, err = schemas(
        capsys, cluster, "register", "users-value", str(files / "v2.avsc")
    )
    assert code == 2 and err.rstrip().endswith("(error_code 42205)")
    assert ok(capsys, cluster, "mode", "users-value", "--delete") == {
        "mode": "READONLY"
    }
    assert (
        ok(capsys, cluster, "mode", "--table")
        == "SUBJECT   MODE\n(global)  READWRITE\n"
    )


def test_errors_are_one_line(
    cluster: Cluster, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [
        (
            ("get", "nope"),
            "schema registry: Subject 'nope' not found. (error_code 40401)",
        ),
        (
            ("get", "--id=999"),
            "schema registry: Schema 999 not found (error_code 40403)",
        ),
        (("get",), "get: give a SUBJECT or --id N (one of them)"),
        (
            ("register", "s", str(files / "broken.avsc")),
            f"{files / 'broken.avsc'}: schema registry: Invalid schema",
        ),
        (
            ("register", "s", str(files / "missing.avsc")),
            f"{files / 'missing.avsc'}: No such file or directory",
        ),
        (
            ("check", "nope", str(files / "v1.avsc"), "--version=3"),
            f"{files / 'v1.avsc'}: schema registry: Subject 'nope' not found",
        ),
        (("mode", "--delete"), "mode: --delete needs a SUBJECT"),
    ]
    for argv, expected in cases:
        code, out, err = schemas(capsys, cluster, *argv)
        assert (code, out) == (2, ""), argv
        assert err.startswith(f"kproto: error: {expected}"), (argv, err)
        assert err.count("\n") == 1
    # an unreachable registry
    code = main(
        [
            "schemas",
            "subjects",
            "--schema-registry=http://127.0.0.1:9",
            "--registry-timeout-ms=2000",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        "kproto: error: schema registry unreachable: GET http://127.0.0.1:9/subjects: "
        "no answer after 2 tries (connection refused)\n"
    )
    # usage errors through argparse
    with pytest.raises(SystemExit) as exit_info:
        main(["schemas", "subjects"])
    assert exit_info.value.code == 2
    assert (
        "the following arguments are required: --schema-registry"
        in capsys.readouterr().err
    )


def test_basic_auth(
    tmp_path: Path, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Cluster(
        nodes=1,
        schema_registry=True,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanisms=["PLAIN"],
        users={"alice": "secret"},
    ) as cluster:
        code, _, err = schemas(capsys, cluster, "subjects")
        assert code == 2 and err.startswith("kproto: error: schema registry: ")
        assert "(error_code 401" in err
        code, out, err = schemas(
            capsys, cluster, "subjects", "--registry-user=alice:secret"
        )
        assert (code, json.loads(out), err) == (0, [], "")


def test_helpers() -> None:
    assert schema_type_for("a.proto", None) == "PROTOBUF"
    assert schema_type_for("a.JSON", None) == "JSON"
    assert schema_type_for("a.avsc", None) == "AVRO"
    assert schema_type_for("schema.txt", None) == "AVRO"
    assert schema_type_for("a.proto", "JSON") == "JSON"
    assert render_table([{"a": None, "b": [1]}, {"a": True, "b": "x"}], ["a", "b"]) == (
        "A     B\n      [1]\ntrue  x"
    )


def test_tls_with_the_clusters_ca(capsys: pytest.CaptureFixture[str]) -> None:
    with Cluster(nodes=1, schema_registry=True, security_protocol="SSL") as cluster:
        assert cluster.schema_registry_url.startswith("https://")
        code, _, err = schemas(capsys, cluster, "subjects")
        assert code == 2
        assert err == (
            f"kproto: error: schema registry unreachable: GET "
            f"{cluster.schema_registry_url}/subjects: no answer after 2 tries "
            "(TLS: certificate verify failed (see --registry-ca))\n"
        )
        ca = cluster.schema_registry_config()["ssl.ca.location"]
        assert ok(capsys, cluster, "subjects", f"--registry-ca={ca}") == []
