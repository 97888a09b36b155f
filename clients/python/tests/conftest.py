"""The node the tests run against: SESSIONLOG_TEST_URL (the Go test of
clients/ starts a node and its gateway and sets it), or a `sessionlog
serve` these tests build and start themselves (needs Go)."""
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

import sessionlog


@pytest.fixture(scope="session")
def url():
    given = os.environ.get("SESSIONLOG_TEST_URL")
    if given:
        yield given
        return
    if not shutil.which("go"):
        pytest.skip("set SESSIONLOG_TEST_URL to a gateway, or install Go so the tests start a node")
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    tmp = tempfile.mkdtemp(prefix="sessionlog-py-")
    binary = os.path.join(tmp, "sessionlog")
    subprocess.run(["go", "build", "-o", binary, "./cmd/sessionlog"], cwd=root, check=True)
    proc = subprocess.Popen([binary, "serve", "-data", os.path.join(tmp, "data"), "-listen", "127.0.0.1:0",
                             "-http", "127.0.0.1:0", "-rate", "10000"], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"HTTP (http://[0-9.:]+)", line)
    if not m:
        proc.kill()
        pytest.fail(f"serve said {line!r}")
    try:
        yield m.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


CREDENTIALS = {}
if os.environ.get("SESSIONLOG_TEST_USER"):
    CREDENTIALS = {"user": os.environ["SESSIONLOG_TEST_USER"], "password": os.environ.get("SESSIONLOG_TEST_PASSWORD", "")}


@pytest.fixture
def connect(url):
    """Makes clients of the node under test (with its credentials)."""
    def make(cls=sessionlog.Client):
        return cls(url, **CREDENTIALS)
    return make


@pytest.fixture
def client(connect):
    with connect() as c:
        yield c


@pytest.fixture
def sid():
    """A session id no other test uses."""
    return "py-" + uuid.uuid4().hex[:12]


def user(text, id=None):
    e = {"type": "message", "message": {"role": "user", "content": text, "timestamp": int(time.time() * 1000)}}
    if id:
        e["id"] = id
    return e


def assistant(text):
    return {"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                                           "api": "anthropic-messages", "provider": "anthropic", "model": "claude-x",
                                           "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                                                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                                           "stopReason": "stop", "timestamp": int(time.time() * 1000)}}
