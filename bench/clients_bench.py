# Times the Python client (clients/python) against a gateway: appends of
# one user message and contexts of a session, one at a time; prints the
# p50s in milliseconds as JSON. usage: python3 clients_bench.py URL N
import json
import statistics
import sys
import time
import uuid

import sessionlog

url, n = sys.argv[1], int(sys.argv[2])
with sessionlog.Client(url) as c:
    sid = "pybench-" + uuid.uuid4().hex[:8]
    c.create(id=sid)
    msg = {"type": "message", "message": {"role": "user", "content": "x" * 900, "timestamp": 1}}
    appends, contexts = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        c.append(sid, [msg])
        appends.append(time.perf_counter() - t0)
    for _ in range(n):
        t0 = time.perf_counter()
        c.context(sid)
        contexts.append(time.perf_counter() - t0)
print(json.dumps({"append": statistics.median(appends) * 1000, "context": statistics.median(contexts) * 1000}))
