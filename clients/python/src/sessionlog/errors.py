"""Errors the service returns, one class per protocol code.

Every error is a SessionlogError; catch the class of the code you handle
(ConflictError carries where the session is now, RateLimitedError when to
try again) or switch on .code.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Type


class SessionlogError(Exception):
    """An error the service (or the gateway) returned."""

    code: str = "unknown"

    def __init__(self, code: str, message: str, status: int = 0, field: Optional[str] = None,
                 leaf: Optional[str] = None, sequence: Optional[int] = None,
                 retry_after_ms: Optional[int] = None, request: Optional[str] = None) -> None:
        self.code = code
        self.message = message
        self.status = status
        self.field = field
        self.leaf = leaf
        self.sequence = sequence
        self.retry_after_ms = retry_after_ms
        # The request's id in the node's log, where the node keeps the cause.
        self.request = request
        where = f" (at {field})" if field else ""
        super().__init__(f"{code}: {message}{where}")


class BadRequestError(SessionlogError):
    """The request is malformed; .field points at the member at fault."""


class InvalidSessionIDError(SessionlogError):
    """A session id that is not letters, digits, '-' and '_'."""


class InvalidEntryError(SessionlogError):
    """An entry pi would not accept; .field points at it."""


class NotFoundError(SessionlogError):
    """No such session."""


class EntryNotFoundError(SessionlogError):
    """No such entry in the session."""


class ExistsError(SessionlogError):
    """The session exists already."""


class DuplicateIDError(SessionlogError):
    """An entry id the session holds already (with other content)."""


class ParentNotFoundError(SessionlogError):
    """An entry names a parent the session does not hold."""


class InvalidTargetError(SessionlogError):
    """A move or label names an entry it cannot."""


class ConflictError(SessionlogError):
    """The session moved on since ifSequence: .leaf and .sequence say where
    it is now. Read, rebuild and try again (Client.update does)."""


class TooLargeError(SessionlogError):
    """Over a size limit; the message names it."""


class BlobNotFoundError(SessionlogError):
    """No blob of that SHA-256 (upload it before naming it)."""


class UploadNotFoundError(SessionlogError):
    """No upload of that name (it expired, or was never started)."""


class RateLimitedError(SessionlogError):
    """Too many requests: try again after .retry_after_ms."""


class TimeoutError(SessionlogError):  # noqa: A001 - the protocol's name
    """The service did not finish in time; the outcome may be unknown
    (retry with the same entry ids: a retry is recognised)."""


class UnavailableError(SessionlogError):
    """The service cannot serve now (no quorum, shutting down)."""


class InternalError(SessionlogError):
    """A fault of the service."""


class UnauthorizedError(SessionlogError):
    """Credentials missing or wrong."""


CLASSES: Dict[str, Type[SessionlogError]] = {
    "bad_request": BadRequestError,
    "invalid_session_id": InvalidSessionIDError,
    "invalid_entry": InvalidEntryError,
    "not_found": NotFoundError,
    "entry_not_found": EntryNotFoundError,
    "exists": ExistsError,
    "duplicate_id": DuplicateIDError,
    "parent_not_found": ParentNotFoundError,
    "invalid_target": InvalidTargetError,
    "conflict": ConflictError,
    "too_large": TooLargeError,
    "blob_not_found": BlobNotFoundError,
    "upload_not_found": UploadNotFoundError,
    "rate_limited": RateLimitedError,
    "timeout": TimeoutError,
    "unavailable": UnavailableError,
    "internal": InternalError,
    "unauthorized": UnauthorizedError,
}


def from_reply(status: int, body: Any) -> SessionlogError:
    """The error of an error reply ({"error": {...}}), or of a reply that
    is not one (a proxy's page)."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return InternalError("internal", f"HTTP {status}: a reply that is not the service's: {str(body)[:200]}", status)
    code = str(err.get("code", "internal"))
    cls = CLASSES.get(code, SessionlogError)
    return cls(code, str(err.get("message", "")), status, err.get("field"), err.get("leaf"),
               err.get("sequence"), err.get("retryAfterMs"), err.get("request"))


def transport_error(e: BaseException, what: str) -> "SessionlogError":
    """The error of a failure below the protocol, the same class as the
    TypeScript client's on both its transports: a connection that could
    not be made is UnavailableError (nothing was sent); anything else
    (no reply to a request sent) is TimeoutError, of unknown outcome."""
    import errno

    import httpx

    refused = isinstance(e, httpx.ConnectError) or isinstance(e, ConnectionRefusedError) or (
        isinstance(e, OSError) and e.errno in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH))
    if refused:
        return UnavailableError("unavailable", f"cannot connect to sessionlog for {what}: {e}")
    return TimeoutError("timeout", f"no reply to {what}: {e}")
