package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// Digests fingerprint a session's content, whatever its id and however
// it is stored: equal digests, equal session.
type Digests struct {
	// Entries is how many entries the session holds.
	Entries int `json:"entries"`
	// Leaf is the branch tip.
	Leaf string `json:"leaf"`
	// Tree is the SHA-256 of every entry's pi JSON line, in append order.
	Tree string `json:"treeSha256"`
	// Context is the SHA-256 of the leaf's context: its thinking level,
	// model and messages as pi feeds them to the model.
	Context string `json:"contextSha256"`
}

// DigestsOf computes the digests of a complete tree.
func DigestsOf(t *session.Tree) (Digests, error) {
	return digestsOf(t, nil)
}

// digestsOf is DigestsOf with the entries' lines already encoded (a pi
// file's, header line excluded), when lines is set.
func digestsOf(t *session.Tree, lines []byte) (Digests, error) {
	entries, err := t.Entries()
	if err != nil {
		return Digests{}, err
	}
	d := Digests{Entries: len(entries), Leaf: t.Leaf()}
	h := sha256.New()
	if lines != nil {
		h.Write(lines)
	} else {
		var line []byte
		for _, e := range entries {
			if line, err = codec.AppendEntry(line[:0], e); err != nil {
				return d, err
			}
			h.Write(append(line, '\n'))
		}
	}
	d.Tree = hex.EncodeToString(h.Sum(nil))
	var branch []*session.Entry
	if d.Leaf != "" {
		if branch, err = t.Branch(d.Leaf); err != nil {
			return d, err
		}
	}
	c := session.BuildContext(branch, session.ContextOptions{})
	h.Reset()
	fmt.Fprintf(h, "thinking %q\n", c.ThinkingLevel)
	if c.Model != nil {
		fmt.Fprintf(h, "model %q %q\n", c.Model.Provider, c.Model.ModelID)
	}
	for _, m := range c.Messages {
		b, err := codec.EncodeMessage(m)
		if err != nil {
			return d, err
		}
		h.Write(append(b, '\n'))
	}
	d.Context = hex.EncodeToString(h.Sum(nil))
	return d, nil
}

// withSession opens session id of repo, runs fn on it with its header,
// and closes it: the one way this package opens a session.
func withSession(ctx context.Context, repo session.Repo, id string, fn func(st session.Store, h session.Header) error) error {
	st, err := repo.Open(ctx, id)
	if err != nil {
		return err
	}
	defer st.Close(ctx)
	h, err := st.Header(ctx)
	if err != nil {
		return err
	}
	return fn(st, h)
}

// readSession reads a session whole: its header and every entry, content
// stored apart in place.
func readSession(ctx context.Context, repo session.Repo, id string) (h session.Header, entries []*session.Entry, err error) {
	err = withSession(ctx, repo, id, func(st session.Store, hd session.Header) error {
		h = hd
		entries, err = st.Entries(ctx)
		return err
	})
	return h, entries, err
}

// treeOf reads a session whole (content stored apart in place) into a
// tree.
func treeOf(h session.Header, entries []*session.Entry) (*session.Tree, error) {
	t := session.NewTree(h)
	t.Grow(len(entries))
	for _, e := range entries {
		if err := t.Apply(e); err != nil {
			return nil, fmt.Errorf("lifecycle: session %s: %w", h.ID, err)
		}
	}
	return t, nil
}
