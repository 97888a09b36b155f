"""The standard-library transport of the client's calls: keep-alive, and a
connection the server closed while idle replaced without the caller
seeing it (the request had not been read)."""
import json
import socket
import threading

from sessionlog._fastpost import Poster


def _server(replies_per_connection):
    """A server that answers each connection's first N requests with a
    keep-alive reply, then closes it; it counts the connections."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen()
    seen = {"connections": 0, "requests": 0}

    def serve(conn):
        with conn:
            f = conn.makefile("rb")
            for _ in range(replies_per_connection):
                line = f.readline()
                if not line:
                    return
                length = 0
                while True:
                    h = f.readline()
                    if h in (b"\r\n", b""):
                        break
                    k, _, v = h.decode().partition(":")
                    if k.lower() == "content-length":
                        length = int(v)
                body = f.read(length)
                seen["requests"] += 1
                out = json.dumps({"echo": json.loads(body), "n": seen["requests"]}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(out), out))

    def accept():
        while True:
            try:
                conn, _ = lsock.accept()
            except OSError:
                return
            seen["connections"] += 1
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return lsock, seen


def test_keep_alive_and_stale_connections():
    lsock, seen = _server(replies_per_connection=2)
    try:
        p = Poster("http://127.0.0.1:%d" % lsock.getsockname()[1], None, None, 5.0)
        results = [p.post("/v1/ops/open", {"i": i}) for i in range(5)]
        p.close()
    finally:
        lsock.close()
    assert [r[0] for r in results] == [200] * 5
    assert [r[1]["echo"]["i"] for r in results] == list(range(5))
    # Two requests a connection: five requests on three connections, each
    # closed one found stale and replaced.
    assert seen["connections"] == 3 and seen["requests"] == 5
