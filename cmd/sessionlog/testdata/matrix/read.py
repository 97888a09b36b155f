"""Reads every session named on the command line with the Python client
over HTTP (its tree, entries and context, page by page) and prints what it
read of each as one JSON line.

Usage: python3 read.py URL ID...  (the client's src folder on PYTHONPATH)
"""
import json
import sys

from sessionlog import Client

url, ids = sys.argv[1], sys.argv[2:]
out = {}
with Client(url) as c:
    for id in ids:
        got = {"tree": 0, "entries": 0, "context": 0}
        offset = 0
        while True:
            p = c.tree(id, offset)
            got["tree"] += len(p["nodes"])
            offset = p.get("next", 0)
            if not offset:
                break
        offset = 0
        while True:
            p = c.entries(id, offset, 1000)
            got["entries"] += len(p["entries"])
            offset = p.get("next", 0)
            if not offset:
                break
        got["context"] = len(c.context_all(id)["messages"])
        out[id] = got
print(json.dumps(out))
