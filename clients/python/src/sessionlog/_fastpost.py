"""JSON requests over the standard library's http.client, on keep-alive
connections: httpx's client costs some 0.8 ms a request before its
transport does anything (appends through the gateway, measured side by
side: BENCHMARKS.md, Clients), more than the gateway and the service
together. The client's calls go this way; streams and raw blobs keep
httpx."""
from __future__ import annotations

import base64
import http.client
import json
import socket
import threading
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

# A reused connection the server has closed meanwhile fails at once, before
# any reply: the request is sent again on a new one (as httpx does).
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError, http.client.CannotSendRequest)


class Poster:
    """POSTs JSON to one base URL; safe for use by several threads (each
    request takes a connection of its own from a small pool)."""

    def __init__(self, url: str, user: Optional[str], password: Optional[str], timeout: float) -> None:
        u = urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"sessionlog: a gateway URL such as http://127.0.0.1:8080, not {url!r}")
        self._https = u.scheme == "https"
        self._host, self._port = u.hostname, u.port
        self._prefix = u.path.rstrip("/")
        self._timeout = timeout
        self._headers = {"content-type": "application/json", "accept": "application/json"}
        if user is not None:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            self._headers["authorization"] = "Basic " + token
        self._idle: List[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _connect(self) -> http.client.HTTPConnection:
        cls: type[http.client.HTTPConnection] = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self._timeout)
        conn.connect()
        # Headers and body leave in two writes: without this the second
        # waits for the server's delayed ACK (40 ms).
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def post(self, path: str, body: Any) -> Tuple[int, Any]:
        """The reply's status and payload (JSON, else its text). Raises
        OSError or http.client.HTTPException when no reply came."""
        data = json.dumps(body, separators=(",", ":")).encode()
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        reused = conn is not None
        if conn is None:
            conn = self._connect()
        try:
            try:
                status, raw = self._exchange(conn, path, data)
            except _STALE:
                conn.close()
                if not reused:
                    raise
                conn = self._connect()
                status, raw = self._exchange(conn, path, data)
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self._idle.append(conn)
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode("utf-8", "replace")

    def _exchange(self, conn: http.client.HTTPConnection, path: str, data: bytes) -> Tuple[int, bytes]:
        conn.request("POST", self._prefix + path, body=data, headers=self._headers)
        res = conn.getresponse()
        raw = res.read()
        if res.will_close:
            conn.close()  # reconnects on its next request
        return res.status, raw

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
