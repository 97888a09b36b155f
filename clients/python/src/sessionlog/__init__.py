"""sessionlog: LLM-agent sessions (pi's format) as trees in a replicated
log on NATS JetStream. Client (sync) and AsyncClient talk to a node's HTTP
gateway; errors are SessionlogError subclasses, one per protocol code."""
from ._requests import new_id
from ._sse import Event, StreamError
from .aio import AsyncClient
from .client import Client
from .errors import *  # noqa: F401,F403
from .errors import CLASSES, SessionlogError

__all__ = ["Client", "AsyncClient", "Event", "StreamError", "SessionlogError", "new_id"] + [c.__name__ for c in CLASSES.values()]
__version__ = "0.1.0"
