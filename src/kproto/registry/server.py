"""The registry's HTTP server on the broker's event loop.

:class:`RegistryServer` rebuilds the registry from ``_schemas`` and serves
:func:`kproto.registry.app.build_app` with aiohttp's ``AppRunner`` and ``TCPSite``
on 127.0.0.1, over TLS when the cluster's listeners use it (the same
``ssl_context``), with Basic authentication when they use SASL. The access log
is off (it would name users); the server never handles signals (the cluster's
owner does).
"""

from __future__ import annotations

import logging
import time

import attrs
from aiohttp import web

from kproto.broker.security import ListenerSecurity
from kproto.broker.state import ClusterState
from kproto.registry.app import build_app
from kproto.registry.registry import SchemaRegistry
from kproto.registry.rest import DEFAULT_MAX_REQUEST_BYTES
from kproto.registry.schemas_topic import SchemasTopic
from kproto.registry.security import BasicAuth

__all__ = ["RegistryServer"]

log = logging.getLogger("kproto.registry")


@attrs.define(eq=False)
class RegistryServer:
    """A schema registry served over HTTP(S) from the cluster's loop.

    Args:
        state: the cluster's state (its ``_schemas`` topic).
        security: the cluster's listener security (TLS context, SASL users).
        host, port: where to listen (port 0: any free port; the bound port after
            :meth:`start`).
        max_request_bytes: the largest request body (bytes; default 16 MiB).
    """

    state: ClusterState
    security: ListenerSecurity
    host: str = attrs.field(default="127.0.0.1", kw_only=True)
    port: int = attrs.field(default=0, kw_only=True)
    max_request_bytes: int = attrs.field(
        default=DEFAULT_MAX_REQUEST_BYTES, kw_only=True
    )
    registry: SchemaRegistry = attrs.field(init=False)
    _runner: web.AppRunner | None = attrs.field(default=None, init=False)

    @registry.default
    def _new_registry(self) -> SchemaRegistry:
        return SchemaRegistry(SchemasTopic(self.state))

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https`` with TLS)."""
        scheme = "https" if self.security.uses_tls else "http"
        return f"{scheme}://{self.host}:{self.port}"

    async def start(self) -> None:
        """Rebuild the registry from ``_schemas`` (creating the topic), then listen.

        Raises:
            OSError: the port cannot be bound.
            kproto.registry.schemas_topic.StoreError: the topic cannot be read.
        """
        began = time.perf_counter()
        skipped = self.registry.load()
        state = self.registry.state
        log.info(
            "schema registry: %d subjects, %d schemas loaded from _schemas in %.3f s"
            "%s",
            len(state.subjects),
            len(state.schemas),
            time.perf_counter() - began,
            f" ({skipped} records skipped)" if skipped else "",
        )
        app = build_app(
            self.registry,
            BasicAuth(self.security),
            cluster_id=self.state.cluster_id,
            max_request_bytes=self.max_request_bytes,
        )
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(
                runner, self.host, self.port, ssl_context=self.security.ssl_context
            )
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = runner.addresses[0][1]

    async def stop(self) -> None:
        """Stop listening and close open connections (idempotent)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
