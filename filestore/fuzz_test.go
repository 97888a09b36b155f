package filestore_test

import (
	"bytes"
	"testing"

	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// Any bytes either fail to load with a reason, or load to a session that,
// written out and loaded again, is the same session.
func FuzzLoad(f *testing.F) {
	for _, s := range sessiontest.PiSamples(f) {
		f.Add(s.Data[:min(len(s.Data), 4000)])
	}
	f.Add([]byte(header + "\n" + user("a", "") + "\n" + user("b", "a") + "\n"))
	f.Add([]byte(header + "\n" + user("b", "c") + "\n" + user("c", "b") + "\n"))
	f.Add([]byte(`{"type":"session","id":"old","cwd":"/"}` + "\n" + `{"type":"message","message":{"role":"user","content":"x"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ld, err := filestore.Load(data, "fuzz", filestore.Lenient)
		if err != nil {
			return
		}
		h := ld.Tree.Header()
		out, err := filestore.Encode(&h, sessiontest.Entries(t, ld.Tree))
		if err != nil {
			t.Fatalf("a loaded session does not encode: %v", err)
		}
		again, err := filestore.Load(out, "again", filestore.Strict)
		if err != nil {
			t.Fatalf("what we wrote does not load strictly: %v\n%s", err, out)
		}
		if again.Tree.Len() != ld.Tree.Len() {
			t.Fatalf("%d entries became %d", ld.Tree.Len(), again.Tree.Len())
		}
		h2 := again.Tree.Header()
		out2, _ := filestore.Encode(&h2, sessiontest.Entries(t, again.Tree))
		if !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n---\n%s", out, out2)
		}
		if len(ld.Issues) == 0 || ld.Torn && len(ld.Issues) == 1 {
			if _, err := filestore.Load(data, "fuzz", filestore.Strict); err != nil {
				t.Fatalf("lenient found no problem but strict refused: %v", err)
			}
		}
	})
}
