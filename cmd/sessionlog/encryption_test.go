package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The verbs that start a node take the key from a flag or the
// environment; without it, an encrypted data dir is refused with a
// message that says what to pass.
func TestVerbsOnAnEncryptedDataDir(t *testing.T) {
	data := t.TempDir()
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef-test-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, data, "", "new", "-id", "e1", "-encryption-key-file", key)
	mustRun(t, data, "", "append", "e1", "-text", "kept secret", "-encryption-key-file", key)

	code, _, stderr := runIn(t, data, "", "context", "e1")
	if code == 0 || !strings.Contains(stderr, "encrypted") || !strings.Contains(stderr, "-encryption-key-file") {
		t.Fatalf("no key: exit %d: %s", code, stderr)
	}
	other := filepath.Join(t.TempDir(), "other")
	os.WriteFile(other, []byte("another key, long enough to be accepted by us\n"), 0o600)
	code, _, stderr = runIn(t, data, "", "context", "e1", "-encryption-key-file", other)
	if code == 0 || !strings.Contains(stderr, "wrong encryption key") {
		t.Fatalf("wrong key: exit %d: %s", code, stderr)
	}
	os.Chmod(key, 0o644)
	code, _, stderr = runIn(t, data, "", "context", "e1", "-encryption-key-file", key)
	if code == 0 || !strings.Contains(stderr, "chmod 600") {
		t.Fatalf("a key others can read: exit %d: %s", code, stderr)
	}
	os.Chmod(key, 0o600)
	t.Setenv("SESSIONLOG_ENCRYPTION_KEY_FILE", key)
	if c := mustRun(t, data, "", "context", "e1"); !strings.Contains(c, "kept secret") {
		t.Fatalf("context with the key from the environment:\n%s", c)
	}
}

// Search on an encrypted data dir finds what it holds, and keeps its index
// in memory: no file under the data dir holds the words in the clear.
func TestSearchWritesNoPlaintextWhenEncrypted(t *testing.T) {
	data := t.TempDir()
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef-test-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SESSIONLOG_ENCRYPTION_KEY_FILE", key)
	const word = "quetzalcoatlplaintextcanary"
	mustRun(t, data, "", "new", "-id", "e2")
	mustRun(t, data, "", "append", "e2", "-text", "a "+word+" here")
	if out := mustRun(t, data, "", "search", word); !strings.Contains(out, "e2") {
		t.Fatalf("search on an encrypted data dir:\n%s", out)
	}
	err := filepath.WalkDir(data, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), word) {
			t.Errorf("%s holds the text in the clear", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
