import asyncio
import threading

import pytest

import sessionlog
from conftest import assistant, user


def test_every_operation(client, sid):
    s = client.create(id=sid, cwd="/work", name="py session")
    assert s["session"]["id"] == sid
    a = client.append(sid, [user("hello"), assistant("hi there")])
    assert len(a["entries"]) == 2 and a["leaf"] == a["entries"][1]["id"]
    first = a["entries"][0]["id"]
    one = client.get(sid, first)
    assert one["entry"]["id"] == first and one["entry"]["message"]["content"] == "hello"
    ctx = client.context(sid)
    assert [m["role"] for m in ctx["messages"]] == ["user", "assistant"]
    assert ctx["model"] == {"provider": "anthropic", "modelId": "claude-x"}
    client.label(sid, first, "start")
    client.name(sid, "renamed")
    opened = client.open(sid)
    assert opened["session"]["name"] == "renamed" and opened["labels"][0]["label"] == "start"
    tree = client.tree(sid)
    assert tree["nodes"]
    entries = client.entries(sid)
    assert len(entries["entries"]) == 5  # the name given at creation, two messages, a label, a name
    assert client.stats(sid)["messages"] == 2
    client.move(sid, first, summary="went back")
    assert [m["role"] for m in client.context(sid)["messages"]] == ["user", "branchSummary"]
    f = client.fork(sid, id=sid + "-fork", at=first)
    assert f["session"]["id"] == sid + "-fork"
    ids = {s["id"] for s in client.sessions(page=1)}
    assert {sid, sid + "-fork"} <= ids
    w = client.wait(sid, opened["sequence"])
    assert w["leaf"]
    client.delete(sid + "-fork")
    with pytest.raises(sessionlog.NotFoundError):
        client.open(sid + "-fork")


def test_typed_errors(client, sid):
    with pytest.raises(sessionlog.InvalidSessionIDError):
        client.open("not a valid id")
    client.create(id=sid)
    with pytest.raises(sessionlog.ExistsError):
        client.create(id=sid)
    with pytest.raises(sessionlog.InvalidEntryError) as e:
        client.append(sid, [{"type": "message", "message": {"role": "robot", "content": "x", "timestamp": 1}}])
    assert e.value.field and "role" in e.value.field
    with pytest.raises(sessionlog.BlobNotFoundError):
        client.get_blob("0" * 64)


def test_conflict_carries_where_the_session_is(client, sid):
    client.create(id=sid)
    a = client.append(sid, [user("one")])
    client.append(sid, [user("two")])
    with pytest.raises(sessionlog.ConflictError) as e:
        client.append(sid, [user("stale")], if_sequence=a["sequence"])
    assert e.value.sequence > a["sequence"] and e.value.leaf


def test_update_loop_loses_nothing(connect, sid):
    with connect() as c:
        c.create(id=sid)
    errors = []

    def writer(n):
        try:
            with connect() as c:
                for k in range(10):
                    c.update(sid, lambda leaf, seq: [user(f"w{n} k{k}")])
        except Exception as ex:  # noqa: BLE001 - reported below
            errors.append(ex)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with connect() as c:
        texts = [e["message"]["content"] for e in c.entries(sid, limit=100)["entries"]]
    assert sorted(texts) == sorted(f"w{n} k{k}" for n in range(4) for k in range(10))


def test_retried_append_with_client_ids_is_stored_once(client, sid):
    client.create(id=sid)
    batch = [user("once", id=sessionlog.new_id())]
    client.append(sid, batch, parent="")
    client.append(sid, batch, parent="")  # a retry of the same entries
    assert len(client.entries(sid)["entries"]) == 1


def test_blobs(client):
    data = bytes(range(256)) * 1000
    ref = client.put_blob(data)["blob"]
    assert ref["size"] == len(data)
    assert client.get_blob(ref["$blob"]) == data


def test_events_follow_and_resume(client, connect, sid):
    client.create(id=sid)
    client.append(sid, [user("before")])
    seen = []
    for ev in client.events(sid, after=0):
        seen.append(ev)
        if ev.kind == "entry" and len([e for e in seen if e.kind == "entry"]) == 1:
            with connect() as other:
                other.append(sid, [user("after")])
        if len([e for e in seen if e.kind == "entry"]) == 2:
            break
    entries = [e for e in seen if e.kind == "entry"]
    assert [e.data["message"]["content"] for e in entries] == ["before", "after"]
    resumed = next(iter(client.events(sid, after=entries[0].id)))
    assert resumed.data["message"]["content"] == "after"


def test_async_client(connect, sid):
    async def main():
        async with connect(sessionlog.AsyncClient) as c:
            await c.create(id=sid)
            await c.append(sid, [user("async hello")])
            await c.update(sid, lambda leaf, seq: [assistant("async reply")])
            ctx = await c.context(sid)
            assert [m["role"] for m in ctx["messages"]] == ["user", "assistant"]
            with pytest.raises(sessionlog.NotFoundError):
                await c.open(sid + "-none")
            async for ev in c.events(sid, after=0):
                assert ev.kind in ("header", "entry")
                if ev.kind == "entry":
                    break
    asyncio.run(main())


def test_large_content(client, sid):
    import base64
    import os
    img = os.urandom(3 << 20)  # larger than a request: the gateway sends it on as an upload
    client.create(id=sid)
    data = base64.b64encode(img).decode()
    client.append(sid, [{"type": "message", "message": {"role": "user", "timestamp": 1, "content": [
        {"type": "text", "text": "look"}, {"type": "image", "data": data, "mimeType": "image/png"}]}}])
    ctx = client.context(sid)
    assert ctx["messages"][0]["content"][1]["data"] == data
    ref = client.put_blob(img)["blob"]
    assert client.get_blob(ref["$blob"]) == img


def test_search_and_filters(client, connect, sid):
    client.create(id=sid, cwd="/work/py-search", metadata={"team": "py"})
    a = client.append(sid, [user("the périgourdine xylograph"), assistant("noted")])
    client.label(sid, a["entries"][0]["id"], "found")
    # The index follows the stream: within moments.
    for _ in range(200):
        r = client.search("xylograph")
        if r["total"]:
            break
        threading.Event().wait(0.05)
    hit = r["hits"][0]
    assert hit["session"] == sid and hit["entry"] == a["entries"][0]["id"]
    start, end = hit["matches"][0]
    assert hit["snippet"].encode()[start:end].decode() == "xylograph"  # byte ranges, past a non-ASCII letter
    with pytest.raises(sessionlog.BadRequestError):
        client.search("  ")
    # Within a session: its current branch, unless the scope says otherwise.
    first = a["entries"][0]["id"]
    left = client.append(sid, [user("a xylograph left behind")])["entries"][0]["id"]
    client.move(sid, first)
    for _ in range(200):
        if client.search("xylograph", session=sid, scope="session")["total"] == 2:
            break
        threading.Event().wait(0.05)
    assert [h["entry"] for h in client.search("xylograph", session=sid)["hits"]] == [first]
    assert {h["entry"] for h in client.search("xylograph", session=sid, scope="subtree", at=first)["hits"]} == {first, left}
    with pytest.raises(sessionlog.BadRequestError):
        client.search("xylograph", session=sid, scope="subtree")
    assert client.search("xylograph", session=sid, scope="session", role="user")["total"] == 2
    # Usage across sessions: this session's one reply, by model, in its
    # project; the total alone with by=[].
    for _ in range(200):
        u = client.usage(by=["model", "project"], project="/work/py-search")
        if u["sessions"]:
            break
        threading.Event().wait(0.05)
    assert [(r["model"], r["project"], r["turns"], r["tokens"]) for r in u["rows"]] == [("anthropic/claude-x", "/work/py-search", 1, 3)]
    total = client.usage(by=[], session=sid)
    assert (total["by"], len(total["rows"]), total["total"]["turns"]) == ([], 1, 1)
    with pytest.raises(sessionlog.BadRequestError):
        client.usage(by=["week"])
    assert client.search("xylograph", session=sid, scope="session", role="assistant")["total"] == 0
    assert client.search("xylogr*", session=sid, scope="session", since="2000-01-01T00:00:00Z")["total"] == 2
    with pytest.raises(sessionlog.BadRequestError):
        client.search("xylograph", since="yesterday")
    # The listing's record follows the label within a second or so.
    for _ in range(100):
        listed = list(client.sessions(page=1, labels=["found"], meta={"team": "py"}, cwd="/work"))
        if listed:
            break
        threading.Event().wait(0.05)
    assert [s["id"] for s in listed] == [sid]
    assert listed[0]["labels"] == ["found"] and listed[0]["metadata"] == {"team": "py"}

    async def main():
        async with connect(sessionlog.AsyncClient) as c:
            return (await c.search("xylograph", session=sid))["total"]
    assert asyncio.run(main()) == 1


def test_pi16_and_unknown_entry_types(client, sid):
    """pi 1.6's usage and context_edit entries, and a type sessionlog does
    not know, are stored as sent: members and their order kept, the
    unknown type leaving the context alone."""
    client.create(id=sid, cwd="/work")
    first = client.append(sid, [user("hello")])["entries"][0]["id"]
    usage = {"type": "usage", "kind": "cache_warm", "provider": "anthropic", "model": "claude-x",
             "usage": {"input": 5, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 5,
                       "cost": {"input": 0.01, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.01}}}
    future = {"type": "some_future_type", "zeta": {"b": 1, "a": [True, None]}, "alpha": "x"}
    edit = {"type": "context_edit", "targetId": first, "replacement": {"content": "hello (edited)"}}
    client.append(sid, [usage, future, edit])
    stored = client.entries(sid)["entries"][-3:]
    for sent, got in zip([usage, future, edit], stored):
        members = [k for k in got if k not in ("id", "parentId", "timestamp")]
        assert members == list(sent), (members, list(sent))
        assert all(got[k] == v for k, v in sent.items())
    ctx = client.context(sid)
    assert [m["content"] for m in ctx["messages"]] == ["hello (edited)"]
    with pytest.raises(sessionlog.InvalidEntryError):
        client.append(sid, [{"type": "usage", "kind": "k", "provider": "p", "model": "m"}])


def test_replica_reads(client, sid):
    client.create(id=sid)
    a = client.append(sid, [user("fresh")])
    assert client.open(sid, consistency="replica", max_lag_ms=5000)["session"]["leaf"] == a["leaf"]
    assert [m["content"] for m in client.context(sid, consistency="replica")["messages"]] == ["fresh"]
    assert client.get(sid, a["leaf"], consistency="replica")["entry"]["id"] == a["leaf"]
    assert len(client.entries(sid, consistency="linearizable")["entries"]) == 1
    with pytest.raises(sessionlog.BadRequestError) as e:
        client.tree(sid, consistency="eventual")
    assert e.value.field == "/consistency"
    with pytest.raises(sessionlog.BadRequestError) as e:
        client.stats(sid, consistency="replica", max_lag_ms=60001)
    assert e.value.field == "/maxLagMs"


def test_refused_connection_is_unavailable():
    # A port nothing listens on: bound, then closed. The same class as the
    # TypeScript client's, sync and async alike.
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(sessionlog.UnavailableError, match="cannot connect"):
        sessionlog.Client(f"http://127.0.0.1:{port}", retries=0).open("x")

    async def run():
        async with sessionlog.AsyncClient(f"http://127.0.0.1:{port}", retries=0) as c:
            await c.open("x")

    with pytest.raises(sessionlog.UnavailableError, match="cannot connect"):
        asyncio.run(run())


def test_deepest_entry_reads_back(client, sid):
    # Every write path bounds a member's nesting at 512 (session.MaxDepth):
    # what is stored is what Python's own JSON reader can read back.
    client.create(id=sid)
    deep = []
    for _ in range(511):
        deep = [deep]
    client.append(sid, [{"type": "message", "deep": deep, "message": {"role": "user", "content": "x", "timestamp": 1}}])
    entries = client.entries(sid)["entries"]
    got, depth = entries[-1]["deep"], 1
    while got:
        got, depth = got[0], depth + 1
    assert depth == 512
    with pytest.raises(sessionlog.InvalidEntryError) as e:
        client.append(sid, [{"type": "message", "deep": [deep], "message": {"role": "user", "content": "x", "timestamp": 1}}])
    assert e.value.field.endswith("/deep")
