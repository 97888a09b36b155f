#!/usr/bin/env python3
"""A sessionlog client over the HTTP gateway, in plain Python (standard
library only), and a demo: create a session, append a user message and an
assistant reply, handle a conflict, read the context back.

    python3 sessionlog_client.py --url http://127.0.0.1:8080 [--user U --password P]

The last line printed is a JSON summary (the example's test reads it).
"""
import argparse
import hashlib
import os
import base64
import json
import sys
import time
import urllib.error
import urllib.request
import uuid


class SessionLogError(Exception):
    """An error the service returned: switch on .code (conflict,
    not_found, bad_request, rate_limited, ...)."""

    def __init__(self, status, error):
        self.status = status
        self.code = error.get("code", "unknown")
        self.field = error.get("field")
        self.leaf = error.get("leaf")
        self.sequence = error.get("sequence")
        self.retry_after_ms = error.get("retryAfterMs")
        super().__init__("%s (%d): %s" % (self.code, status, error.get("message", "")))


class SessionLog:
    def __init__(self, base_url, user=None, password=None, timeout=30):
        self.base = base_url.rstrip("/") + "/v1"
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json"}
        if user is not None:
            token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
            self.headers["Authorization"] = "Basic " + token

    def _call(self, method, path, body=None, retries=3):
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(retries + 1):
            req = urllib.request.Request(self.base + path, data=data, method=method, headers=self.headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as res:
                    return json.load(res)
            except urllib.error.HTTPError as e:
                err = SessionLogError(e.code, json.load(e).get("error", {}))
                if err.code == "rate_limited" and attempt < retries:
                    time.sleep((err.retry_after_ms or 100) / 1000)
                    continue
                raise err

    def create(self, session_id=None, **fields):
        if session_id:
            fields["id"] = session_id
        return self._call("POST", "/sessions", fields)

    def append(self, session, entries, if_sequence=None, parent=None):
        body = {"entries": entries}
        if if_sequence is not None:
            body["ifSequence"] = if_sequence
        if parent is not None:
            body["parent"] = parent
        return self._call("POST", "/sessions/%s/entries" % session, body)

    def context(self, session, refs=False):
        return self._call("GET", "/sessions/%s/context%s" % (session, "?refs=true" if refs else ""))

    def blob(self, sha256):
        """The bytes of a blob (content stored apart, named by its SHA-256)."""
        req = urllib.request.Request(self.base + "/blobs/" + sha256, headers=self.headers)
        with urllib.request.urlopen(req, timeout=self.timeout) as res:
            return res.read()

    def open(self, session):
        return self._call("GET", "/sessions/%s" % session)

    def delete(self, session):
        return self._call("DELETE", "/sessions/%s" % session)


def user_message(text):
    return {"type": "message", "message": {"role": "user", "content": text}}


def assistant_message(text, tokens_in, tokens_out):
    return {"type": "message", "message": {
        "role": "assistant", "content": [{"type": "text", "text": text}],
        "provider": "example", "model": "example-1", "stopReason": "stop",
        "usage": {"input": tokens_in, "output": tokens_out, "cacheRead": 0, "cacheWrite": 0,
                  "totalTokens": tokens_in + tokens_out,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--user")
    ap.add_argument("--password")
    ap.add_argument("--session", default="py-" + uuid.uuid4().hex[:12])
    args = ap.parse_args()
    log = SessionLog(args.url, args.user, args.password)

    created = log.create(args.session, cwd="/tmp/example")
    seq = created["sequence"]
    first = log.append(args.session, [user_message("What is 2 + 2?")], if_sequence=seq)
    seq = first["sequence"]

    # Someone else (another agent) appends meanwhile...
    log.append(args.session, [user_message("(a note from another agent)")])
    # ...so an append that insists on the sequence it saw is refused with
    # where the session is now, and the agent decides what to do: here, it
    # answers on top of the new leaf.
    conflicts = 0
    while True:
        try:
            reply = log.append(args.session, [assistant_message("4", 12, 1)], if_sequence=seq)
            break
        except SessionLogError as e:
            if e.code != "conflict":
                raise
            conflicts += 1
            seq = e.sequence

    # A screenshot larger than a request: the gateway sends it to the
    # service in pieces, and it is stored once, apart from the entry.
    shot = os.urandom(2 << 20)
    reply = log.append(args.session, [{"type": "message", "message": {
        "role": "user", "content": [{"type": "text", "text": "see the screen"},
                                    {"type": "image", "data": base64.b64encode(shot).decode(),
                                     "mimeType": "image/png"}]}}])

    ctx = log.context(args.session)
    image_ok = False
    for m in ctx["messages"]:
        content = m["content"]
        if not isinstance(content, str):
            for b in content:
                if b.get("type") == "image":
                    image_ok = base64.b64decode(b["data"]) == shot
        text = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)
        print("%-10s %s" % (m["role"], text))
    # By reference: the entry names the blob; its bytes come on demand.
    refs = log.context(args.session, refs=True)
    ref = refs["messages"][-1]["content"][1]["data"]
    blob_ok = ref["$blob"] == hashlib.sha256(shot).hexdigest() and log.blob(ref["$blob"]) == shot
    try:
        log.open("no-such-session-" + uuid.uuid4().hex[:8])
        missing = None
    except SessionLogError as e:
        missing = e.code
    print(json.dumps({"session": args.session, "leaf": reply["leaf"], "sequence": reply["sequence"],
                      "messages": len(ctx["messages"]), "conflicts": conflicts, "missing": missing,
                      "imageOk": image_ok, "blobOk": blob_ok}))


if __name__ == "__main__":
    try:
        main()
    except SessionLogError as e:
        print("sessionlog:", e, file=sys.stderr)
        sys.exit(1)
