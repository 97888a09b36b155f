package api

// OpNode asks the node that answers how it is, beyond what JetStream
// tells of its streams: its own connections, an edge's link to its hub,
// the edges revoked at a hub. The status verb shows it.
const OpNode = "node"

// NodeReply is how the answering node is. Warnings are what its operator
// must look at (status exits 1); Notes are what happened that they
// should know of.
type NodeReply struct {
	Name     string   `json:"name"`
	Warnings []string `json:"warnings,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}
