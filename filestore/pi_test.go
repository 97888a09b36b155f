package filestore_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// piBranch reads a file the way pi's loader does: the last line is the
// leaf, and the branch is the walk up its parentIds.
func piBranch(t *testing.T, data []byte) []string {
	t.Helper()
	type line struct {
		ID       string  `json:"id"`
		ParentID *string `json:"parentId"`
		Type     string  `json:"type"`
	}
	byID := map[string]line{}
	var last line
	for i, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var e line
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("line %d is not JSON pi can parse: %v", i+1, err)
		}
		if e.Type == "session" {
			continue
		}
		byID[e.ID] = e
		last = e
	}
	var path []string
	for cur, ok := last, last.ID != ""; ok; {
		if cur.Type != string(session.TypeLeaf) {
			path = append(path, cur.ID)
		}
		if cur.ParentID == nil {
			break
		}
		cur, ok = byID[*cur.ParentID]
	}
	slices.Reverse(path)
	return path
}

// pi's files open directly, unchanged; what we append keeps them readable
// by pi with the same branch we see.
func TestPiFilesBothWays(t *testing.T) {
	for _, sample := range sessiontest.PiSamples(t) {
		t.Run(sample.Name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), sample.Name)
			if err := os.WriteFile(p, sample.Data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := filestore.Open(ctx, p, filestore.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			sessiontest.CheckPi(t, s, sample.Expected)
			h, _ := s.Header(ctx)
			all, _ := s.Entries(ctx)
			enc, err := codec.EncodeFile(&h, all)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, sample.Data) {
				t.Fatal("re-encoding the loaded session does not give pi's file back byte for byte")
			}

			sess, _ := session.New(s, sessiontest.TestConfig())
			branch, _ := sess.Branch(ctx, "")
			mid := branch[len(branch)/2]
			steps := []func() error{
				func() error {
					_, err := sess.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("from sessionlog")})
					return err
				},
				func() error { _, err := sess.MoveTo(ctx, mid.ID); return err },
			}
			for i, step := range steps {
				if err := step(); err != nil {
					t.Fatal(err)
				}
				data, _ := os.ReadFile(p)
				if !bytes.HasPrefix(data, sample.Data) {
					t.Fatal("appending rewrote pi's lines")
				}
				ours, _ := sess.Branch(ctx, "")
				var ids []string
				for _, e := range ours {
					ids = append(ids, e.ID)
				}
				if got := piBranch(t, data); !slices.Equal(got, ids) {
					t.Fatalf("after step %d pi would see branch %v, we see %v", i+1, got, ids)
				}
			}
			s.Close(ctx)
		})
	}
}
