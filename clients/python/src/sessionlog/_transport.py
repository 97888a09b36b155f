"""HTTP transports with TCP_NODELAY: a request's headers and body leave in
two writes, and with Nagle's algorithm on the second waits for the
server's delayed ACK — 40 ms an append instead of one or two."""
from __future__ import annotations

import socket
from typing import Any

import httpx

_NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


def _patch_pool(transport: Any, asynchronous: bool) -> Any:
    """httpx < 0.24 has no socket_options: set the option on each
    connection its pool opens."""
    try:
        pool = transport._pool
        if asynchronous:
            from httpcore.backends.auto import AutoBackend as Base  # type: ignore
        else:
            from httpcore.backends.sync import SyncBackend as Base  # type: ignore
    except (AttributeError, ImportError):
        return transport  # an httpx this does not know: leave it as it is

    class NoDelay(Base):  # type: ignore[misc, valid-type]
        def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
            stream = super().connect_tcp(*args, **kwargs)
            _set(stream)
            return stream

    if asynchronous:
        class AsyncNoDelay(Base):  # type: ignore[misc, valid-type]
            async def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
                stream = await super().connect_tcp(*args, **kwargs)
                _set(stream)
                return stream
        pool._network_backend = AsyncNoDelay()
    else:
        pool._network_backend = NoDelay()
    return transport


def _set(stream: Any) -> None:
    sock = stream.get_extra_info("socket") if hasattr(stream, "get_extra_info") else None
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def transport() -> httpx.HTTPTransport:
    try:
        return httpx.HTTPTransport(socket_options=_NODELAY)  # type: ignore[call-arg]
    except TypeError:
        return _patch_pool(httpx.HTTPTransport(), asynchronous=False)


def async_transport() -> httpx.AsyncHTTPTransport:
    try:
        return httpx.AsyncHTTPTransport(socket_options=_NODELAY)  # type: ignore[call-arg]
    except TypeError:
        return _patch_pool(httpx.AsyncHTTPTransport(), asynchronous=True)
