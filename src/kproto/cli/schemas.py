"""``kproto schemas``: Schema Registry operations on
:class:`kproto.registry.client.SchemaRegistryClient` (REST API v1).

::

    kproto schemas subjects [--prefix P] [--deleted | --deleted-only]
    kproto schemas versions SUBJECT [--deleted]
    kproto schemas get (SUBJECT [--version V] | --id N) [--schema-only]
    kproto schemas register SUBJECT FILE [--schema-type T] [--reference NAME=SUBJECT:VERSION]
                                         [--normalize]
    kproto schemas check SUBJECT FILE [--version V|all] [--verbose]
    kproto schemas delete SUBJECT [--version V] [--permanent]
    kproto schemas config [SUBJECT] [--set LEVEL | --delete]
    kproto schemas mode [SUBJECT] [--set MODE [--force] | --delete]

each with ``--schema-registry URL`` (and Basic auth / TLS options). Output is JSON (the
registry's field names), or with ``--table`` an aligned table. A registry error is one
``kproto: error: schema registry: <message> (error_code N)`` line (exit status 2);
``check`` exits 1 when the schema is not compatible.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import IO, Any

from kproto.cli._common import CliError
from kproto.cli._formats import read_schema_file
from kproto.cli._registry import (
    add_registry_arguments,
    registry_client,
    registry_errors,
)

__all__ = ["add_arguments", "cmd_schemas", "render_table", "schema_type_for"]

_TYPES_BY_SUFFIX = {
    ".avsc": "AVRO",
    ".avro": "AVRO",
    ".proto": "PROTOBUF",
    ".json": "JSON",
}
_LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
_MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")


def schema_type_for(path: str, given: str | None) -> str:
    """The schema type of a file: ``given``, else by its suffix (``.avsc`` AVRO,
    ``.proto`` PROTOBUF, ``.json`` JSON), else AVRO (the registry's default)."""
    if given is not None:
        return given
    for suffix, schema_type in _TYPES_BY_SUFFIX.items():
        if path.lower().endswith(suffix):
            return schema_type
    return "AVRO"


def _version(text: str) -> int | str:
    if text == "latest":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a version number or latest, got {text!r}"
        ) from None
    if value < 1 and value != -1:
        raise argparse.ArgumentTypeError(f"versions start at 1, got {value}")
    return value


def _reference(text: str) -> tuple[str, str, int]:
    name, sep, rest = text.partition("=")
    subject, sep2, version = rest.rpartition(":")
    if not (sep and sep2 and name and subject and version.isdigit()):
        raise argparse.ArgumentTypeError(f"expected NAME=SUBJECT:VERSION, got {text!r}")
    return name, subject, int(version)


# --------------------------------------------------------------------------- output


def render_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """``rows`` as an aligned text table with a header line (values as text, JSON
    for lists and objects, empty for null).

    >>> print(render_table([{"subject": "a", "version": 1}], ["subject", "version"]))
    SUBJECT  VERSION
    a        1
    """

    def cell(value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, list | dict):
            return json.dumps(value, separators=(",", ":"))
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    header = [c.upper() for c in columns]
    body = [[cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(columns))]
    lines = []
    for r in [header, *body]:
        lines.append(
            "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
        )
    return "\n".join(lines)


def _emit(
    out: IO[str],
    table: bool,
    result: Any,
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
) -> None:
    if table:
        print(render_table(rows, columns), file=out)
    else:
        print(json.dumps(result, indent=2, ensure_ascii=False), file=out)


def _registered_json(registered: Any) -> dict[str, Any]:
    schema = registered.schema
    out: dict[str, Any] = {}
    if registered.subject is not None:
        out["subject"] = registered.subject
    if registered.version is not None:
        out["version"] = registered.version
    out["id"] = registered.schema_id
    if registered.guid is not None:
        out["guid"] = registered.guid
    out["schemaType"] = schema.schema_type
    out["references"] = [r.to_json() for r in schema.references]
    out["schema"] = schema.schema_str
    return out


# --------------------------------------------------------------------------- commands


def cmd_schemas(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    """``kproto schemas ACTION``: see the module doc. Returns 0, or 1 for an
    incompatible ``check``."""
    out = out or sys.stdout
    client = registry_client(args)
    try:
        with registry_errors():
            return int(_ACTIONS[args.action](client, args, out))
    finally:
        client.close()


def _subjects(client: Any, args: argparse.Namespace, out: IO[str]) -> int:
    subjects = client.get_subjects(
        prefix=args.prefix, deleted=args.deleted, deleted_only=args.deleted_only
    )
    _emit(out, args.table, subjects, [{"subject": s} for s in subjects], ["subject"])
    return 0


def _versions(client: Any, args: argparse.Namespace, out: IO[str]) -> int:
    versions = client.get_versions(args.subject, deleted=args.deleted)
    rows = [{"subject": args.subject, "version": v} for v in versions]
    _emit(out, args.table, versions, rows, ["subject", "version"])
    return 0


def _get(client: Any, args: argparse.Namespace, out: IO[str]) -> int:
    if (args.subject is None) == (args.id is None):
        raise CliError("get: give a SUBJECT or --id N (one of them)")
    if args.id is not None:
        if args.version is not None:
            raise CliError("get: --version goes with a SUBJECT, not --id")
        from kproto.registry.client import RegisteredSchema

        registered = RegisteredSchema(args.id, client.get_schema(args.id))
    else:
        registered = client.get_version(
            args.subject, args.version if args.version is not None else "latest"
        )
    if args.schema_only:
        print(registered.schema.schema_str, file=out)
        return 0
    body = _registered_json(registered)
    columns = [c for c in ("subject", "version", "id", "schemaType") if c in body]
    _emit(out, args.table, body, [body], columns)
    return 0


def _schema_from(args: argparse.Namespace) -> Any:
    from kproto.registry.client import Schema, SchemaReference

    text = read_schema_file(args.file)
    references = [
        SchemaReference(name, subject, version)
        for name, subject, version in args.reference
    ]
    return Schema(text, schema_type_for(args.file, args.schema_type), references)


def _in_file(args: argparse.Namespace, exc: CliError) -> CliError:
    return CliError(f"{args.file}: {exc}")


def _register(client: Any, args: argparse.Namespace, out: IO[str]) -> int:
    schema = _schema_from(args)
    try:
        with registry_errors():
            registered = client.register_schema_full_response(
                args.subject, schema, normalize=args.normalize
            )
    except CliError as exc:
        raise _in_file(args, exc) from None
    body = {"id": registered.schema_id}
    if registered.version is not None:
        body = {"subject": args.subject, "version": registered.version, **body}
    _emit(out, args.table, body, [body], list(body))
    return 0


def _check(client: Any, args: argparse.Namespace, out: IO[str]) -> int:
    schema = _schema_from(args)
    version = None if args.version == "all" else args.version
    try:
        with registry_errors():
            result = client.test_compatibility(
                args.subject, schema, version=version, verbose=args.verbose
            )
    except CliError as exc:
        raise _in_file(args, exc) from None
    body: dict[str, Any] = {"is_compatible": result.is_compatible}
    if args.verbose:
        body["messages"] = list(result.messages)
    rows = [{"is_compatible": result.is_compatible, "message": None}]
    if args.verbose and result.messages:
        rows = [
            {"is_compatible": result.is_compatible if i == 0 else None, "message": m}
            for i, m in enumerate(result.messages)
        ]
    columns = ["is_compatible", "message"] if args.verbose else ["is_compatible"]
    _emit(out, args.table, body, rows, columns)
    return 0 if result.is_compatible else 1


def _delete(client: Any, args: argparse.Namespace, out: IO[str]) -> int:
    if args.version is not None:
        deleted = [client.delete_version(args.subject, args.version, args.permanent)]
    else:
        deleted = client.delete_subject(args.subject, permanent=args.permanent)
    rows = [{"subject": args.subject, "version": v} for v in deleted]
    _emit(out, args.table, deleted, rows, ["subject", "version"])
    return 0


def _config(client: Any, args: argparse.Namespace, out: IO[str]) -> int:
    if args.set is not None and args.delete:
        raise CliError("config: --set and --delete are exclusive")
    if args.set is not None:
        body = client.set_config(args.subject, compatibility=args.set)
    elif args.delete:
        body = client.delete_config(args.subject)
    else:
        body = client.get_config(args.subject, default_to_global=args.default_to_global)
    rows = [{"subject": args.subject or "(global)", **body}]
    _emit(out, args.table, body, rows, ["subject", *body])
    return 0


def _mode(client: Any, args: argparse.Namespace, out: IO[str]) -> int:
    if args.set is not None and args.delete:
        raise CliError("mode: --set and --delete are exclusive")
    if args.force and args.set is None:
        raise CliError("mode: --force goes with --set")
    if args.set is not None:
        mode = client.set_mode(args.set, args.subject, force=args.force)
    elif args.delete:
        if args.subject is None:
            raise CliError("mode: --delete needs a SUBJECT (the global mode stays)")
        mode = client.delete_mode(args.subject)
    else:
        mode = client.get_mode(args.subject)
    body = {"mode": mode}
    rows = [{"subject": args.subject or "(global)", **body}]
    _emit(out, args.table, body, rows, ["subject", "mode"])
    return 0


_ACTIONS = {
    "subjects": _subjects,
    "versions": _versions,
    "get": _get,
    "register": _register,
    "check": _check,
    "delete": _delete,
    "config": _config,
    "mode": _mode,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``kproto schemas``' actions and their arguments."""
    actions = parser.add_subparsers(dest="action", required=True)

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(
            name, help=help_text, description=help_text
        )
        add_registry_arguments(parser, required=True)
        parser.add_argument(
            "--table", action="store_true", help="an aligned table instead of JSON"
        )
        parser.set_defaults(func=cmd_schemas)
        return parser

    p = action("subjects", "list the subjects (GET /subjects)")
    p.add_argument("--prefix", default=None, help="only subjects starting with it")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--deleted", action="store_true", help="soft-deleted ones too")
    shown.add_argument(
        "--deleted-only", action="store_true", help="only soft-deleted ones"
    )

    p = action("versions", "list a subject's versions (GET /subjects/S/versions)")
    p.add_argument("subject", metavar="SUBJECT")
    p.add_argument("--deleted", action="store_true", help="soft-deleted ones too")

    p = action(
        "get",
        "a subject's version (default latest) or a schema by id "
        "(GET /subjects/S/versions/V, GET /schemas/ids/N)",
    )
    p.add_argument("subject", metavar="SUBJECT", nargs="?", default=None)
    p.add_argument("--version", type=_version, default=None, help="N or latest")
    p.add_argument("--id", type=int, default=None, metavar="N", help="a schema id")
    p.add_argument(
        "--schema-only", action="store_true", help="print the schema text only"
    )

    for name, help_text in (
        (
            "register",
            "register a schema file under a subject (POST /subjects/S/versions)",
        ),
        (
            "check",
            "test a schema file's compatibility with a subject "
            "(POST /compatibility/subjects/S/versions/V); exit 1 when incompatible",
        ),
    ):
        p = action(name, help_text)
        p.add_argument("subject", metavar="SUBJECT")
        p.add_argument("file", metavar="FILE", help=".avsc, .proto or JSON Schema")
        p.add_argument(
            "--schema-type",
            choices=("AVRO", "PROTOBUF", "JSON"),
            type=str.upper,
            default=None,
            help="default by the file's suffix (.avsc, .proto, .json), else AVRO",
        )
        p.add_argument(
            "--reference",
            type=_reference,
            action="append",
            default=[],
            metavar="NAME=SUBJECT:VERSION",
            help="a referenced schema (repeatable)",
        )
        if name == "register":
            p.add_argument(
                "--normalize", action="store_true", help="normalize the schema first"
            )
        else:
            p.add_argument(
                "--version",
                type=lambda t: t if t == "all" else _version(t),
                default="latest",
                help="N, latest (default) or all (every version the subject's "
                "compatibility level checks)",
            )
            p.add_argument(
                "--verbose",
                action="store_true",
                help="the registry's reasons when incompatible",
            )

    p = action(
        "delete",
        "soft-delete a subject or one version; --permanent after a soft delete "
        "(DELETE /subjects/S[/versions/V])",
    )
    p.add_argument("subject", metavar="SUBJECT")
    p.add_argument("--version", type=_version, default=None, help="N or latest")
    p.add_argument("--permanent", action="store_true", help="hard delete")

    def setting(
        name: str, what: str, choices: Sequence[str]
    ) -> argparse.ArgumentParser:
        """``config`` or ``mode``: the global or a subject's ``what``, or set or
        delete it."""
        p = action(
            name,
            f"the global or a subject's {what}; --set or --delete it "
            f"(GET/PUT/DELETE /{name}[/S])",
        )
        p.add_argument("subject", metavar="SUBJECT", nargs="?", default=None)
        p.add_argument("--set", type=str.upper, choices=choices, default=None)
        p.add_argument("--delete", action="store_true")
        return p

    setting("config", "compatibility level", _LEVELS).add_argument(
        "--default-to-global",
        action="store_true",
        help="a subject without its own level: the global one",
    )
    setting("mode", "mode", _MODES).add_argument(
        "--force", action="store_true", help="IMPORT over existing schemas"
    )
