"""HTTP transports with TCP_NODELAY: a request's headers and body leave in
two writes, and with Nagle's algorithm on the second waits for the
server's delayed ACK — 40 ms an append instead of one or two."""
from __future__ import annotations

import importlib
import socket
from typing import Any, cast

import httpx

_NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


def _patch_pool(transport: Any, asynchronous: bool) -> Any:
    """httpx < 0.24 has no socket_options: set the option on each
    connection its pool opens."""
    # httpcore's backends are looked up by name: where they are (and
    # whether they exist) differs between versions, so they are Any here.
    Base: Any
    try:
        pool: Any = transport._pool
        if asynchronous:
            Base = importlib.import_module("httpcore.backends.auto").AutoBackend
        else:
            Base = importlib.import_module("httpcore.backends.sync").SyncBackend
    except (AttributeError, ImportError):
        return transport  # an httpx this does not know: leave it as it is

    backend = Base()
    connect = backend.connect_tcp
    if asynchronous:
        async def connect_async(*args: Any, **kwargs: Any) -> Any:
            stream = await connect(*args, **kwargs)
            _set(stream)
            return stream
        backend.connect_tcp = connect_async
    else:
        def connect_sync(*args: Any, **kwargs: Any) -> Any:
            stream = connect(*args, **kwargs)
            _set(stream)
            return stream
        backend.connect_tcp = connect_sync
    pool._network_backend = backend
    return transport


def _set(stream: Any) -> None:
    sock = stream.get_extra_info("socket") if hasattr(stream, "get_extra_info") else None
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def transport() -> httpx.HTTPTransport:
    try:
        return httpx.HTTPTransport(socket_options=_NODELAY)  # type: ignore[call-arg]
    except TypeError:
        return cast(httpx.HTTPTransport, _patch_pool(httpx.HTTPTransport(), asynchronous=False))


def async_transport() -> httpx.AsyncHTTPTransport:
    try:
        return httpx.AsyncHTTPTransport(socket_options=_NODELAY)  # type: ignore[call-arg]
    except TypeError:
        return cast(httpx.AsyncHTTPTransport, _patch_pool(httpx.AsyncHTTPTransport(), asynchronous=True))
