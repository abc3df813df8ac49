"""``kproto broker``: run an in-process cluster in the foreground until Ctrl-C.

kproto broker [--nodes N] [--port P] [--data-dir DIR] [--partitions N] [--log-requests]
              [--security-protocol P] [--sasl-mechanism M]... [--user NAME:PASSWORD]...
              [--super-user NAME]... [--acls] [--as-version RELEASE]
              [--override KEY=VALUE]...

``--override`` sets a Kafka broker property as ``kafka-server-start.sh --override``
does (``node.id=0``, ``log.retention.ms=60000``; see
:mod:`kproto.broker.broker_config`); an unknown key or a value out of range fails
with one line naming it.

What a user can get wrong fails with one ``kproto: error:`` line before the cluster
starts: numbers out of range (argument validation), a ``--data-dir`` that is not a
writable directory, a port in use, a ``kproto-topics.json`` that does not parse.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import re
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from kproto.cli._common import CliError, positive_int

#: The client quota keys of ``--quota`` (:mod:`kproto.broker.quotas`).
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage")

__all__ = ["add_parsers", "run_broker"]


def _port(text: str) -> int:
    """A TCP port number, 0-65535 (0: any free port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def _user(text: str) -> tuple[str, str]:
    """``NAME:PASSWORD`` (the password may contain ``:``)."""
    name, sep, password = text.partition(":")
    if not sep or not name or not password:
        raise argparse.ArgumentTypeError(f"--user wants NAME:PASSWORD, got {name!r}...")
    return name, password


def _quota(text: str) -> tuple[str, float]:
    """``KEY=VALUE`` of a client quota (see :mod:`kproto.broker.quotas`)."""
    key, _, value = text.partition("=")
    if key not in QUOTA_KEYS:
        raise argparse.ArgumentTypeError(
            f"key {key!r} is not one of {', '.join(QUOTA_KEYS)}"
        )
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0:
        raise argparse.ArgumentTypeError(f"{key} wants a number above 0, got {value!r}")
    return key, number


def _override(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of a broker property (the value may contain ``=``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"wants KEY=VALUE, got {text!r}")
    return key.strip(), value


def add_parsers(sub: Any) -> None:
    """Add the ``broker`` subcommand to the ``kproto`` parser's subparsers."""
    p = sub.add_parser(
        "broker",
        help="run a kproto broker cluster on 127.0.0.1 in the foreground",
        description="Run N broker nodes on 127.0.0.1 until Ctrl-C (SIGINT) or SIGTERM; "
        "prints the bootstrap servers on stdout once listening.",
    )
    p.add_argument(
        "--nodes", type=positive_int, default=1, help="number of nodes (default 1)"
    )
    p.add_argument(
        "--port",
        type=_port,
        default=0,
        help="first node's port (default: any free); node i gets P+i",
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="log directory, created if missing (default: a temporary one, removed "
        "on exit)",
    )
    p.add_argument(
        "--partitions",
        type=positive_int,
        default=None,
        help="partitions of auto-created topics (default 1; num.partitions)",
    )
    p.add_argument(
        "--no-auto-create",
        action="store_true",
        help="do not create unknown topics on Metadata",
    )
    p.add_argument(
        "--log-requests", action="store_true", help="log every request on stderr"
    )
    p.add_argument(
        "--security-protocol",
        choices=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
        default=None,
        help="the listeners' security.protocol (default PLAINTEXT); SSL makes its "
        "own CA (its file is printed on stderr as ssl.ca.location=...)",
    )
    p.add_argument(
        "--sasl-mechanism",
        action="append",
        choices=["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"],
        help="an enabled SASL mechanism (repeatable; default PLAIN and SCRAM-SHA-*)",
    )
    p.add_argument(
        "--user",
        action="append",
        type=_user,
        default=[],
        metavar="NAME:PASSWORD",
        help="a SASL user (repeatable; visible to ps: for tests only)",
    )
    p.add_argument(
        "--super-user", action="append", default=[], help="a super user (repeatable)"
    )
    p.add_argument("--acls", action="store_true", help="enforce ACLs")
    p.add_argument(
        "--quota",
        action="append",
        type=_quota,
        default=[],
        metavar="KEY=VALUE",
        help="a default client quota per (user, client id): producer_byte_rate, "
        "consumer_byte_rate (bytes/s) or request_percentage (repeatable)",
    )
    p.add_argument(
        "--max-connections-per-ip",
        type=positive_int,
        default=None,
        help="connections one address may hold (default unlimited)",
    )
    p.add_argument(
        "--max-connections",
        type=positive_int,
        default=None,
        help="connections each node may hold (default unlimited)",
    )
    p.add_argument(
        "--schema-registry",
        action="store_true",
        help="also serve Confluent Schema Registry's REST API (needs kproto[registry]);"
        " its URL is printed on stdout after the bootstrap servers",
    )
    p.add_argument(
        "--schema-registry-port",
        type=_port,
        default=0,
        help="the schema registry's port (default: any free)",
    )
    p.add_argument(
        "--as-version",
        metavar="RELEASE",
        default=None,
        help="advertise and serve the API versions this Kafka release did, e.g. 3.7 "
        "(KRaft) or 3.7-zk (as franz-go kfake --as-version; kproto.emulate.version)",
    )
    p.add_argument(
        "--override",
        action="append",
        type=_override,
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka broker property, e.g. node.id=0 (repeatable; as "
        "kafka-server-start.sh --override)",
    )
    p.set_defaults(func=run_broker)


def check_data_dir(path: Path) -> None:
    """Make sure ``path`` is a directory the broker can write, creating it if missing.

    Raises:
        CliError: it is not a directory, cannot be created, or cannot be written.
    """
    if path.exists() and not path.is_dir():
        raise CliError(f"--data-dir {path} is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"--data-dir {path}: cannot create it: {exc.strerror}") from exc
    try:
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise CliError(
            f"--data-dir {path}: cannot write there: {exc.strerror}"
        ) from exc


def _listen_error(exc: OSError, args: argparse.Namespace) -> CliError:
    """``cannot listen on 127.0.0.1:P: address already in use`` from asyncio's
    ``error while attempting to bind on address ('127.0.0.1', P): ...``."""
    text = exc.strerror or str(exc)
    m = re.search(r"\('([^']*)', (\d+)\)\S*: (.*)", text)
    where, reason = (f"{m.group(1)}:{m.group(2)}", m.group(3)) if m else ("", text)
    if exc.errno == errno.EADDRINUSE and args.port:
        reason += " (choose another --port, or 0 for any free one)"
    return CliError(f"cannot listen on {where or '127.0.0.1'}: {reason}")


def broker_properties(args: argparse.Namespace) -> dict[str, str]:
    """The broker properties of the command line: ``--override``'s, and those
    the other flags set (``--partitions`` is ``num.partitions``, ``--acls``
    ``authorizer.class.name``, ...); ``kproto.request.log.size`` 0 unless given
    (nobody reads the request log of a CLI broker: memory stays flat).

    Raises:
        CliError: a flag and an ``--override`` set the same property.
    """
    from kproto.broker.broker_config import STANDARD_AUTHORIZER

    def joined(values: list[str] | None, sep: str) -> str | None:
        return sep.join(values) if values else None

    def number(value: int | None) -> str | None:
        return None if value is None else str(value)

    flags = {
        "--partitions": ("num.partitions", number(args.partitions)),
        "--no-auto-create": (
            "auto.create.topics.enable",
            "false" if args.no_auto_create else None,
        ),
        "--log-requests": (
            "kproto.log.requests",
            "true" if args.log_requests else None,
        ),
        "--security-protocol": (
            "security.inter.broker.protocol",
            args.security_protocol,
        ),
        "--sasl-mechanism": (
            "sasl.enabled.mechanisms",
            joined(args.sasl_mechanism, ","),
        ),
        "--super-user": ("super.users", joined(args.super_user, ";")),
        "--acls": ("authorizer.class.name", STANDARD_AUTHORIZER if args.acls else None),
        "--as-version": ("kproto.emulate.version", args.as_version),
        "--max-connections": ("max.connections", number(args.max_connections)),
        "--max-connections-per-ip": (
            "max.connections.per.ip",
            number(args.max_connections_per_ip),
        ),
    }
    properties = dict(args.override)
    if args.data_dir is not None and "log.dirs" in properties:
        raise CliError("--data-dir and --override log.dirs both set the data directory")
    for flag, (name, value) in flags.items():
        if value is None:
            continue
        if name in properties:
            raise CliError(f"{flag} and --override {name} both set {name}")
        properties[name] = value
    properties.setdefault("kproto.request.log.size", "0")
    return properties


def run_broker(args: argparse.Namespace) -> int:
    """Run the cluster until SIGINT/SIGTERM; return 0 after a clean stop.

    Raises:
        CliError: the ports, the data directory or its state file are unusable
            (nothing keeps running then).
    """
    from kproto.broker.cluster import Cluster
    from kproto.broker.dispatch import warm_codecs
    from kproto.broker.quotas import QuotaDefaults
    from kproto.broker.state import CorruptStateError

    last = args.port + args.nodes - 1
    if args.port and last > 65535:
        raise CliError(
            f"--port {args.port} with --nodes {args.nodes} needs ports up to {last}, "
            "above 65535"
        )
    properties = broker_properties(args)
    if args.data_dir is not None:
        check_data_dir(args.data_dir)
    elif properties.get("log.dirs", "").strip():
        check_data_dir(Path(properties["log.dirs"].split(",")[0].strip()))
    log_requests = properties.get("kproto.log.requests", "").strip().lower() == "true"
    logging.basicConfig(
        level=logging.INFO if log_requests else logging.WARNING, stream=sys.stderr
    )

    async def main() -> None:
        warm_codecs()  # before the clients come, as a broker loads its code
        try:
            cluster = Cluster(
                nodes=args.nodes,
                data_dir=args.data_dir,
                config=properties,
                port=args.port,
                users=dict(args.user),
                default_quotas=QuotaDefaults(**dict(args.quota)),
                schema_registry=args.schema_registry,
                schema_registry_port=args.schema_registry_port,
            )
        except (ValueError, RuntimeError) as exc:  # security settings, trustme
            raise CliError(str(exc)) from exc
        try:
            await cluster.start()
        except CorruptStateError as exc:
            raise CliError(str(exc)) from exc
        except OSError as exc:
            if exc.filename is not None:  # a file of the data dir: said as is
                raise
            raise _listen_error(exc, args) from exc
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        try:
            print(cluster.bootstrap_servers, flush=True)
            if cluster.schema_registry is not None:
                print(cluster.schema_registry_url, flush=True)
            if cluster.ca_file is not None:
                print(f"ssl.ca.location={cluster.ca_file}", file=sys.stderr, flush=True)
            await stop.wait()
        finally:
            await cluster.stop()

    asyncio.run(main())
    return 0
