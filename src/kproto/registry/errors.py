"""Confluent Schema Registry's error codes and the typed error that carries one.

An HTTP error from the registry has the body ``{"error_code": N, "message": "..."}``;
the first three digits of ``N`` are the HTTP status (``40401`` is a 404). The codes
follow Confluent's ``io.confluent.kafka.schemaregistry.rest.exceptions.Errors``.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["RegistryErrorCode", "RegistryError"]


class RegistryErrorCode(IntEnum):
    """Confluent Schema Registry's ``error_code`` values."""

    BAD_REQUEST = 400
    UNAUTHORIZED = 401
    NOT_FOUND = 404
    METHOD_NOT_ALLOWED = 405
    UNSUPPORTED_MEDIA_TYPE = 415
    SUBJECT_NOT_FOUND = 40401
    VERSION_NOT_FOUND = 40402
    SCHEMA_NOT_FOUND = 40403
    SUBJECT_SOFT_DELETED = 40404
    SUBJECT_NOT_SOFT_DELETED = 40405
    SCHEMA_VERSION_SOFT_DELETED = 40406
    SCHEMA_VERSION_NOT_SOFT_DELETED = 40407
    SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED = 40408
    SUBJECT_LEVEL_MODE_NOT_CONFIGURED = 40409
    #: Confluent's current ``INCOMPATIBLE_SCHEMA_ERROR_CODE`` (older releases answer 409).
    INCOMPATIBLE_SCHEMA = 40901
    UNPROCESSABLE_ENTITY = 422
    INVALID_SCHEMA = 42201
    INVALID_VERSION = 42202
    INVALID_COMPATIBILITY_LEVEL = 42203
    INVALID_MODE = 42204
    OPERATION_NOT_PERMITTED = 42205
    REFERENCE_EXISTS = 42206
    ID_DOES_NOT_MATCH = 42207
    INVALID_SUBJECT = 42208
    SCHEMA_TOO_LARGE = 42209
    INVALID_RULESET = 42210
    CONTEXT_NOT_EMPTY = 42211
    STORE_ERROR = 50001
    OPERATION_TIMEOUT = 50002
    REQUEST_FORWARDING_FAILED = 50003
    UNKNOWN_LEADER = 50004
    INTERNAL_SERVER_ERROR = 500

    @property
    def http_status(self) -> int:
        """The HTTP status this code is sent with (its first three digits)."""
        value = int(self)
        return value if value < 1000 else value // 100


class RegistryError(Exception):
    """An error answered by (or about to be answered by) a schema registry.

    ``error_code`` is the registry's code (a :class:`RegistryErrorCode` where known,
    else the raw int); ``http_status`` the HTTP status; ``message`` the registry's text.
    """

    def __init__(self, error_code: int, message: str, http_status: int | None = None):
        try:
            code: int = RegistryErrorCode(error_code)
        except ValueError:
            code = error_code
        self.error_code = code
        self.message = message
        self.http_status = (
            http_status
            if http_status is not None
            else (error_code if error_code < 1000 else error_code // 100)
        )
        super().__init__(f"{message} (error_code {error_code})")

    def to_json(self) -> dict[str, object]:
        """The registry's JSON error body."""
        return {"error_code": int(self.error_code), "message": self.message}
