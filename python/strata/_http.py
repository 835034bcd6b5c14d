"""The HTTP client under strata's remote classes: keep-alive HTTP/1.1 over http.client to a
`strata serve` (docs/server.md), JSON bodies in and out, and the server's error bodies
{"error": {"code", "message"}} raised as the exception classes of strata.errors.

Thread safety: one RemoteClient may be shared by any number of threads. Each request takes an
idle connection from a small pool (or opens one) and returns it when the response has been
read whole, so concurrent requests run on separate connections.
"""

from __future__ import annotations

import base64
import datetime as _dt
import http.client
import json
import math
import os
import select
import socket
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import (
    AlreadyExistsError,
    BusyError,
    CompactionInProgressError,
    ContextStoreError,
    InternalError,
    InvalidRequestError,
    NotFoundError,
    UnavailableError,
)

__all__ = ["RemoteClient", "Response"]

DEFAULT_TIMEOUT = 300.0
# Idle keep-alive connections kept per client; more concurrent requests open more
# connections, closed when returned to a full pool.
DEFAULT_POOL_SIZE = 16

# Error code -> class. OVERLOADED (503) is decided by _overloaded_class.
_ERROR_CLASSES: dict[str, type[ContextStoreError]] = {
    "NOT_FOUND": NotFoundError,
    "ALREADY_EXISTS": AlreadyExistsError,
    "INVALID_REQUEST": InvalidRequestError,
    "PAYLOAD_TOO_LARGE": InvalidRequestError,
    "METHOD_NOT_ALLOWED": InvalidRequestError,
    "UNAUTHORIZED": InvalidRequestError,
    "COMPACTION_IN_PROGRESS": CompactionInProgressError,
    "REQUEST_TIMEOUT": UnavailableError,
    "INTERNAL": InternalError,
}

# Busy statuses (a read or commit that raced concurrent work) say so in their messages; the
# server answers them with the same OVERLOADED code as refusals (pending-generation cap, blob
# budget, merge-wal concurrency, "worker is draining"), which are Unavailable.
_BUSY_HINTS = ("race", "conflict", "disappeared", "changed under", "retry the")

# Failures of a connection that may have been closed by the server while it sat idle in the
# pool: an idempotent request is sent once more on a new connection.
_DROPPED = (
    http.client.RemoteDisconnected,
    http.client.BadStatusLine,
    ConnectionResetError,
    ConnectionAbortedError,
    BrokenPipeError,
)


class Response:
    """A response read whole: status, headers (lower-case names) and body bytes."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        if not self.body:
            return None
        try:
            return json.loads(self.body)
        except ValueError as e:
            text = self.body[:200].decode("utf-8", "replace")
            raise InternalError(f"the server answered {self.status} with a body that is not "
                                f"JSON ({e}): {text!r}") from None


def _overloaded_class(message: str) -> type[ContextStoreError]:
    lower = message.lower()
    if any(hint in lower for hint in _BUSY_HINTS) and "draining" not in lower:
        return BusyError
    return UnavailableError


def error_from_response(response: Response, method: str, target: str) -> ContextStoreError:
    """The exception for a response with an error status: the class for the body's code and
    the server's message. A body that is not the server's error JSON (a proxy's page) gets a
    class from the HTTP status and the body's text as its message."""
    code = None
    message = None
    try:
        body = json.loads(response.body) if response.body else None
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            code = body["error"].get("code")
            message = body["error"].get("message")
    except ValueError:
        pass
    if message is None:
        text = response.body[:500].decode("utf-8", "replace").strip()
        message = f"HTTP {response.status} from {method} {target}" + (f": {text}" if text else "")
    if code == "OVERLOADED" or (code is None and response.status == 503):
        cls = _overloaded_class(message)
    elif code in _ERROR_CLASSES:
        cls = _ERROR_CLASSES[code]
    elif response.status == 404:
        cls = NotFoundError
    elif response.status == 409:
        cls = AlreadyExistsError if code is None else InvalidRequestError
    elif 400 <= response.status < 500:
        cls = InvalidRequestError
    else:
        cls = InternalError
    error = cls(message)
    error.code = code or cls.code  # the server's code (PAYLOAD_TOO_LARGE, ...) when it sent one
    error.http_status = response.status
    retry_after = response.headers.get("retry-after")
    error.retry_after = float(retry_after) if retry_after and retry_after.isdigit() else None
    return error


# --- JSON ------------------------------------------------------------------------------------


def rfc3339(value: _dt.datetime, field: str = "datetime") -> str:
    """A timezone-aware datetime as RFC 3339 in UTC with a 'Z'; a naive one is refused."""
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise InvalidRequestError(f"{field} must include timezone information")
    utc = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return utc.isoformat() + "Z"


def parse_timestamp(value: Any) -> Any:
    """An RFC 3339 string from the server as an aware datetime (UTC); other values as they
    are."""
    if isinstance(value, str):
        try:
            return _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    return value


def _to_json_value(value: Any) -> Any:
    """json.dumps's fallback: bytes-like as base64, datetimes as RFC 3339, numpy arrays and
    scalars as lists and numbers, other iterables (tuples, sets excepted) as lists."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, _dt.datetime):
        return rfc3339(value)
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy array or scalar
        return value.tolist()
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Iterable) and not isinstance(value, (str, set, frozenset)):
        return list(value)
    raise TypeError(f"a value of type {type(value).__name__} cannot be sent as JSON")


def _non_finite_as_text(value: Any) -> Any:
    """NaN and the infinities as the strings the server reads for them ("NaN", "Infinity",
    "-Infinity"); plain JSON has no literal for them."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _non_finite_as_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_non_finite_as_text(v) for v in value]
    return value


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON of a request body (see _to_json_value for the non-JSON types)."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                          default=_to_json_value)
    except ValueError as e:
        if "out of range float" not in str(e).lower():
            raise
        # Rare: convert the non-JSON values first, then the non-finite floats.
        plain = json.loads(json.dumps(value, default=_to_json_value, allow_nan=True))
        text = json.dumps(_non_finite_as_text(plain), separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
    except TypeError as e:
        raise InvalidRequestError(str(e)) from None
    return text.encode("utf-8")


# --- The client ------------------------------------------------------------------------------


class RemoteClient:
    """Requests to one `strata serve` at `base_url` ("http://host:port", optionally with a
    path prefix; "/api/v1" is added unless the URL ends with it).

    `token`: the server's bearer token (--auth-token-file); default $STRATA_AUTH_TOKEN when
    set. `timeout`: seconds for connecting and for each socket read or write (None: wait
    forever). A request that finds its pooled keep-alive connection dropped by the server is
    sent once more on a new connection when it is idempotent (GET, PUT, DELETE, and the
    appends whose ids the client chose); any other failure to reach the server raises
    UnavailableError.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        pool_size: int = DEFAULT_POOL_SIZE,
    ) -> None:
        if not isinstance(base_url, str):
            raise TypeError(f"base_url must be a str, found {type(base_url).__name__}")
        url = base_url if "://" in base_url else "http://" + base_url
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidRequestError(
                f"base_url must be an http:// or https:// URL with a host, got {base_url!r}"
            )
        self.base_url = base_url.rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        prefix = parts.path.rstrip("/")
        self._prefix = prefix if prefix.endswith("/api/v1") else prefix + "/api/v1"
        if token is None:
            token = os.environ.get("STRATA_AUTH_TOKEN") or None
        self._auth = f"Bearer {token}" if token else None
        self.timeout = timeout
        self._pool_size = pool_size
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    # -- connections --

    def _connect(self) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def _acquire(self) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection that still looks open (reused=True), or a new one."""
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if _looks_open(conn):
                    return conn, True
                conn.close()
        return self._connect(), False

    def _release(self, conn: http.client.HTTPConnection, reusable: bool) -> None:
        if reusable:
            with self._lock:
                if len(self._idle) < self._pool_size:
                    self._idle.append(conn)
                    return
        conn.close()

    def close(self) -> None:
        """Closes the idle connections; requests still running close theirs when done. The
        client stays usable (a later request connects again)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # -- requests --

    def target(self, *segments: str, query: Mapping[str, Any] | None = None) -> str:
        """The request target for path segments under /api/v1 (each percent-encoded, '/'
        included, so ids may hold any character) and a query (None values left out)."""
        path = self._prefix + "".join("/" + urllib.parse.quote(str(s), safe="") for s in segments)
        if query:
            items = [(k, _query_text(v)) for k, v in query.items() if v is not None]
            if items:
                path += "?" + urllib.parse.urlencode(items, quote_via=urllib.parse.quote)
        return path

    def request(
        self,
        method: str,
        target: str,
        *,
        json_body: Any = None,
        body: bytes | None = None,
        content_type: str | None = None,
        idempotent: bool | None = None,
        ok: Iterable[int] = (200, 201, 204),
    ) -> Response:
        """Sends one request and reads the whole response. A status outside `ok` raises the
        error class for the server's error body. `idempotent` (default: GET, HEAD, PUT,
        DELETE) allows the one resend on a dropped keep-alive connection."""
        headers = {"Accept": "application/json"}
        if json_body is not None:
            body = dumps(json_body)
            content_type = "application/json"
        if body is not None:
            headers["Content-Type"] = content_type or "application/octet-stream"
        elif method in ("POST", "PUT", "PATCH"):
            body = b""
        if self._auth:
            headers["Authorization"] = self._auth
        if idempotent is None:
            idempotent = method in ("GET", "HEAD", "PUT", "DELETE")
        response = self._send(method, target, body, headers, idempotent)
        if response.status not in ok:
            raise error_from_response(response, method, target)
        return response

    def _send(self, method, target, body, headers, idempotent) -> Response:
        for attempt in (0, 1):
            conn, reused = self._acquire()
            try:
                try:
                    conn.request(method, target, body=body, headers=headers)
                except (BrokenPipeError, ConnectionResetError):
                    # The server may have answered (413 from the Content-Length) and closed
                    # before reading the whole body: read that answer when there is one (if
                    # there is none, getresponse raises a _DROPPED error).
                    pass
                raw = conn.getresponse()
                data = raw.read()
            except _DROPPED as e:
                conn.close()
                if reused and attempt == 0 and idempotent:
                    continue
                raise UnavailableError(
                    f"{method} {self._where(target)}: the server closed the connection "
                    f"({type(e).__name__}: {e}); "
                    + ("it may have applied the request" if not idempotent else "retry")
                ) from None
            except (socket.timeout, TimeoutError):
                conn.close()
                raise UnavailableError(
                    f"{method} {self._where(target)}: no answer within {self.timeout} s"
                    + ("; the request may have been applied" if method != "GET" else "")
                ) from None
            except ConnectionRefusedError:
                conn.close()
                raise UnavailableError(
                    f"cannot connect to {self._host}:{self._port} (connection refused): is "
                    f"`strata serve` running at {self.base_url}?"
                ) from None
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise UnavailableError(
                    f"{method} {self._where(target)}: {type(e).__name__}: {e}"
                ) from None
            except BaseException:
                conn.close()  # KeyboardInterrupt mid-response: the connection is unusable
                raise
            headers_out = {k.lower(): v for k, v in raw.getheaders()}
            self._release(conn, not raw.will_close)
            return Response(raw.status, headers_out, data)
        raise AssertionError("unreachable")

    def _where(self, target: str) -> str:
        return f"{'https' if self._https else 'http'}://{self._host}:{self._port}{target}"

    # -- helpers --

    def get_json(self, *segments: str, query: Mapping[str, Any] | None = None) -> Any:
        return self.request("GET", self.target(*segments, query=query)).json()

    def post_json(self, *segments: str, body: Any = None, query=None, idempotent=False,
                  ok=(200, 201, 204)) -> Any:
        return self.request(
            "POST",
            self.target(*segments, query=query),
            json_body={} if body is None else body,
            idempotent=idempotent,
            ok=ok,
        ).json()

    def __enter__(self) -> RemoteClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteClient({self.base_url!r})"


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _looks_open(conn: http.client.HTTPConnection) -> bool:
    """False when the server has closed an idle connection (its socket reads EOF) or sent
    something unasked; True when it is quiet, as an open keep-alive connection is."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable
