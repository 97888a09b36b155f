package lifecycle_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
)

// Every pi sample, archived to a directory and to the object store,
// deleted, and brought back (under its id and under another) has the
// tree, leaf and context digests it had.
func TestArchiveRoundTrip(t *testing.T) {
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	obs, err := lifecycle.OpenStoreTarget(ctx, js, "TEST_ARCHIVE", 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, repo := range repos(t) {
		for tname, target := range map[string]lifecycle.Target{"dir": lifecycle.DirTarget{Dir: t.TempDir()}, "store": obs} {
			t.Run(name+"/"+tname, func(t *testing.T) {
				for _, id := range loadSamples(t, repo, tname) {
					before, err := lifecycle.DigestsIn(ctx, repo, id)
					if err != nil {
						t.Fatal(err)
					}
					m, err := lifecycle.Archive(ctx, repo, id, target, time.Now())
					if err != nil {
						t.Fatalf("%s: %v", id, err)
					}
					if m.Digests != before || m.Entries == 0 {
						t.Fatalf("%s: manifest %+v, session %+v", id, m.Digests, before)
					}
					if err := repo.Delete(ctx, id); err != nil {
						t.Fatal(err)
					}
					if _, err := lifecycle.Unarchive(ctx, repo, target, id, ""); err != nil {
						t.Fatalf("%s: unarchive: %v", id, err)
					}
					if _, err := lifecycle.Unarchive(ctx, repo, target, id, id+"-copy"); err != nil {
						t.Fatalf("%s: unarchive as a copy: %v", id, err)
					}
					for _, got := range []string{id, id + "-copy"} {
						after, err := lifecycle.DigestsIn(ctx, repo, got)
						if err != nil || after != before {
							t.Fatalf("%s: %+v (%v), want %+v", got, after, err, before)
						}
					}
					if _, err := lifecycle.Unarchive(ctx, repo, target, id, ""); !errors.Is(err, session.ErrSessionExists) {
						t.Fatalf("%s: unarchive over an existing session: %v", id, err)
					}
				}
			})
		}
	}
}

// A damaged archive is refused, naming the object and what is wrong, and
// nothing is restored from it.
func TestDamagedArchivesAreRefused(t *testing.T) {
	ctx := context.Background()
	repo := repos(t)["files"]
	id := loadSamples(t, repo, "damaged")[0]
	dir := t.TempDir()
	target := lifecycle.DirTarget{Dir: dir}
	if _, err := lifecycle.Archive(ctx, repo, id, target, time.Now()); err != nil {
		t.Fatal(err)
	}
	data, manifest := filepath.Join(dir, id+".jsonl.gz"), filepath.Join(dir, id+".manifest.json")
	good, _ := os.ReadFile(data)
	goodM, _ := os.ReadFile(manifest)
	for name, damage := range map[string]func(){
		"a flipped byte":   func() { b := bytes.Clone(good); b[len(b)/2] ^= 0x40; os.WriteFile(data, b, 0o600) },
		"truncated":        func() { os.WriteFile(data, good[:len(good)/2], 0o600) },
		"the file missing": func() { os.Remove(data) },
		"another's manifest": func() {
			os.WriteFile(manifest, bytes.Replace(goodM, []byte(`"session": "`+id), []byte(`"session": "other`), 1), 0o600)
		},
		"a manifest not json": func() { os.WriteFile(manifest, []byte("{"), 0o600) },
		"a digest that differs": func() {
			os.WriteFile(manifest, bytes.Replace(goodM, []byte(`"leaf": "`), []byte(`"leaf": "x`), 1), 0o600)
		},
	} {
		os.WriteFile(data, good, 0o600)
		os.WriteFile(manifest, goodM, 0o600)
		damage()
		_, err := lifecycle.Unarchive(ctx, repo, target, id, "restored")
		if !errors.Is(err, lifecycle.ErrBadArchive) || !strings.Contains(err.Error(), id) {
			t.Errorf("%s: %v, want ErrBadArchive naming %s", name, err, id)
		}
		if st, err := repo.Open(ctx, "restored"); !errors.Is(err, session.ErrSessionNotFound) {
			if st != nil {
				st.Close(ctx)
			}
			t.Errorf("%s: something was restored (%v)", name, err)
		}
	}
	if _, err := lifecycle.Unarchive(ctx, repo, target, "never", ""); !errors.Is(err, lifecycle.ErrNotArchived) {
		t.Errorf("no archive: %v", err)
	}
}
