"""Parsing server-sent events (the gateway's /events stream)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, List, Optional


@dataclass
class Event:
    """One event of a session's stream: kind "entry" (data: the entry, pi
    v3 JSON) or "header"; id is its stream sequence, to resume after."""

    id: int
    kind: str
    data: Any


class StreamError(Exception):
    """The stream reported an error (code, message, last_event_id)."""

    def __init__(self, data: Any) -> None:
        self.data = data
        self.code = data.get("code") if isinstance(data, dict) else None
        self.last_event_id = data.get("lastEventId") if isinstance(data, dict) else None
        super().__init__(str(data))


def parse(lines: Iterable[str]) -> Iterator[Event]:
    """Events from the lines of a text/event-stream body."""
    kind, ident, data = "message", None, []  # type: str, Optional[str], List[str]
    for line in lines:
        line = line.rstrip("\r\n")  # some httpx versions keep the line end
        if line == "":
            if data:
                payload = json.loads("\n".join(data))
                if kind == "error":
                    raise StreamError(payload)
                yield Event(int(ident) if ident else 0, kind, payload)
            kind, ident, data = "message", None, []
            continue
        if line.startswith(":"):
            continue  # a comment (keep-alive)
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            kind = value
        elif field == "id":
            ident = value
        elif field == "data":
            data.append(value)
