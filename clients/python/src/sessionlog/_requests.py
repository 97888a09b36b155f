"""The service's operations as (op, body) pairs, shared by the sync and
asyncio clients: each client sends them to POST /v1/ops/{op}."""
from __future__ import annotations

import secrets
from typing import Any, Dict, List, Optional, Tuple

Request = Tuple[str, Dict[str, Any]]


def new_id() -> str:
    """A fresh entry id (8 hex digits, as pi draws them). Entries appended
    with ids chosen by the client are safe to send again: a retry of an
    append that was stored is recognised, not stored twice."""
    return secrets.token_hex(4)


def _body(**members: Any) -> Dict[str, Any]:
    return {k: v for k, v in members.items() if v is not None and v is not False}


def create(id: Optional[str] = None, cwd: Optional[str] = None, name: Optional[str] = None,
           metadata: Optional[Dict[str, Any]] = None, parent_session: Optional[str] = None) -> Request:
    return "create", _body(id=id, cwd=cwd, name=name, metadata=metadata, parentSession=parent_session)


def session(op: str, session_id: str, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> Request:
    return op, _body(session=session_id, consistency=consistency, maxLagMs=max_lag_ms)


def append(session_id: str, entries: List[Dict[str, Any]], parent: Optional[str] = None,
           if_sequence: Optional[int] = None) -> Request:
    return "append", _body(session=session_id, entries=entries, parent=parent, ifSequence=if_sequence)


def move(session_id: str, target: str, summary: Optional[str] = None, details: Any = None,
         if_sequence: Optional[int] = None) -> Request:
    return "move", _body(session=session_id, target=target, summary=summary, details=details, ifSequence=if_sequence)


def label(session_id: str, target: str, label: str, if_sequence: Optional[int] = None) -> Request:
    body = _body(session=session_id, target=target, ifSequence=if_sequence)
    body["label"] = label  # "" clears it
    return "label", body


def name(session_id: str, name: str, if_sequence: Optional[int] = None) -> Request:
    body = _body(session=session_id, ifSequence=if_sequence)
    body["name"] = name
    return "name", body


# Reads take consistency ("linearizable", the default, or "replica") and
# max_lag_ms: a "replica" read accepts an answer up to max_lag_ms (default
# 1000) stale, and is answered without a write to the stream while the
# service's copy of the session is that fresh.

def context(session_id: str, at: Optional[str] = None, offset: int = 0, refs: bool = False,
            consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> Request:
    return "context", _body(session=session_id, at=at, offset=offset or None, refs=refs,
                            consistency=consistency, maxLagMs=max_lag_ms)


def tree(session_id: str, offset: int = 0, consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> Request:
    return "tree", _body(session=session_id, offset=offset or None, consistency=consistency, maxLagMs=max_lag_ms)


def entries(session_id: str, offset: int = 0, limit: Optional[int] = None, refs: bool = False,
            consistency: Optional[str] = None, max_lag_ms: Optional[int] = None) -> Request:
    return "entries", _body(session=session_id, offset=offset or None, limit=limit, refs=refs,
                            consistency=consistency, maxLagMs=max_lag_ms)


def get(session_id: str, entry: str, refs: bool = False, consistency: Optional[str] = None,
        max_lag_ms: Optional[int] = None) -> Request:
    return "get", _body(session=session_id, entry=entry, refs=refs, consistency=consistency, maxLagMs=max_lag_ms)


def fork(session_id: str, id: Optional[str] = None, at: Optional[str] = None, before: Optional[str] = None) -> Request:
    return "fork", _body(session=session_id, id=id, at=at, before=before)


def list_sessions(limit: Optional[int] = None, cursor: Optional[str] = None, name: Optional[str] = None,
                  cwd: Optional[str] = None, labels: Optional[List[str]] = None, meta: Optional[Dict[str, str]] = None,
                  since: Optional[str] = None, until: Optional[str] = None) -> Request:
    """A page of sessions, filtered by name (a part, any case), cwd (that
    directory or below), labels (all of them), meta (top-level metadata
    members), since and until (RFC 3339, on the last update). A filtered
    page may be short, even empty, with a "next": follow it."""
    return "list", _body(limit=limit, cursor=cursor, name=name, cwd=cwd, labels=labels, meta=meta, since=since, until=until)


def search(query: str, session_id: Optional[str] = None, limit: Optional[int] = None,
           offset: Optional[int] = None, scope: Optional[str] = None, at: Optional[str] = None,
           **filters: Optional[str]) -> Request:
    """Messages whose text has every word of query (in double quotes: the
    phrase), best first. Each hit's "matches" are byte ranges of the UTF-8
    of its "snippet": snippet.encode()[start:end].decode(). Within a
    session, its current branch unless scope says otherwise ("subtree":
    at and everything under it; "session": every branch). filters: role,
    tool, path, model, agent, cwd, since, until (RFC 3339)."""
    unknown = set(filters) - {"role", "tool", "path", "model", "agent", "cwd", "label", "since", "until"}
    if unknown:
        raise TypeError(f"search: unknown filters {sorted(unknown)}")
    return "search", _body(query=query, session=session_id, limit=limit, offset=offset, scope=scope, at=at, **filters)


def usage(by: Optional[List[str]] = None, since: Optional[str] = None, until: Optional[str] = None,
          model: Optional[str] = None, project: Optional[str] = None, agent: Optional[str] = None,
          session_id: Optional[str] = None, limit: Optional[int] = None) -> Request:
    """Tokens and cost summed across sessions, grouped by by (of "day",
    "month", "model", "project", "agent", "session"; None: day and model;
    []: the total alone), narrowed by since and until (days, both
    included), model, project (a directory and below), agent, session."""
    body = _body(since=since, until=until, model=model, project=project, agent=agent, session=session_id, limit=limit)
    if by is not None:
        body["by"] = list(by)
    return "usage", body


def wait(session_id: str, sequence: int, timeout_ms: Optional[int] = None) -> Request:
    return "wait", _body(session=session_id, sequence=sequence, timeoutMs=timeout_ms)


def idempotent(op: str, body: Dict[str, Any]) -> bool:
    """Whether a request may be sent again when its outcome is unknown:
    reads, and appends whose entries all carry ids of the client's."""
    if op in ("open", "context", "tree", "entries", "stats", "list", "wait", "search", "usage", "blob", "putblob"):
        return True
    if op == "append":
        return all(isinstance(e, dict) and e.get("id") for e in body.get("entries", []))
    return False
