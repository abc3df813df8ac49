"""Client quotas: byte rates and request time per (user, client id), answered with
``throttle_time_ms`` and enforced by muting the connection.

Follows Kafka's ``ClientQuotaManager`` / ``ClientRequestQuotaManager`` (KIP-13
byte-rate quotas, KIP-55 user quotas, KIP-124 request-time quotas, KIP-219: the
response goes out at once carrying ``throttle_time_ms`` and the broker then reads
nothing more from that connection for that long):

* the quota keys are ``producer_byte_rate`` (bytes/s of Produce requests),
  ``consumer_byte_rate`` (bytes/s of Fetch responses) and ``request_percentage``
  (percent of one request-handler thread: 100 = one second of handler time per
  second);
* the quota of a client is looked up with Kafka's precedence
  (:func:`entity_precedence`): user + client id, user + default client id, user,
  default user + client id, default user + default client id, default user, client
  id, default client id; then the broker's defaults (:class:`QuotaDefaults`);
* rates are measured over ``window_num`` samples of ``window_ms`` (Kafka's
  ``quota.window.num`` 11 and ``quota.window.size.seconds`` 1; a client seen for
  less than that is measured over the time since its first request, at least one
  sample, so a new client is throttled within a second); over the quota,
  ``throttle = (rate - quota) / quota * window``, at most ``window_num * window_ms``
  (``ClientQuotaManager.throttleTime`` / ``maxThrottleTimeMs``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from kproto.index import ApiKey

__all__ = [
    "PRODUCER_BYTE_RATE",
    "CONSUMER_BYTE_RATE",
    "REQUEST_PERCENTAGE",
    "QuotaDefaults",
    "QuotaEntity",
    "ClientQuotas",
    "entity_precedence",
    "user_of",
    "with_throttle",
]

PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"

#: A quota entity as AlterClientQuotas names it: sorted ``(entity_type, name)``
#: pairs, ``name`` ``None`` for the default entity, e.g.
#: ``(("client-id", None), ("user", "alice"))``.
QuotaEntity = tuple[tuple[str, str | None], ...]

#: APIs exempt from the request quota, as Kafka's ``ClientRequestQuotaManager``
#: exempts ApiVersions and the SASL exchange (the client must be able to connect).
_EXEMPT: Final = frozenset(
    {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
)


@attrs.frozen
class QuotaDefaults:
    """The broker's quotas for clients no entity quota covers (``None``: unlimited,
    Kafka's default).

    Attributes:
        producer_byte_rate: bytes/s of Produce requests per (user, client id).
        consumer_byte_rate: bytes/s of Fetch responses per (user, client id).
        request_percentage: percent of one handler thread's time per second.
    """

    producer_byte_rate: float | None = None
    consumer_byte_rate: float | None = None
    request_percentage: float | None = None

    def get(self, key: str) -> float | None:
        """The default of quota ``key`` (``None``: none)."""
        value: float | None = getattr(self, key, None)
        return value


def entity_precedence(user: str, client_id: str) -> list[QuotaEntity]:
    """The entities whose quota applies to ``(user, client_id)``, most specific
    first (Kafka's ``ClientQuotaManager`` / ``DefaultQuotaCallback`` order)."""
    u, c, du, dc = (
        ("user", user),
        ("client-id", client_id),
        ("user", None),
        (
            "client-id",
            None,
        ),
    )
    return [
        (c, u),
        (dc, u),
        (u,),
        (c, du),
        (dc, du),
        (du,),
        (c,),
        (dc,),
    ]


class _Rate:
    """A sum over ``num`` samples of ``size_ms`` (Kafka's ``SampledStat`` with
    ``Rate``): the rate is the sum over the elapsed part of the window."""

    __slots__ = ("samples", "size_ms", "num", "first_ms")

    def __init__(self, size_ms: int, num: int, now_ms: float) -> None:
        self.samples: dict[int, float] = {}
        self.size_ms = size_ms
        self.num = num
        self.first_ms = now_ms

    def record(self, value: float, now_ms: float) -> float:
        """Add ``value`` at ``now_ms``; return the rate per second."""
        slot = int(now_ms // self.size_ms)
        oldest = slot - self.num + 1
        for old in [s for s in self.samples if s < oldest]:
            del self.samples[old]
        self.samples[slot] = self.samples.get(slot, 0.0) + value
        # the window measured: the time since the first record, at least one
        # sample and at most all of them (Kafka's Rate.windowSize counts
        # ``num - 1`` samples from the start, which lets a new client run at
        # several times its quota for seconds)
        window = min(max(now_ms - self.first_ms, self.size_ms), self.num * self.size_ms)
        return sum(self.samples.values()) * 1000 / window if window > 0 else 0.0


class ClientQuotas:
    """Quota lookup and usage of one broker node.

    Args:
        entities: returns the stored entity quotas (AlterClientQuotas'
            ``{entity: {key: value}}``); called on each lookup.
        defaults: the broker's defaults when no entity quota applies.
        window_ms, window_num: the sample size (ms) and count.
        clock: seconds, monotonic (for tests).
    """

    def __init__(
        self,
        entities: Callable[[], Mapping[QuotaEntity, Mapping[str, float]]],
        defaults: QuotaDefaults | None = None,
        *,
        window_ms: int = 1000,
        window_num: int = 11,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.entities = entities
        self.defaults = defaults or QuotaDefaults()
        self.window_ms = window_ms
        self.window_num = window_num
        self.clock = clock
        self._rates: dict[tuple[str, str, str], _Rate] = {}

    def quota_for(self, user: str, client_id: str | None, key: str) -> float | None:
        """The quota ``key`` of ``(user, client_id)`` (``None``: unlimited)."""
        stored = self.entities()
        if stored:
            for entity in entity_precedence(user, client_id or ""):
                value = stored.get(entity, {}).get(key)
                if value is not None:
                    return float(value)
        return self.defaults.get(key)

    @property
    def defaults(self) -> QuotaDefaults:
        """The broker's defaults when no entity quota applies."""
        return self._defaults

    @defaults.setter
    def defaults(self, value: QuotaDefaults) -> None:
        self._defaults = value
        self._any_default = any(
            value.get(k) is not None
            for k in (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)
        )

    @property
    def enabled(self) -> bool:
        """Whether any quota is configured (no measurement otherwise)."""
        return self._any_default or bool(self.entities())

    def record(
        self,
        user: str,
        client_id: str | None,
        api_key: int,
        *,
        request_bytes: int,
        response_bytes: int,
        handler_ms: float,
    ) -> int:
        """Record one request of ``(user, client_id)``; return the throttle time
        (ms, 0: within every quota) the response must carry and the connection be
        muted for: the largest of the byte-rate throttle of its API (Produce:
        ``request_bytes``; Fetch: ``response_bytes``) and the request-time one."""
        throttle = 0.0
        if api_key == ApiKey.PRODUCE:
            throttle = self._throttle(
                user, client_id, PRODUCER_BYTE_RATE, request_bytes
            )
        elif api_key == ApiKey.FETCH:
            throttle = self._throttle(
                user, client_id, CONSUMER_BYTE_RATE, response_bytes
            )
        if api_key not in _EXEMPT:
            # request_percentage is per cent of a thread: handler ms per second / 10
            throttle = max(
                throttle,
                self._throttle(user, client_id, REQUEST_PERCENTAGE, handler_ms / 10),
            )
        return int(throttle)

    def _throttle(
        self, user: str, client_id: str | None, key: str, value: float
    ) -> float:
        quota = self.quota_for(user, client_id, key)
        if quota is None:
            return 0.0
        now_ms = self.clock() * 1000
        sensor = (user, client_id or "", key)
        rate = self._rates.get(sensor)
        if rate is None:
            rate = self._rates[sensor] = _Rate(self.window_ms, self.window_num, now_ms)
        observed = rate.record(value, now_ms)
        if observed <= quota:
            return 0.0
        window = self.window_ms * self.window_num
        if quota <= 0:
            return float(window)
        return min((observed - quota) / quota * window, float(window))


def with_throttle(response: Any, throttle_time_ms: int) -> Any:
    """``response`` with ``throttle_time_ms`` raised to at least the given value
    (unchanged when its version has no such field)."""
    if not hasattr(response, "throttle_time_ms"):
        return response
    current = response.throttle_time_ms or 0
    return attrs.evolve(response, throttle_time_ms=max(current, throttle_time_ms))


def user_of(principal: str) -> str:
    """The quota ``user`` entity name of a principal (``User:alice`` -> ``alice``)."""
    return principal.split(":", 1)[1] if principal.startswith("User:") else principal
