"""Test certificates for the broker's SSL and SASL_SSL listeners, and the principal
of a client certificate.

:class:`TestCertificates` makes a throw-away certificate authority with `trustme`_
(an optional dependency: ``pip install 'kproto[broker-tls]'``, imported only
when a cluster needs certificates and none were given), a server certificate for
``127.0.0.1`` and ``localhost``, and client certificates for mutual TLS. The CA is
written to ``<data_dir>/ca.pem`` for clients (``ssl.ca.location``).

.. _trustme: https://trustme.readthedocs.io
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

__all__ = ["TestCertificates", "ssl_principal"]

#: The host names and addresses the server certificate is valid for.
SERVER_IDENTITIES = ("127.0.0.1", "localhost")

#: RFC 2253 attribute names of the subject attributes ``getpeercert`` names
#: (as Java's ``X500Principal.getName()`` prints them).
_RDN_NAMES = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "stateOrProvinceName": "ST",
    "localityName": "L",
    "domainComponent": "DC",
    "userId": "UID",
    "streetAddress": "STREET",
}


def _trustme() -> Any:
    try:
        import trustme
    except ImportError:
        raise RuntimeError(
            "the broker makes its TLS certificates with trustme, which is not "
            "installed: pip install 'kproto[broker-tls]', or pass ssl_context="
        ) from None
    return trustme


class TestCertificates:
    """A certificate authority and the certificates it issued (PEM files in
    ``directory``).

    Attributes:
        ca_file: the CA certificate (PEM), what clients trust.

    Raises:
        RuntimeError: trustme is not installed (the message says how to install it).
    """

    __test__ = False  # not a pytest test class

    def __init__(self, directory: Path) -> None:
        trustme = _trustme()
        self._ca = trustme.CA(organization_name="kproto test CA")
        self._directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.ca_file = directory / "ca.pem"
        self._ca.cert_pem.write_to_path(str(self.ca_file))
        self._server = self._ca.issue_cert(
            *SERVER_IDENTITIES, common_name="kproto-broker"
        )

    def server_context(self, client_auth: str = "none") -> ssl.SSLContext:
        """The listener's context: the server certificate; client certificates
        verified against the CA when ``client_auth`` (Kafka's ``ssl.client.auth``)
        is ``"required"`` or ``"requested"``."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._server.configure_cert(context)
        if client_auth != "none":
            self._ca.configure_trust(context)
            context.verify_mode = (
                ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
            )
        return context

    def client_certificate(self, common_name: str) -> tuple[Path, Path]:
        """``(certfile, keyfile)`` of a client certificate for mutual TLS whose
        subject is ``CN=<common_name>,OU=clients,O=kproto test client``."""
        cert = self._ca.issue_cert(
            f"{common_name}.client.invalid",
            common_name=common_name,
            organization_name="kproto test client",
            organization_unit_name="clients",
        )
        certfile = self._directory / f"client-{common_name}.pem"
        keyfile = self._directory / f"client-{common_name}.key"
        cert.cert_chain_pems[0].write_to_path(str(certfile))
        cert.private_key_pem.write_to_path(str(keyfile))
        return certfile, keyfile


def ssl_principal(peercert: dict[str, Any] | None) -> str | None:
    """Kafka's principal of a verified client certificate (``DefaultKafkaPrincipal
    Builder`` with no ``ssl.principal.mapping.rules``): ``User:`` and the subject as
    an RFC 2253 distinguished name, most specific first
    (``User:CN=alice,OU=clients,O=kproto test client``); ``None`` without a certificate.
    """
    if not peercert or not peercert.get("subject"):
        return None
    parts = []
    for rdn in reversed(peercert["subject"]):
        for name, value in rdn:
            escaped = "".join("\\" + c if c in ',+"\\<>;=' else c for c in value)
            parts.append(f"{_RDN_NAMES.get(name, name)}={escaped}")
    return "User:" + ",".join(parts)
