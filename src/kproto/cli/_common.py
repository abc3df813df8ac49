"""What the ``kproto`` subcommands share: the usage error and its one-line rendering,
input reading, and the client arguments and error mapping of the network commands."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from kproto.client import BrokerError, Client, ClientError
from kproto.connection import KafkaConnectionError

__all__ = [
    "CliError",
    "add_client_arguments",
    "client_for",
    "error_line",
    "name_values",
    "positive_int",
    "read_input",
]


class CliError(Exception):
    """A usage or input problem: printed as ``kproto: error: ...``, exit status 2."""


def error_line(exc: BaseException) -> str:
    """What goes after ``kproto: error:`` for an error the user caused: an
    :class:`OSError` as ``FILE: reason`` (``reason`` alone when it names no file),
    anything else as its message.

    >>> error_line(FileNotFoundError(2, "No such file or directory", "x.log"))
    'x.log: No such file or directory'
    """
    if isinstance(exc, OSError) and exc.strerror:
        if exc.filename is not None:
            return f"{exc.filename}: {exc.strerror}"
        return exc.strerror
    return str(exc) or type(exc).__name__


def read_input(name: str) -> bytes:
    """The bytes of file ``name`` (``-``: standard input).

    Raises:
        CliError: the file cannot be read.
    """
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {name}: {exc.strerror or exc}") from None


def name_values(values: list[str], option: str) -> list[tuple[str, str]]:
    """``NAME=VALUE`` arguments of ``option`` (``--property``, ``--config``,
    ``--header``) as ``(name, value)`` pairs in their order; the value is taken as
    given (Kafka's tools do not unescape it) and may hold ``=``.

    Raises:
        CliError: an argument without ``=`` or without a name (naming ``option``
            and the argument).
    """
    out = []
    for text in values:
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise CliError(f"{option} {text!r}: expected name=value")
        out.append((name, value))
    return out


# --------------------------------------------------------------------------- clients

#: What the network commands' ``--bootstrap-server`` stands for.
BOOTSTRAP_HELP = (
    "host:port[,host:port...] of the brokers to connect to (required, as for "
    "Kafka's tools)"
)


def add_client_arguments(parser: argparse.ArgumentParser) -> None:
    """``--bootstrap-server`` (required, as Kafka's tools) and
    ``--request-timeout-ms`` (each connect and request; default 30000)."""
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help=BOOTSTRAP_HELP
    )
    parser.add_argument(
        "--request-timeout-ms",
        type=positive_int,
        default=30_000,
        metavar="MS",
        help="bound on each connect and request (default 30000)",
    )


def positive_int(text: str) -> int:
    """An argparse type: an integer > 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


@contextlib.contextmanager
def client_for(
    args: argparse.Namespace, *, allow_auto_topic_creation: bool = False
) -> Iterator[Client]:
    """A :class:`kproto.client.Client` for the parsed client arguments, closed on
    exit; a broker error, a connection failure or a client-side refusal becomes a
    :class:`CliError` (one ``kproto: error:`` line). Only a producer lets its
    Metadata requests create a missing topic (as Kafka's producer does)."""
    try:
        client = Client(
            args.bootstrap_server,
            client_id="kproto-cli",
            timeout_s=args.request_timeout_ms / 1000,
            allow_auto_topic_creation=allow_auto_topic_creation,
        )
    except ClientError as exc:
        raise CliError(f"--bootstrap-server: {exc}") from None
    try:
        yield client
    except BrokerError as exc:
        raise CliError(str(exc)) from None
    except KafkaConnectionError as exc:
        raise CliError(f"{args.bootstrap_server}: {exc}") from None
    except ClientError as exc:
        raise CliError(str(exc)) from None
    finally:
        client.close()
