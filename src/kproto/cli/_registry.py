"""The Schema Registry side of the CLI: ``--schema-registry URL`` and its Basic auth,
TLS and timeout options, the :class:`~kproto.registry.client.SchemaRegistryClient` they
make, and registry errors as one ``kproto: error:`` line (``schema registry: <message>
(error_code N)``; ``schema registry unreachable: <request>: ... (<why>)``).

:mod:`kproto.registry.client` (and ``requests``) are imported only when a registry is
used, so a plain install (no ``kproto[serde]``) runs every other command.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kproto.cli._common import CliError, positive_int

if TYPE_CHECKING:
    from kproto.registry.client import SchemaRegistryClient

__all__ = [
    "add_registry_arguments",
    "one_line",
    "registry_client",
    "registry_error_text",
    "registry_errors",
]


def add_registry_arguments(parser: argparse.ArgumentParser, required: bool) -> None:
    """``--schema-registry URL`` and its Basic auth, TLS and timeout options
    (confluent-kafka's ``basic.auth.user.info``, ``ssl.ca.location``,
    ``ssl.certificate.location``, ``ssl.key.location``, ``timeout``)."""
    group = parser.add_argument_group("schema registry")
    group.add_argument(
        "--schema-registry",
        required=required,
        metavar="URL",
        help="the Schema Registry's URL (http:// or https://; a comma-separated list "
        "is tried in order)",
    )
    group.add_argument(
        "--registry-user",
        metavar="USER:PASSWORD",
        help="HTTP Basic auth (basic.auth.user.info)",
    )
    for flag, what in (
        ("--registry-ca", "CA bundle (PEM)"),
        (
            "--registry-cert",
            "client certificate (PEM; with its key unless --registry-key)",
        ),
        ("--registry-key", "client key (PEM)"),
    ):
        group.add_argument(flag, metavar="FILE", help=what)
    group.add_argument(
        "--registry-timeout-ms",
        type=positive_int,
        default=10_000,
        metavar="MS",
        help="bound on each registry request (default 10000)",
    )


def registry_client(args: argparse.Namespace) -> SchemaRegistryClient:
    """A :class:`~kproto.registry.client.SchemaRegistryClient` for the parsed
    registry arguments (one retry after 200 ms: an unreachable registry fails in
    about two timeouts).

    Raises:
        CliError: no ``--schema-registry``, a bad URL or ``--registry-user``, or
            ``kproto[serde]`` not installed.
    """
    if not args.schema_registry:
        raise CliError("--schema-registry URL is needed for this format")
    try:
        from kproto.registry.client import SchemaRegistryClient
    except ImportError as exc:
        raise CliError(
            f"the schema registry needs kproto[serde] (pip install 'kproto[serde]'): {exc}"
        ) from None
    auth = None
    if args.registry_user is not None:
        user, sep, password = args.registry_user.partition(":")
        if not sep:
            raise CliError("--registry-user: expected USER:PASSWORD")
        auth = (user, password)
    cert: str | tuple[str, str] | None = args.registry_cert
    if args.registry_cert is not None and args.registry_key is not None:
        cert = (str(args.registry_cert), str(args.registry_key))
    try:
        return SchemaRegistryClient(
            args.schema_registry,
            basic_auth=auth,
            ca_file=args.registry_ca,
            client_cert=cert,
            timeout_s=args.registry_timeout_ms / 1000,
            max_retries=1,
            retries_wait_ms=200,
            retries_max_wait_ms=200,
        )
    except ValueError as exc:
        raise CliError(f"--schema-registry: {exc}") from None


def registry_error_text(exc: BaseException) -> str | None:
    """The one-line text of a registry error (``schema registry: <message>
    (error_code N)``; unreachable: ``schema registry unreachable: ...``), or None
    when ``exc`` is no registry error."""
    from kproto.registry.client import RegistryConnectionError
    from kproto.registry.errors import RegistryError

    if isinstance(exc, RegistryConnectionError):
        text = exc.message
        cut = text.find(" tries: ")
        if cut >= 0:  # requests' long reason: its gist
            reason = "no connection"
            if "Connection refused" in text:
                reason = "connection refused"
            elif "CERTIFICATE_VERIFY_FAILED" in text:
                reason = "TLS: certificate verify failed (see --registry-ca)"
            elif "SSL" in text:
                reason = "TLS handshake failed"
            elif "timed out" in text.lower():
                reason = "timed out"
            text = f"{text[: cut + 6]} ({reason})"
        return f"schema registry unreachable: {text}"
    if isinstance(exc, RegistryError):
        return f"schema registry: {one_line(str(exc))}"
    return None


def one_line(text: str) -> str:
    """``text`` on one line (a tool's multi-line message joined with `` | ``;
    protoc's WARNING/log lines dropped)."""
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.startswith(("WARNING:", "W0000", "I0000"))
    ]
    return " | ".join(lines)


@contextlib.contextmanager
def registry_errors() -> Iterator[None]:
    """Turn a registry's error, or a serializer's error caused by one, into a
    :class:`CliError`."""
    try:
        yield
    except CliError:
        raise
    except Exception as exc:
        text = registry_error_text(exc)
        if text is None and exc.__cause__ is not None:
            text = registry_error_text(exc.__cause__)
        if text is None:
            raise
        raise CliError(text) from None
