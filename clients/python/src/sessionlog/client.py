"""The synchronous client, over the HTTP gateway."""
from __future__ import annotations

import http.client
import random
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, cast

import httpx

from . import _requests as req
from ._fastpost import Poster
from ._transport import transport
from ._sse import Event, StreamError, parse
from .types import (AppendReply, BlobReply, ContextReply, EntriesReply, GetReply, Listing, ListReply, SearchReply, UsageReport,
                    SessionReply, StatsReply, TreeReply, WaitReply)
from .errors import ConflictError, RateLimitedError, SessionlogError, TimeoutError, UnavailableError, from_reply, transport_error

Entries = List[Dict[str, Any]]

# What is retried (with backoff) when the request may be sent again.
RETRIED = (RateLimitedError, UnavailableError, TimeoutError)


def _backoff(attempt: int, err: Optional[SessionlogError]) -> float:
    if isinstance(err, RateLimitedError) and err.retry_after_ms:
        return float(err.retry_after_ms) / 1000
    return min(2.0, 0.05 * 2.0 ** attempt)


def _outcome(res: httpx.Response) -> Tuple[Optional[Dict[str, Any]], Optional[SessionlogError]]:
    """A reply's payload, or the error it carries."""
    if res.status_code < 300:
        return res.json(), None
    try:
        payload = res.json()
    except ValueError:
        payload = res.text
    return None, from_reply(res.status_code, payload)


def _conflict_pause(attempt: int) -> float:
    """A random pause after a lost race: without it the writer that just
    won, already knowing the new sequence, wins again and again."""
    return random.uniform(0, min(0.2, 0.005 * (2 ** attempt)))


class Client:
    """A sessionlog client over HTTP. Every service operation is a method;
    errors are SessionlogError subclasses (errors.py).

        with Client("http://127.0.0.1:8080") as c:
            s = c.create(name="retry work")
            c.append(s["session"]["id"], [{"type": "message", "message": {...}}])
    """

    def __init__(self, url: str, user: Optional[str] = None, password: Optional[str] = None,
                 timeout: float = 30.0, retries: int = 3, http: Optional[httpx.Client] = None) -> None:
        auth = (user, password or "") if user is not None else None
        self._http = http or httpx.Client(base_url=url.rstrip("/"), auth=auth, timeout=timeout, transport=transport())
        # Calls go over the standard library unless the caller brought an
        # httpx client (its transport, hooks and auth are then used).
        self._poster = Poster(url.rstrip("/"), user, password, timeout) if http is None else None
        self.retries = retries

    def close(self) -> None:
        if self._poster is not None:
            self._poster.close()
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def call(self, op: str, body: Dict[str, Any]) -> Dict[str, Any]:
        """Any operation by name, body as the service takes it. Sent again
        on rate limits, unavailability and lost replies when it is safe
        (reads; appends whose entries carry the client's ids)."""
        return self._send("POST", f"/v1/ops/{op}", req.idempotent(op, body), json=body)

    def _exchange(self, method: str, path: str, **kw: Any) -> Tuple[Optional[Dict[str, Any]], Optional[SessionlogError]]:
        """One request: its payload or the error it carries (raises when
        no reply came)."""
        if self._poster is not None and method == "POST" and "json" in kw:
            status, payload = self._poster.post(path, kw["json"])
            if status < 300:
                return payload, None
            return None, from_reply(status, payload)
        return _outcome(self._http.request(method, path, **kw))

    def _send(self, method: str, path: str, again: bool, **kw: Any) -> Dict[str, Any]:
        for attempt in range(self.retries + 1):
            err: Optional[SessionlogError] = None
            try:
                ok, err = self._exchange(method, path, **kw)
            except (httpx.TimeoutException, httpx.TransportError, OSError, http.client.HTTPException) as e:
                err = transport_error(e, f"{method} {path}")
            else:
                if err is None:
                    return ok  # type: ignore[return-value]
            retry = isinstance(err, RateLimitedError) or (again and isinstance(err, RETRIED))
            if not retry or attempt == self.retries:
                raise err
            time.sleep(_backoff(attempt, err))
        raise AssertionError("unreachable")

    # Sessions.
    def create(self, id: Optional[str] = None, cwd: Optional[str] = None, name: Optional[str] = None,
               metadata: Optional[Dict[str, Any]] = None, parent_session: Optional[str] = None) -> SessionReply:
        return cast(SessionReply, self.call(*req.create(id, cwd, name, metadata, parent_session)))

    def open(self, session: str, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> SessionReply:
        """The session's header, name, labels, leaf and sequence."""
        return cast(SessionReply, self.call(*req.session("open", session, consistency, max_lag_ms)))

    def delete(self, session: str) -> SessionReply:
        return cast(SessionReply, self.call(*req.session("delete", session)))

    def stats(self, session: str, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> StatsReply:
        return cast(StatsReply, self.call(*req.session("stats", session, consistency, max_lag_ms)))

    def fork(self, session: str, id: Optional[str] = None, at: Optional[str] = None, before: Optional[str] = None) -> SessionReply:
        return cast(SessionReply, self.call(*req.fork(session, id, at, before)))

    def list(self, limit: Optional[int] = None, cursor: Optional[str] = None, **filters: Any) -> ListReply:
        """A page of sessions; filters: name, cwd, labels, meta, since, until."""
        return cast(ListReply, self.call(*req.list_sessions(limit, cursor, **filters)))

    def search(self, query: str, session: Optional[str] = None, limit: Optional[int] = None,
               offset: Optional[int] = None, scope: Optional[str] = None, at: Optional[str] = None,
               **filters: Optional[str]) -> SearchReply:
        """Messages by their words across sessions, best first: {"hits": [...], "total": n}.
        Within a session, its current branch unless scope says otherwise
        ("subtree": at and everything under it; "session": every branch);
        a hit a compaction summarized has "outsideContext": True. filters:
        role, tool, path, model, agent, cwd, label, since, until (RFC 3339)."""
        return cast(SearchReply, self.call(*req.search(query, session, limit, offset, scope, at, **filters)))

    def usage(self, by: Optional[List[str]] = None, since: Optional[str] = None, until: Optional[str] = None,
              model: Optional[str] = None, project: Optional[str] = None, agent: Optional[str] = None,
              session: Optional[str] = None, limit: Optional[int] = None) -> UsageReport:
        """Tokens and cost summed across sessions: {"by", "rows", "total",
        "sessions", "groups"}, rows grouped by by (of "day", "month",
        "model", "project", "agent", "session"; None: day and model; []: the
        total alone), narrowed by since and until (days, both included),
        model, project (a directory and below), agent and session."""
        return cast(UsageReport, self.call(*req.usage(by, since, until, model, project, agent, session, limit)))

    def sessions(self, page: int = 100, **filters: Any) -> Iterator[Listing]:
        """Every session (that the filters keep), most recently updated first, page by page."""
        cursor: Optional[str] = None
        while True:
            r = self.list(page, cursor, **filters)
            yield from r["sessions"]
            cursor = r.get("next")
            if not cursor:
                return

    # Writes.
    def append(self, session: str, entries: Entries, parent: Optional[str] = None,
               if_sequence: Optional[int] = None) -> AppendReply:
        """Appends entries (pi v3 JSON; id, parentId and timestamp may be
        left out) as one atomic batch; with if_sequence, only if the session
        is still at that sequence (ConflictError otherwise). Any size up to
        the service's limit (64 MiB): the gateway sends large bodies on as
        uploads."""
        op, body = req.append(session, entries, parent, if_sequence)
        body.pop("session")
        return cast(AppendReply, self._send("POST", f"/v1/sessions/{session}/entries", req.idempotent(op, body), json=body))

    def move(self, session: str, target: str, summary: Optional[str] = None, details: Any = None,
             if_sequence: Optional[int] = None) -> AppendReply:
        return cast(AppendReply, self.call(*req.move(session, target, summary, details, if_sequence)))

    def label(self, session: str, target: str, label: str, if_sequence: Optional[int] = None) -> AppendReply:
        return cast(AppendReply, self.call(*req.label(session, target, label, if_sequence)))

    def name(self, session: str, name: str, if_sequence: Optional[int] = None) -> AppendReply:
        return cast(AppendReply, self.call(*req.name(session, name, if_sequence)))

    def update(self, session: str, build: Callable[[str, int], Entries], attempts: int = 20) -> AppendReply:
        """The optimistic-concurrency loop: build(leaf, sequence) makes the
        entries to append on the session as it is; if another writer got
        there first, build is called again on the new state, after a short
        random pause."""
        s = self.open(session)
        leaf, seq = s["session"].get("leaf", ""), s.get("sequence", 0)
        for attempt in range(attempts):
            try:
                return self.append(session, build(leaf, seq), if_sequence=seq)
            except ConflictError as e:
                leaf, seq = e.leaf or "", e.sequence or 0
                time.sleep(_conflict_pause(attempt))
        raise ConflictError("conflict", f"{session}: still contended after {attempts} attempts")

    # Reads.
    def context(self, session: str, at: Optional[str] = None, offset: int = 0, refs: bool = False, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> ContextReply:
        """One page of the leaf's (or at's) context; context_all reads all."""
        return cast(ContextReply, self.call(*req.context(session, at, offset, refs, consistency, max_lag_ms)))

    def context_all(self, session: str, at: Optional[str] = None, refs: bool = False) -> ContextReply:
        """The whole context: its pages, of one state of the session."""
        first = self.context(session, at, 0, refs)
        messages, sources = list(first.get("messages") or []), list(first.get("sources") or [])
        nxt = first.get("next", 0)
        while nxt:
            page = self.context(session, at or first.get("leaf"), nxt, refs)
            messages += page.get("messages") or []
            sources += page.get("sources") or []
            nxt = page.get("next", 0)
        first["messages"], first["sources"], first["next"] = messages, sources, 0
        return first

    def tree(self, session: str, offset: int = 0, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> TreeReply:
        return cast(TreeReply, self.call(*req.tree(session, offset, consistency, max_lag_ms)))

    def entries(self, session: str, offset: int = 0, limit: Optional[int] = None, refs: bool = False, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> EntriesReply:
        return cast(EntriesReply, self.call(*req.entries(session, offset, limit, refs, consistency, max_lag_ms)))

    def get(self, session: str, entry: str, refs: bool = False, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> GetReply:
        """One entry of a session by its id: {"entry": …, "sequence": …}."""
        return cast(GetReply, self.call(*req.get(session, entry, refs, consistency, max_lag_ms)))

    def wait(self, session: str, sequence: int, timeout_ms: Optional[int] = None) -> WaitReply:
        """Returns once the service reflects sequence (read-your-writes)."""
        return cast(WaitReply, self.call(*req.wait(session, sequence, timeout_ms)))

    # Blobs.
    def put_blob(self, data: bytes) -> BlobReply:
        """Stores content apart; the reply's "blob" is the reference to
        place in an entry where the content would be. Any size up to the
        service's limit."""
        return cast(BlobReply, self._send("POST", "/v1/blobs", True, content=data))

    def get_blob(self, sha256: str) -> bytes:
        res = self._http.get(f"/v1/blobs/{sha256}")
        if res.status_code >= 300:
            raise from_reply(res.status_code, res.json())
        return res.content

    # Events.
    def events(self, session: str, after: Optional[int] = None, refs: bool = False,
               reconnect: bool = True) -> Iterator[Event]:
        """The session's entries as they are appended: after the stream
        sequence after (0: from the session's start, its header first), or
        from now on when after is None; resuming after a dropped connection
        from the last event seen."""
        last = after
        while True:
            params: Dict[str, str] = {}
            if last is not None:
                params["after"] = str(last)
            if refs:
                params["refs"] = "true"
            try:
                with self._http.stream("GET", f"/v1/sessions/{session}/events", params=params,
                                       timeout=httpx.Timeout(None, connect=10)) as res:
                    if res.status_code >= 300:
                        res.read()
                        raise from_reply(res.status_code, res.json())
                    for ev in parse(res.iter_lines()):
                        last = ev.id
                        yield ev
            except StreamError as e:
                if e.code != "slow_reader" or not reconnect:
                    raise
                last = e.last_event_id
            except (httpx.TransportError,):
                if not reconnect:
                    raise
                time.sleep(0.2)
            if not reconnect:
                return
