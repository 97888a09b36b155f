"""The service's replies, as TypedDicts: what each call of Client and
AsyncClient returns. Keys a reply always has are declared in the
_<Name>Required part, the others in <Name> (total=False). They mirror the
protocol's reply types (api/protocol.go); clients/types_test.go keeps the
two the same."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, TypedDict


class _ListingRequired(TypedDict):
    id: str
    created: str
    updated: str
    entries: int


class Listing(_ListingRequired, total=False):
    """A session as a listing shows it."""
    cwd: str
    parentSession: str
    name: str
    leaf: str
    labels: List[str]
    metadata: Any
    firstMessage: str
    model: str
    tokens: int
    cost: float
    unpricedTokens: int
    lastActivity: str


class LabelReply(TypedDict):
    id: str
    label: str
    timestamp: str


class DeletedReply(TypedDict):
    messages: int
    snapshots: int
    blobsDeleted: int
    blobsShared: int
    blobsYoung: int


class _SessionReplyRequired(TypedDict):
    session: Listing


class SessionReply(_SessionReplyRequired, total=False):
    header: Dict[str, Any]
    labels: List[LabelReply]
    sequence: int
    copied: int
    deleted: DeletedReply


class Appended(TypedDict):
    id: str
    parentId: str


class AppendReply(TypedDict):
    entries: List[Appended]
    leaf: str
    sequence: int


class ModelReply(TypedDict):
    provider: str
    modelId: str


class Apart(TypedDict):
    """A branch another node wrote while apart, off the current branch."""
    origin: str
    leaf: str
    at: str


class _ContextReplyRequired(TypedDict):
    thinkingLevel: str
    model: Optional[ModelReply]
    messages: List[Dict[str, Any]]
    sources: List[str]
    leaf: str
    sequence: int
    total: int


class ContextReply(_ContextReplyRequired, total=False):
    activeTools: List[str]
    compaction: str
    apart: List[Apart]
    offset: int
    next: int


class _ListReplyRequired(TypedDict):
    sessions: List[Listing]


class ListReply(_ListReplyRequired, total=False):
    next: str


class _TreeNodeRequired(TypedDict):
    id: str
    type: str
    timestamp: str
    row: int


class TreeNode(_TreeNodeRequired, total=False):
    parentId: str
    role: str
    label: str
    target: str
    summary: str
    customType: str
    tools: List[str]
    calls: List[str]
    turn: str
    thinking: bool
    error: bool
    head: bool
    depth: int
    branch: bool


class _TreeReplyRequired(TypedDict):
    leaf: str
    sequence: int
    nodes: List[TreeNode]
    total: int


class TreeReply(_TreeReplyRequired, total=False):
    next: int
    apart: List[Apart]


class GetReply(TypedDict):
    entry: Dict[str, Any]
    sequence: int


class _EntriesReplyRequired(TypedDict):
    entries: List[Dict[str, Any]]
    total: int
    sequence: int


class EntriesReply(_EntriesReplyRequired, total=False):
    next: int


class _UsageReplyRequired(TypedDict):
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    totalTokens: int
    cost: float
    turns: int
    calls: int


class UsageReply(_UsageReplyRequired, total=False):
    """A session's usage, each API call once; cost leaves out the calls of a
    model without a price, which unpricedCalls counts."""
    unpricedCalls: int
    unpricedTokens: int


class _UsageDayRequired(TypedDict):
    day: str
    model: str
    replies: int
    input: int
    output: int
    cost: float


class UsageDay(_UsageDayRequired, total=False):
    calls: int
    cacheRead: int
    cacheWrite: int
    tokens: int
    unpricedCalls: int
    unpricedTokens: int


class _StatsReplyRequired(TypedDict):
    entries: int
    byType: Dict[str, int]
    messages: int
    byRole: Dict[str, int]
    toolCalls: int
    compactions: int
    branchSummaries: int
    redactions: int
    usage: UsageReply
    sequence: int


class StatsReply(_StatsReplyRequired, total=False):
    timeline: List[UsageDay]
    timelineCut: bool


class WaitReply(TypedDict):
    leaf: str
    sequence: int


class BlobReply(TypedDict):
    blob: Dict[str, Any]


class _SearchHitRequired(TypedDict):
    session: str
    entry: str
    type: str
    timestamp: str
    score: float
    snippet: str
    matches: List[Tuple[int, int]]


class SearchHit(_SearchHitRequired, total=False):
    role: str
    outsideContext: bool


class _SearchReplyRequired(TypedDict):
    hits: List[SearchHit]
    total: int


class SearchReply(_SearchReplyRequired, total=False):
    """Hits, best first; totalEstimated: total is an estimate (common words
    search the newest entries first and count the older at their rate)."""
    totalEstimated: bool


class _UsageRowRequired(TypedDict):
    turns: int
    calls: int
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    tokens: int
    cost: float
    tokensPerTurn: float
    costPerTurn: float


class UsageRow(_UsageRowRequired, total=False):
    """One group's usage: its values of the dimensions asked for (turns are
    assistant replies, calls usage entries), and averages per turn; cost
    leaves out the calls of a model without a price (unpricedCalls)."""
    unpricedCalls: int
    unpricedTokens: int
    day: str
    month: str
    model: str
    project: str
    agent: str
    session: str


class _UsageReportRequired(TypedDict):
    by: List[str]
    rows: List[UsageRow]
    total: UsageRow
    sessions: int
    groups: int


class UsageReport(_UsageReportRequired, total=False):
    """Usage across sessions: rows ordered by the dimensions, the total of
    every row (those past the limit included)."""
    cut: bool
