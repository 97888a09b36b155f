package cluster

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/server"
)

// Encryption at rest: the node's JetStream store (every stream: sessions,
// snapshots, blobs, uploads, the index) is encrypted by the server with
// keys derived from one secret. Beside the store the data dir keeps a
// check of that secret (an HMAC of a constant under it, not the key), so
// that a node started with a wrong key, or none, on an encrypted data dir
// refuses before the server reads anything: nothing is touched.

var (
	// ErrEncrypted is returned by Start when the data dir is encrypted
	// and the config gives no key.
	ErrEncrypted = errors.New("cluster: data dir is encrypted")
	// ErrWrongKey is returned by Start when the key (and the previous
	// key, if given) is not the one the data dir is encrypted with.
	ErrWrongKey = errors.New("cluster: wrong encryption key")
	// ErrBadKey is returned by LoadKeyFile for a key file that cannot
	// be used (too short, readable by others).
	ErrBadKey = errors.New("cluster: unusable encryption key file")
)

// MinKeyBytes is the shortest key accepted: the store's keys are derived
// from it, so it must carry their strength.
const MinKeyBytes = 32

// EncryptionConfig encrypts the node's store at rest.
type EncryptionConfig struct {
	// Key is the secret the store's keys are derived from (LoadKeyFile).
	Key []byte
	// PrevKey, while rotating keys, is the key the store is encrypted
	// with now: the node opens the store with it and writes it under Key
	// from then on. Once a node has started with both, Key alone opens it.
	PrevKey []byte
	// Cipher is "chachapoly" (the default) or "aes". Changing it on an
	// existing store converts the store as it loads.
	Cipher string
}

func (e *EncryptionConfig) validate() error {
	if len(e.Key) < MinKeyBytes {
		return fmt.Errorf("%w: the encryption key is %d bytes, at least %d are needed", ErrInvalidConfig, len(e.Key), MinKeyBytes)
	}
	if e.PrevKey != nil && len(e.PrevKey) < MinKeyBytes {
		return fmt.Errorf("%w: the previous encryption key is %d bytes, at least %d are needed", ErrInvalidConfig, len(e.PrevKey), MinKeyBytes)
	}
	if _, err := e.cipher(); err != nil {
		return err
	}
	return nil
}

func (e *EncryptionConfig) cipher() (server.StoreCipher, error) {
	switch e.Cipher {
	case "", "chachapoly", "chacha":
		return server.ChaCha, nil
	case "aes":
		return server.AES, nil
	}
	return server.NoCipher, fmt.Errorf("%w: cipher %q (want chachapoly or aes)", ErrInvalidConfig, e.Cipher)
}

// LoadKeyFile reads an encryption key: the file's bytes, a final newline
// dropped. It refuses a file others may read (the key opens every byte of
// the store) and a key shorter than MinKeyBytes. Make one with
// `head -c 32 /dev/urandom | base64 > key; chmod 600 key`.
func LoadKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is readable by others (mode %v): chmod 600 it", ErrBadKey, path, st.Mode().Perm())
	}
	if st.Size() > 4096 {
		return nil, fmt.Errorf("%w: %s is %d bytes, not a key", ErrBadKey, path, st.Size())
	}
	key := make([]byte, st.Size())
	if _, err := f.ReadAt(key, 0); err != nil && st.Size() > 0 {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadKey, path, err)
	}
	key = bytes.TrimRight(key, "\r\n")
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("%w: %s holds %d bytes, at least %d are needed", ErrBadKey, path, len(key), MinKeyBytes)
	}
	return key, nil
}

// keyCheck is the file beside the store that says it is encrypted and
// under which key.
type keyCheck struct {
	Version int    `json:"version"`
	Cipher  string `json:"cipher"`
	// Check is HMAC-SHA256(key, checkLabel), hex.
	Check string `json:"check"`
}

const checkLabel = "sessionlog data dir key check v1"

func keyCheckFile(dataDir string) string { return filepath.Join(dataDir, "encryption.check") }

func checkOf(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(checkLabel))
	return hex.EncodeToString(m.Sum(nil))
}

// checkKeys compares the config's keys with the data dir's check before
// the server starts, and sets the server's options.
func checkKeys(opts *server.Options, cfg Config) error {
	raw, err := os.ReadFile(keyCheckFile(cfg.DataDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cluster: %w", err)
	}
	var kc *keyCheck
	if err == nil {
		kc = &keyCheck{}
		if err := json.Unmarshal(raw, kc); err != nil || kc.Check == "" {
			return fmt.Errorf("%w: %s is damaged; it says the data dir is encrypted", ErrEncrypted, keyCheckFile(cfg.DataDir))
		}
	}
	e := cfg.Encryption
	switch {
	case e == nil && kc == nil:
		return nil
	case e == nil:
		return fmt.Errorf("%w: %s needs its key (-encryption-key-file)", ErrEncrypted, cfg.DataDir)
	}
	sc, _ := e.cipher()
	opts.JetStreamKey, opts.JetStreamCipher = string(e.Key), sc
	if e.PrevKey != nil {
		// The server tries the key first and the previous one after,
		// block by block: given until a start with both has completed,
		// it also opens what an interrupted rotation left.
		opts.JetStreamOldKey = string(e.PrevKey)
	}
	if kc == nil {
		// A new store, or a plaintext one the server encrypts as it
		// loads it.
		return nil
	}
	if hmac.Equal([]byte(checkOf(e.Key)), []byte(kc.Check)) {
		return nil
	}
	if e.PrevKey != nil && hmac.Equal([]byte(checkOf(e.PrevKey)), []byte(kc.Check)) {
		return nil
	}
	what := "the key"
	if e.PrevKey != nil {
		what = "neither the key nor the previous key"
	}
	return fmt.Errorf("%w: %s opens %s (nothing was read)", ErrWrongKey, what, cfg.DataDir)
}

// writeKeyCheck records the key a started node's store is under now.
func writeKeyCheck(cfg Config) error {
	if cfg.Encryption == nil {
		return nil
	}
	sc, _ := cfg.Encryption.cipher()
	b, err := json.Marshal(keyCheck{Version: 1, Cipher: sc.String(), Check: checkOf(cfg.Encryption.Key)})
	if err != nil {
		return err
	}
	path := keyCheckFile(cfg.DataDir)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}
