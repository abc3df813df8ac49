"""TLS and SASL options of the ``kproto-kafka`` source and sink (no pyspark).

Spark passes the Kafka client's own settings with a ``kafka.`` prefix; these are
the security ones (``CommonClientConfigs`` / ``SaslConfigs`` / ``SslConfigs`` of
Kafka's clients, KIP-651 for PEM trust stores), turned into what
:class:`kproto.client.Client` takes: ``ssl_context=`` and ``sasl=``. Only the
settings are kept (picklable, for the executors); the context is built where a
client is opened, so a CA file must exist at the same path on every executor, as
Spark's trust stores must.

Credentials never show: the password is a :class:`kproto.sasl.Secret`, left out
of ``repr``, and an error about ``kafka.sasl.jaas.config`` never quotes it.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from typing import Any, Final

import attrs

from kproto.negotiation import client_ssl_context
from kproto.sasl import SaslConfig, Secret

__all__ = [
    "KafkaSecurity",
    "KafkaSecurityError",
    "SECURITY_OPTIONS",
    "parse_jaas",
    "parse_security",
]

#: The ``kafka.*`` security options understood (lower case).
SECURITY_OPTIONS: Final = frozenset(
    {
        "kafka.security.protocol",
        "kafka.sasl.mechanism",
        "kafka.sasl.jaas.config",
        "kafka.ssl.truststore.location",
        "kafka.ssl.truststore.type",
        "kafka.ssl.truststore.certificates",
        "kafka.ssl.ca.location",
        "kafka.ssl.endpoint.identification.algorithm",
    }
)

_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: Java's login module class per mechanism.
_LOGIN_MODULES: Final = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_HEAD: Final = re.compile(
    r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b", re.IGNORECASE
)
_OPTION: Final = re.compile(r'\s*([\w.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


class KafkaSecurityError(ValueError):
    """A security option is missing, malformed or not supported (named; never
    quoting a password)."""


@attrs.frozen
class KafkaSecurity:
    """The security settings of one source or sink (picklable).

    Attributes:
        protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
        mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (SASL only).
        username, password: from ``kafka.sasl.jaas.config`` (password masked).
        ca_location: a PEM file of trusted CAs (None: the system's).
        ca_pem: PEM certificates given inline (KIP-651's
            ``ssl.truststore.certificates``).
        check_hostname: ``ssl.endpoint.identification.algorithm`` is ``https``
            (Kafka's default) rather than empty.
    """

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str = ""
    password: Secret = attrs.field(default=Secret(""), converter=Secret, repr=False)
    ca_location: str | None = None
    ca_pem: str | None = attrs.field(default=None, repr=False)
    check_hostname: bool = True

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Spark pickles the data source, whose options already hold
        # kafka.sasl.jaas.config in clear, to its executors: this pickles no more
        # than that (a Secret alone refuses to be pickled).
        return (
            _restore,
            (
                self.protocol,
                self.mechanism,
                self.username,
                self.password.reveal(),
                self.ca_location,
                self.ca_pem,
                self.check_hostname,
            ),
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for SSL and SASL_SSL (None otherwise).

        Raises:
            OSError / ssl.SSLError: the CA file is missing or not PEM.
        """
        if not self.protocol.endswith("SSL"):
            return None
        context = client_ssl_context(
            self.ca_location, check_hostname=self.check_hostname
        )
        if self.ca_pem is not None:
            context.load_verify_locations(cadata=self.ca_pem)
        return context

    def sasl(self) -> SaslConfig | None:
        """The SASL settings for SASL_PLAINTEXT and SASL_SSL (None otherwise)."""
        if self.mechanism is None:
            return None
        return SaslConfig(
            mechanism=self.mechanism, username=self.username, password=self.password
        )


def _restore(*fields: Any) -> KafkaSecurity:
    return KafkaSecurity(*fields)


def parse_jaas(text: str, mechanism: str) -> tuple[str, Secret]:
    """``(username, password)`` from a ``sasl.jaas.config`` value as Spark users
    write it: ``org.apache.kafka.common.security.plain.PlainLoginModule required
    username="alice" password="secret";`` (values quoted, with ``\\"`` escapes,
    or bare; ScramLoginModule for SCRAM; Java's ``JaasConfig`` grammar, one login
    module).

    Raises:
        KafkaSecurityError: malformed, another login module than the mechanism's,
            or no username/password (the value itself is never quoted).
    """
    where = "option 'kafka.sasl.jaas.config'"
    head = _HEAD.match(text)
    if head is None:
        raise KafkaSecurityError(
            f"{where}: expected '<LoginModule class> required key=\"value\" ...;'"
        )
    module = head.group(1)
    if module != _LOGIN_MODULES[mechanism]:
        raise KafkaSecurityError(
            f"{where}: login module {module} does not serve SASL {mechanism} "
            f"(expected {_LOGIN_MODULES[mechanism]})"
        )
    pos = head.end()
    options: dict[str, str] = {}
    while True:
        m = _OPTION.match(text, pos)
        if m is None:
            break
        quoted, bare = m.group(2), m.group(3)
        value = bare if quoted is None else re.sub(r"\\(.)", r"\1", quoted)
        options[m.group(1)] = value
        pos = m.end()
    rest = text[pos:].strip()
    if rest not in (";", ""):
        raise KafkaSecurityError(
            f"{where}: cannot parse the login module options after character "
            f"{pos} (expected key=\"value\" pairs ending with ';')"
        )
    missing = [k for k in ("username", "password") if k not in options]
    if missing:
        raise KafkaSecurityError(f"{where}: no {' or '.join(missing)} given")
    return options["username"], Secret(options["password"])


def parse_security(options: Mapping[str, str]) -> KafkaSecurity:
    """The security settings of lower-cased ``options``.

    ``kafka.security.protocol`` PLAINTEXT (default), SSL, SASL_PLAINTEXT or
    SASL_SSL; for SASL ``kafka.sasl.mechanism`` (PLAIN, SCRAM-SHA-256,
    SCRAM-SHA-512; Kafka's default GSSAPI and OAUTHBEARER are not supported) and
    ``kafka.sasl.jaas.config``; for TLS a PEM trust store:
    ``kafka.ssl.truststore.location`` with ``kafka.ssl.truststore.type=PEM``,
    ``kafka.ssl.truststore.certificates`` (PEM text) or ``kafka.ssl.ca.location``
    (librdkafka's name), else the system's CAs; host names checked unless
    ``kafka.ssl.endpoint.identification.algorithm`` is empty.

    Raises:
        KafkaSecurityError: as named (a JKS or PKCS12 trust store, a missing
            mechanism or JAAS config, SASL or TLS settings for a protocol
            without them...).
    """
    protocol = options.get("kafka.security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in _PROTOCOLS:
        raise KafkaSecurityError(
            f"kafka.security.protocol must be one of {', '.join(_PROTOCOLS)}, "
            f"not {protocol!r}"
        )
    uses_sasl = protocol.startswith("SASL_")
    uses_tls = protocol.endswith("SSL")
    given = sorted(k for k in options if k in SECURITY_OPTIONS)
    sasl_given = [k for k in given if k.startswith("kafka.sasl.")]
    ssl_given = [k for k in given if k.startswith("kafka.ssl.")]
    if sasl_given and not uses_sasl:
        raise KafkaSecurityError(
            f"{sasl_given} given with kafka.security.protocol={protocol} (SASL needs "
            "SASL_PLAINTEXT or SASL_SSL)"
        )
    if ssl_given and not uses_tls:
        raise KafkaSecurityError(
            f"{ssl_given} given with kafka.security.protocol={protocol} (TLS needs "
            "SSL or SASL_SSL)"
        )
    mechanism = None
    username, password = "", Secret("")
    if uses_sasl:
        mechanism = options.get("kafka.sasl.mechanism", "").strip().upper()
        if mechanism not in _LOGIN_MODULES:
            raise KafkaSecurityError(
                "kafka.sasl.mechanism must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
                + (
                    f", not {mechanism!r}"
                    if mechanism
                    else " (Kafka's default, " "GSSAPI, is not supported)"
                )
            )
        jaas = options.get("kafka.sasl.jaas.config")
        if jaas is None:
            raise KafkaSecurityError(
                f"SASL {mechanism} needs option 'kafka.sasl.jaas.config'"
            )
        username, password = parse_jaas(jaas, mechanism)
    ca_location = options.get("kafka.ssl.ca.location")
    store = options.get("kafka.ssl.truststore.location")
    if store is not None:
        kind = options.get("kafka.ssl.truststore.type", "JKS").strip().upper()
        if kind != "PEM":
            raise KafkaSecurityError(
                f"kafka.ssl.truststore.type={kind} is not supported (no JKS or "
                "PKCS12): give a PEM file with kafka.ssl.truststore.type=PEM, or "
                "kafka.ssl.ca.location"
            )
        if ca_location is not None and ca_location != store:
            raise KafkaSecurityError(
                "kafka.ssl.truststore.location and kafka.ssl.ca.location name "
                "different files: give one"
            )
        ca_location = store
    algorithm = options.get("kafka.ssl.endpoint.identification.algorithm", "https")
    if algorithm.strip().lower() not in ("https", ""):
        raise KafkaSecurityError(
            "kafka.ssl.endpoint.identification.algorithm must be https or empty, "
            f"not {algorithm!r}"
        )
    return KafkaSecurity(
        protocol=protocol,
        mechanism=mechanism,
        username=username,
        password=password,
        ca_location=ca_location,
        ca_pem=options.get("kafka.ssl.truststore.certificates"),
        check_hostname=algorithm.strip().lower() == "https",
    )
