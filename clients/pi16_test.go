package clients

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessionkit"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// pi 1.6.0's own SessionManager writes fresh sessions, through every
// append method it has, from a seed of this run (logged: the run can be
// repeated with SESSIONLOG_PI_SEED); every backend stores them as a
// writer would and gives back pi's context, leaf, labels, name and tree,
// and every line byte for byte. The samples under
// session/sessiontest/testdata/pi16 were made the same way.
func TestPi16SessionsConform(t *testing.T) {
	node, modules := piNode(t)
	seed := fmt.Sprint(time.Now().UnixNano() % 1_000_000_007)
	if s := os.Getenv("SESSIONLOG_PI_SEED"); s != "" {
		seed = s
	}
	t.Logf("seed %s", seed)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gen, _ := filepath.Abs(filepath.Join("..", "session", "sessiontest", "pigen", "generate.mjs"))
	if b, err := exec.CommandContext(ctx, node, gen, modules, out, seed, "6", "80").CombinedOutput(); err != nil {
		t.Fatalf("pi's generator: %v\n%s", err, b)
	}
	samples := sessiontest.ReadPiSamples(t, os.DirFS(out))
	if len(samples) != 6 {
		t.Fatalf("pi wrote %d sessions, want 6", len(samples))
	}
	ts := servicetest.StartTenants(t, cluster.Tenant{Name: "pi16", Users: []cluster.User{{Name: "pi", Password: "pi-pw"}}})
	nc, err := ts.Node.ConnectTenant("pi16")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js := servicetest.Backend(t, nc)
	backends := []sessiontest.Backend{
		{Name: "memory", New: func(t *testing.T, h session.Header) session.Store { return sessionkit.NewMemoryStore(h) }},
		{Name: "jsonl", New: func(t *testing.T, h session.Header) session.Store {
			s, err := filestore.Create(context.Background(), filepath.Join(t.TempDir(), h.ID+".jsonl"), h, filestore.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, Reopen: func(t *testing.T, s session.Store) session.Store {
			path := s.(*filestore.Store).Path()
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			s2, err := filestore.Open(context.Background(), path, filestore.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			return s2
		}},
		{Name: "jetstream", New: func(t *testing.T, h session.Header) session.Store {
			s, err := js.Create(context.Background(), h)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, Reopen: func(t *testing.T, s session.Store) session.Store {
			h, err := s.Header(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			s2, err := js.Open(context.Background(), h.ID)
			if err != nil {
				t.Fatal(err)
			}
			return s2
		}},
	}
	for _, b := range backends {
		for _, sample := range samples {
			t.Run(b.Name+"/"+sample.Name, func(t *testing.T) { sessiontest.RunPiSample(t, b, sample) })
		}
	}
}
