package api

// Generations being streamed (see stream/live): a chat app's reply as its
// chunks are made, kept so that readers can join it from the start or
// come back after a cut, on any node, and stopped by anyone.
const (
	// OpLiveStart starts a generation (LiveStartRequest).
	OpLiveStart = "livestart"
	// OpLivePut adds chunks to one (LivePutRequest).
	OpLivePut = "liveput"
	// OpLiveEnd ends one: its readers stop there (LiveWriteRequest).
	OpLiveEnd = "liveend"
	// OpLiveStop ends one for everyone, whoever writes it (LiveRequest).
	OpLiveStop = "livestop"
	// OpLiveState says where one stands (LiveRequest).
	OpLiveState = "livestate"
)

// LiveRequest names a generation. Its id is any string of up to 512
// bytes (the client's: resumable-stream's stream id, say).
type LiveRequest struct {
	Stream string `json:"stream"`
}

// LiveStartRequest starts generation Stream for Writer, a token of the
// writer's, the same when the request is sent again. TTLMs is how long
// each record is kept (0: 24 hours; at most 7 days).
type LiveStartRequest struct {
	Stream string `json:"stream"`
	Writer string `json:"writer"`
	TTLMs  int64  `json:"ttlMs,omitzero"`
}

// LiveWriteRequest is a writer's record after the one at sequence After
// (the Seq of its last reply): an end (liveend), or chunks (LivePutRequest).
type LiveWriteRequest struct {
	Stream string `json:"stream"`
	Writer string `json:"writer"`
	After  uint64 `json:"after"`
	TTLMs  int64  `json:"ttlMs,omitzero"`
}

// LivePutRequest adds Chunks (strings, in order) after the record at
// After. Continues says the last chunk goes on in the next put: a chunk
// larger than a request is sent in pieces and read back whole.
type LivePutRequest struct {
	LiveWriteRequest
	Chunks    []string `json:"chunks"`
	Continues bool     `json:"continues,omitzero"`
}

// LiveReply says where a generation stands. State is "none" (no record:
// never started, or expired), "running", "done" or "stopped"; Seq is its
// last record's sequence, the After of the writer's next write. Started,
// on a livestart, says whether this writer started it. JetStream and
// Subject are where readers consume its records from the first: the
// JetStream stream of the tenant's account, and a filter subject.
type LiveReply struct {
	Stream    string `json:"stream"`
	State     string `json:"state"`
	Seq       uint64 `json:"seq,omitzero"`
	Started   bool   `json:"started,omitzero"`
	JetStream string `json:"jetstream"`
	Subject   string `json:"subject"`
}

// The states of a generation in LiveReply.
const (
	LiveNone    = "none"
	LiveRunning = "running"
	LiveDone    = "done"
	LiveStopped = "stopped"
)
