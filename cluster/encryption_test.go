package cluster_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return []byte(hex.EncodeToString(b)) // 48 bytes
}

// markedSession writes, on a node started with cfg, a session whose
// entries carry marker: in the stream, in a snapshot, and in a blob (a
// member over the offload threshold).
func markedSession(t *testing.T, cfg cluster.Config, marker string) {
	t.Helper()
	withBackend(t, cfg, 4096, func(ctx context.Context, b *stream.Backend) {
		st, err := b.CreateStore(ctx, session.Header{ID: "enc", Timestamp: "2026-12-03T00:00:00.000Z", Cwd: "/" + marker})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close(ctx)
		big := strings.Repeat(marker+" ", 8192/len(marker))
		var entries []*session.Entry
		parent := ""
		for i, text := range []string{"the key is " + marker, big, "and again " + marker} {
			id := string(rune('a'+i)) + "0000000"
			entries = append(entries, &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: "2026-12-03T00:00:01.000Z",
				Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(text), Timestamp: 1}})
			parent = id
		}
		if err := st.AppendBatch(ctx, entries); err != nil {
			t.Fatal(err)
		}
		if err := st.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// withBackend starts a node with cfg and runs fn on a backend of it
// (members of offload bytes or more stored apart).
func withBackend(t *testing.T, cfg cluster.Config, offload int, fn func(ctx context.Context, b *stream.Backend)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(ctx)
	nc, err := n.Connect()
	if err != nil {
		t.Fatal(err)
	}
	scfg := stream.DefaultConfig()
	scfg.OffloadThreshold = offload
	b, err := stream.New(ctx, nc, scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	fn(ctx, b)
}

// readMarked reads the session back and checks every entry holds marker.
func readMarked(t *testing.T, cfg cluster.Config, marker string) {
	t.Helper()
	withBackend(t, cfg, stream.DefaultOffloadThreshold, func(ctx context.Context, b *stream.Backend) {
		st, err := b.OpenStore(ctx, "enc")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close(ctx)
		es, err := st.Entries(ctx)
		if err != nil || len(es) != 3 {
			t.Fatalf("entries: %d, %v", len(es), err)
		}
		for _, e := range es {
			if !strings.Contains(e.Message.Content.Blocks[0].Text, marker) {
				t.Fatalf("entry %s lost its text", e.ID)
			}
		}
	})
}

// holds reports whether any file under dir contains marker.
func holds(t *testing.T, dir, marker string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(marker)) {
			t.Logf("%s holds the marker", p)
			found = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// digestDir is a digest of every file's name and bytes under dir.
func digestDir(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		h.Write([]byte(p))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// With a key, no byte of a session — its entries, its snapshot, the blob
// of its large member, its header — is on disk in plaintext; without one
// the same search finds them (the search works). Restarted with the key,
// everything reads back; with a wrong key or none, the node refuses
// before reading anything, and the data dir is unchanged.
func TestEncryptionAtRest(t *testing.T) {
	plainDir := t.TempDir()
	markedSession(t, cluster.DefaultConfig(plainDir), "PLAINMARKER-7f3a")
	if !holds(t, plainDir, "PLAINMARKER-7f3a") {
		t.Fatal("the unencrypted data dir does not hold the marker: the search proves nothing")
	}

	dir := t.TempDir()
	key := newKey(t)
	cfg := cluster.DefaultConfig(dir)
	cfg.Encryption = &cluster.EncryptionConfig{Key: key}
	const marker = "SECRETMARKER-19c2"
	markedSession(t, cfg, marker)
	if holds(t, dir, marker) {
		t.Fatal("the encrypted data dir holds the marker in plaintext")
	}
	readMarked(t, cfg, marker)

	before := digestDir(t, dir)
	ctx := context.Background()
	wrong := cluster.DefaultConfig(dir)
	wrong.Encryption = &cluster.EncryptionConfig{Key: newKey(t)}
	if _, err := cluster.Start(ctx, wrong); !errors.Is(err, cluster.ErrWrongKey) {
		t.Fatalf("a wrong key: %v, want ErrWrongKey", err)
	}
	if _, err := cluster.Start(ctx, cluster.DefaultConfig(dir)); !errors.Is(err, cluster.ErrEncrypted) {
		t.Fatalf("no key: %v, want ErrEncrypted", err)
	}
	if digestDir(t, dir) != before {
		t.Fatal("a refused start changed the data dir")
	}

	// Rotation: the new key with the old one opens it and re-encrypts;
	// then the new key alone does, and the old one no longer.
	newer := newKey(t)
	rot := cluster.DefaultConfig(dir)
	rot.Encryption = &cluster.EncryptionConfig{Key: newer, PrevKey: key, Cipher: "aes"}
	readMarked(t, rot, marker)
	after := cluster.DefaultConfig(dir)
	after.Encryption = &cluster.EncryptionConfig{Key: newer, Cipher: "aes"}
	readMarked(t, after, marker)
	if _, err := cluster.Start(ctx, cfg); !errors.Is(err, cluster.ErrWrongKey) {
		t.Fatalf("the old key after rotation: %v, want ErrWrongKey", err)
	}
	if holds(t, dir, marker) {
		t.Fatal("the rotated data dir holds the marker in plaintext")
	}
}

func TestLoadKeyFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, append(newKey(t), '\n'), 0o600)
	if k, err := cluster.LoadKeyFile(good); err != nil || len(k) != 48 {
		t.Fatalf("good key: %d bytes, %v", len(k), err)
	}
	for name, tc := range map[string]struct {
		data []byte
		mode os.FileMode
		want string
	}{
		"readable by others": {newKey(t), 0o644, "readable by others"},
		"short":              {[]byte("hunter2\n"), 0o600, "at least 32"},
		"empty":              {nil, 0o600, "at least 32"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(p, tc.data, tc.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, tc.mode)
		if _, err := cluster.LoadKeyFile(p); !errors.Is(err, cluster.ErrBadKey) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadKey saying %q", name, err, tc.want)
		}
	}
	if _, err := cluster.LoadKeyFile(filepath.Join(dir, "missing")); !errors.Is(err, cluster.ErrBadKey) {
		t.Errorf("missing file: %v", err)
	}
	cfg := cluster.DefaultConfig(dir)
	cfg.Encryption = &cluster.EncryptionConfig{Key: []byte("short")}
	if err := cfg.Validate(); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Errorf("a short key in the config: %v", err)
	}
	cfg.Encryption = &cluster.EncryptionConfig{Key: newKey(t), Cipher: "rot13"}
	if err := cfg.Validate(); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Errorf("an unknown cipher: %v", err)
	}
}
