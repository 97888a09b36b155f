package api

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/session"
)

// LinkRequest asks a hub to take in an edge node's sessions: its streams
// (the same layout as the hub's) in JetStream domain Domain.
type LinkRequest struct {
	Domain  string   `json:"domain"`
	Streams []string `json:"streams"`
	// Redact is the redaction every entry the edge holds went through
	// (a redact config: {"defaults":bool,"rules":[{"name","pattern"}]}).
	// The hub takes in an edge only when it covers the tenant's rules:
	// nothing a rule would catch leaves the machine.
	Redact jsontext.Value `json:"redact,omitempty"`
	// Resume says the edge's link has just come back: the hub starts its
	// sourcing of the edge again at once, where it stood (JetStream
	// retries a source that lost the other side at growing intervals, up
	// to two minutes). At most once every ResumeEvery per edge.
	Resume bool `json:"resume,omitempty"`
}

// ResumeEvery bounds how often an edge's Resume restarts the hub's
// sourcing of it (each restart is a change of the streams' config).
const ResumeEvery = 10 * time.Second

// LinkReply names the hub's streams that source the edge, and the hub's
// JetStream domain, where the edge's streams source the hub's sessions.
// Behind is how many of the edge's messages (entries, and chunks of
// content stored apart) the hub has still to take in, as JetStream's
// sourcing counts them; Heard is false while some stream of the hub has
// not heard from the edge in the last seconds (since it began sourcing
// it, or since the link came back): Behind is not known then.
type LinkReply struct {
	Streams []string `json:"streams"`
	Domain  string   `json:"domain"`
	Behind  uint64   `json:"behind"`
	Heard   bool     `json:"heard"`
}

// Apart is a branch written on another node while apart: its tip (the
// leaf that node's last entry set), when that entry was written, and the
// node (its JetStream domain). The leaf of the session is the tip of
// the node that wrote last (docs/edges.md).
type Apart struct {
	Origin string `json:"origin"`
	Leaf   string `json:"leaf"`
	At     string `json:"at"`
}

// ApartOf is the protocol's form of a tree's branches written apart
// (session.Tree.Apart); nil for none.
func ApartOf(as []session.Apart) []Apart {
	var out []Apart
	for _, a := range as {
		out = append(out, Apart(a))
	}
	return out
}
