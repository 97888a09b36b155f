"""The asyncio client, over the HTTP gateway: Client's operations,
awaited (the requests are shared: _requests.py)."""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, cast

import httpx

from . import _requests as req
from ._transport import async_transport
from ._sse import Event, StreamError, parse
from .client import RETRIED, Entries, _backoff, _conflict_pause, _outcome
from .types import (AppendReply, BlobReply, ContextReply, EntriesReply, GetReply, ListReply, SearchReply, UsageReport,
                    SessionReply, StatsReply, TreeReply, WaitReply)
from .errors import ConflictError, RateLimitedError, SessionlogError, TimeoutError, from_reply, transport_error


class AsyncClient:
    """A sessionlog client for asyncio: the same methods as Client."""

    def __init__(self, url: str, user: Optional[str] = None, password: Optional[str] = None,
                 timeout: float = 30.0, retries: int = 3, http: Optional[httpx.AsyncClient] = None) -> None:
        auth = (user, password or "") if user is not None else None
        self._http = http or httpx.AsyncClient(base_url=url.rstrip("/"), auth=auth, timeout=timeout, transport=async_transport())
        self.retries = retries

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def call(self, op: str, body: Dict[str, Any]) -> Dict[str, Any]:
        """As Client.call."""
        return await self._send("POST", f"/v1/ops/{op}", req.idempotent(op, body), json=body)

    async def _send(self, method: str, path: str, again: bool, **kw: Any) -> Dict[str, Any]:
        for attempt in range(self.retries + 1):
            err: Optional[SessionlogError] = None
            try:
                res = await self._http.request(method, path, **kw)
            except (httpx.TimeoutException, httpx.TransportError) as e:
                err = transport_error(e, f"{method} {path}")
            else:
                ok, err = _outcome(res)
                if err is None:
                    return ok  # type: ignore[return-value]
            retry = isinstance(err, RateLimitedError) or (again and isinstance(err, RETRIED))
            if not retry or attempt == self.retries:
                raise err
            await asyncio.sleep(_backoff(attempt, err))
        raise AssertionError("unreachable")

    async def create(self, id: Optional[str] = None, cwd: Optional[str] = None, name: Optional[str] = None,
                     metadata: Optional[Dict[str, Any]] = None, parent_session: Optional[str] = None) -> SessionReply:
        return cast(SessionReply, await self.call(*req.create(id, cwd, name, metadata, parent_session)))

    async def open(self, session: str, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> SessionReply:
        return cast(SessionReply, await self.call(*req.session("open", session, consistency, max_lag_ms)))

    async def delete(self, session: str) -> SessionReply:
        return cast(SessionReply, await self.call(*req.session("delete", session)))

    async def stats(self, session: str, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> StatsReply:
        return cast(StatsReply, await self.call(*req.session("stats", session, consistency, max_lag_ms)))

    async def fork(self, session: str, id: Optional[str] = None, at: Optional[str] = None, before: Optional[str] = None) -> SessionReply:
        return cast(SessionReply, await self.call(*req.fork(session, id, at, before)))

    async def list(self, limit: Optional[int] = None, cursor: Optional[str] = None, **filters: Any) -> ListReply:
        """A page of sessions; filters: name, cwd, labels, meta, since, until."""
        return cast(ListReply, await self.call(*req.list_sessions(limit, cursor, **filters)))

    async def search(self, query: str, session: Optional[str] = None, limit: Optional[int] = None,
               offset: Optional[int] = None, scope: Optional[str] = None, at: Optional[str] = None,
               **filters: Optional[str]) -> SearchReply:
        """Messages by their words across sessions, best first: {"hits": [...], "total": n}.
        Within a session, its current branch unless scope says otherwise
        ("subtree": at and everything under it; "session": every branch);
        a hit a compaction summarized has "outsideContext": True. filters:
        role, tool, path, model, agent, cwd, label, since, until (RFC 3339)."""
        return cast(SearchReply, await self.call(*req.search(query, session, limit, offset, scope, at, **filters)))

    async def usage(self, by: Optional[List[str]] = None, since: Optional[str] = None, until: Optional[str] = None,
                    model: Optional[str] = None, project: Optional[str] = None, agent: Optional[str] = None,
                    session: Optional[str] = None, limit: Optional[int] = None) -> UsageReport:
        """Tokens and cost summed across sessions: {"by", "rows", "total",
        "sessions", "groups"}, rows grouped by by (of "day", "month",
        "model", "project", "agent", "session"; None: day and model; []: the
        total alone), narrowed by since and until (days, both included),
        model, project (a directory and below), agent and session."""
        return cast(UsageReport, await self.call(*req.usage(by, since, until, model, project, agent, session, limit)))

    async def append(self, session: str, entries: Entries, parent: Optional[str] = None,
                     if_sequence: Optional[int] = None) -> AppendReply:
        op, body = req.append(session, entries, parent, if_sequence)
        body.pop("session")
        return cast(AppendReply, await self._send("POST", f"/v1/sessions/{session}/entries", req.idempotent(op, body), json=body))

    async def move(self, session: str, target: str, summary: Optional[str] = None, details: Any = None,
                   if_sequence: Optional[int] = None) -> AppendReply:
        return cast(AppendReply, await self.call(*req.move(session, target, summary, details, if_sequence)))

    async def label(self, session: str, target: str, label: str, if_sequence: Optional[int] = None) -> AppendReply:
        return cast(AppendReply, await self.call(*req.label(session, target, label, if_sequence)))

    async def name(self, session: str, name: str, if_sequence: Optional[int] = None) -> AppendReply:
        return cast(AppendReply, await self.call(*req.name(session, name, if_sequence)))

    async def update(self, session: str, build: Callable[[str, int], Entries], attempts: int = 20) -> AppendReply:
        """As Client.update."""
        s = await self.open(session)
        leaf, seq = s["session"].get("leaf", ""), s.get("sequence", 0)
        for attempt in range(attempts):
            try:
                return await self.append(session, build(leaf, seq), if_sequence=seq)
            except ConflictError as e:
                leaf, seq = e.leaf or "", e.sequence or 0
                await asyncio.sleep(_conflict_pause(attempt))
        raise ConflictError("conflict", f"{session}: still contended after {attempts} attempts")

    async def context(self, session: str, at: Optional[str] = None, offset: int = 0, refs: bool = False, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> ContextReply:
        return cast(ContextReply, await self.call(*req.context(session, at, offset, refs, consistency, max_lag_ms)))

    async def tree(self, session: str, offset: int = 0, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> TreeReply:
        return cast(TreeReply, await self.call(*req.tree(session, offset, consistency, max_lag_ms)))

    async def entries(self, session: str, offset: int = 0, limit: Optional[int] = None, refs: bool = False, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> EntriesReply:
        return cast(EntriesReply, await self.call(*req.entries(session, offset, limit, refs, consistency, max_lag_ms)))

    async def get(self, session: str, entry: str, refs: bool = False, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> GetReply:
        """One entry of a session by its id: {"entry": …, "sequence": …}."""
        return cast(GetReply, await self.call(*req.get(session, entry, refs, consistency, max_lag_ms)))

    async def wait(self, session: str, sequence: int, timeout_ms: Optional[int] = None) -> WaitReply:
        return cast(WaitReply, await self.call(*req.wait(session, sequence, timeout_ms)))

    async def put_blob(self, data: bytes) -> BlobReply:
        return cast(BlobReply, await self._send("POST", "/v1/blobs", True, content=data))

    async def get_blob(self, sha256: str) -> bytes:
        res = await self._http.get(f"/v1/blobs/{sha256}")
        if res.status_code >= 300:
            raise from_reply(res.status_code, res.json())
        return res.content

    async def events(self, session: str, after: Optional[int] = None, refs: bool = False) -> AsyncIterator[Event]:
        """As Client.events (after=None: from now on; 0: from the start)."""
        last = after
        while True:
            params: Dict[str, str] = {}
            if last is not None:
                params["after"] = str(last)
            if refs:
                params["refs"] = "true"
            try:
                async with self._http.stream("GET", f"/v1/sessions/{session}/events", params=params,
                                             timeout=httpx.Timeout(None, connect=10)) as res:
                    if res.status_code >= 300:
                        await res.aread()
                        raise from_reply(res.status_code, res.json())
                    lines: List[str] = []
                    async for line in res.aiter_lines():
                        lines.append(line)
                        if line.rstrip("\r\n") == "":
                            for ev in parse(lines):
                                last = ev.id
                                yield ev
                            lines = []
            except StreamError as e:
                if e.code != "slow_reader":
                    raise
                last = e.last_event_id
