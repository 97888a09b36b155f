package lifecycle

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/session"
)

// ErrBadArchive is returned for an archive that is incomplete, damaged or
// not what its manifest says; the error names the object and the fault.
var ErrBadArchive = errors.New("lifecycle: bad archive")

// ArchiveVersion is the format of the manifests written.
const ArchiveVersion = 1

// Manifest describes an archive: the session, its digests, the file's.
// It is written after the file: a manifest means a whole archive.
type Manifest struct {
	Version int    `json:"version"`
	Session string `json:"session"`
	Digests
	// FileSHA256 and FileBytes are the pi JSONL file's; GzipSHA256 and
	// GzipBytes the stored, compressed object's.
	FileSHA256 string `json:"fileSha256"`
	FileBytes  int64  `json:"fileBytes"`
	GzipSHA256 string `json:"gzipSha256"`
	GzipBytes  int64  `json:"gzipBytes"`
	// ArchivedAt is when the archive was made (RFC 3339).
	ArchivedAt string `json:"archivedAt"`
}

// Object names of a session's archive.
func dataName(id string) string     { return id + ".jsonl.gz" }
func manifestName(id string) string { return id + ".manifest.json" }

// Archive writes session id of repo to target: its pi file, every
// entry's content in place, gzip-compressed, then the manifest. It
// returns the manifest. The session is left as it is.
func Archive(ctx context.Context, repo session.Repo, id string, target Target, now time.Time) (Manifest, error) {
	if err := session.ValidateSessionID(id); err != nil {
		return Manifest{}, err
	}
	h, entries, err := readSession(ctx, repo, id)
	if err != nil {
		return Manifest{}, err
	}
	return writeArchive(ctx, target, h, entries, now)
}

// writeArchive writes the archive of session h holding entries (content
// in place) to target: the file, then the manifest.
func writeArchive(ctx context.Context, target Target, h session.Header, entries []*session.Entry, now time.Time) (Manifest, error) {
	id := h.ID
	t, err := treeOf(h, entries)
	if err != nil {
		return Manifest{}, err
	}
	file, err := codec.EncodeFile(&h, entries)
	if err != nil {
		return Manifest{}, err
	}
	// The tree's digest is of the entries' lines: the file but its header.
	d, err := digestsOf(t, file[bytes.IndexByte(file, '\n')+1:])
	if err != nil {
		return Manifest{}, err
	}
	var gz bytes.Buffer
	// The fastest level: archives and backups of a deployment are CPU
	// bound, and transcripts compress well at any level.
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if _, err := zw.Write(file); err != nil {
		return Manifest{}, err
	}
	if err := zw.Close(); err != nil {
		return Manifest{}, err
	}
	m := Manifest{Version: ArchiveVersion, Session: id, Digests: d, FileSHA256: sha(file), FileBytes: int64(len(file)),
		GzipSHA256: sha(gz.Bytes()), GzipBytes: int64(gz.Len()), ArchivedAt: now.UTC().Format(time.RFC3339Nano)}
	if err := target.Put(ctx, dataName(id), bytes.NewReader(gz.Bytes())); err != nil {
		return m, err
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, err
	}
	return m, target.Put(ctx, manifestName(id), bytes.NewReader(mb))
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// maxManifest bounds what is read of a manifest.
const maxManifest = 64 << 10

// ReadManifest reads and checks a session's manifest.
func ReadManifest(ctx context.Context, target Target, id string) (Manifest, error) {
	var m Manifest
	r, err := target.Get(ctx, manifestName(id))
	if err != nil {
		return m, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxManifest+1))
	if err != nil {
		return m, fmt.Errorf("lifecycle: read %s: %w", manifestName(id), err)
	}
	if len(b) > maxManifest {
		return m, fmt.Errorf("%w: %s is over %d bytes", ErrBadArchive, manifestName(id), maxManifest)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: %s: %v", ErrBadArchive, manifestName(id), err)
	}
	if err := session.CheckFormat("archive manifest", manifestName(id), m.Version, 1, ArchiveVersion); err != nil {
		return m, fmt.Errorf("%w: %w", ErrBadArchive, err)
	}
	switch {
	case m.Session != id:
		return m, fmt.Errorf("%w: %s is the manifest of %q", ErrBadArchive, manifestName(id), m.Session)
	case m.FileBytes < 0 || m.GzipBytes < 0 || m.FileBytes > session.MaxBlobSize*16:
		return m, fmt.Errorf("%w: %s gives sizes %d and %d", ErrBadArchive, manifestName(id), m.FileBytes, m.GzipBytes)
	}
	return m, nil
}

// ReadArchive reads and checks a session's archive — the manifest, the
// compressed file against its digest and size, the file against its, the
// session against the manifest's digests — and returns the manifest and
// the session's tree.
func ReadArchive(ctx context.Context, target Target, id string) (Manifest, *session.Tree, error) {
	m, err := ReadManifest(ctx, target, id)
	if err != nil {
		return m, nil, err
	}
	name := dataName(id)
	r, err := target.Get(ctx, name)
	if errors.Is(err, ErrNotArchived) {
		return m, nil, fmt.Errorf("%w: %s is missing (its manifest is there)", ErrBadArchive, name)
	}
	if err != nil {
		return m, nil, err
	}
	defer r.Close()
	gzHash := sha256.New()
	counted := &countWriter{}
	zr, err := gzip.NewReader(io.TeeReader(io.LimitReader(r, m.GzipBytes+1), io.MultiWriter(gzHash, counted)))
	if err != nil {
		return m, nil, fmt.Errorf("%w: %s: %v", ErrBadArchive, name, err)
	}
	file, err := io.ReadAll(io.LimitReader(zr, m.FileBytes+1))
	if err != nil {
		return m, nil, fmt.Errorf("%w: %s: %v", ErrBadArchive, name, err)
	}
	io.Copy(io.Discard, zr) // the rest of the compressed bytes, for their digest
	switch {
	case counted.n != m.GzipBytes || hex.EncodeToString(gzHash.Sum(nil)) != m.GzipSHA256:
		return m, nil, fmt.Errorf("%w: %s is not the object its manifest describes (%d bytes)", ErrBadArchive, name, counted.n)
	case int64(len(file)) != m.FileBytes || sha(file) != m.FileSHA256:
		return m, nil, fmt.Errorf("%w: %s does not hold the file its manifest describes", ErrBadArchive, name)
	}
	ld, err := codec.DecodeFile(file, name, codec.Strict, codec.WithRunner(parallel.Lines))
	if err != nil {
		return m, nil, fmt.Errorf("%w: %w", ErrBadArchive, err)
	}
	d, err := digestsOf(ld.Tree, file[bytes.IndexByte(file, '\n')+1:])
	if err != nil {
		return m, nil, err
	}
	if d != m.Digests {
		return m, nil, fmt.Errorf("%w: %s holds a session whose digests are not its manifest's", ErrBadArchive, name)
	}
	return m, ld.Tree, nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// Unarchive brings session id back from target into repo, as newID when
// set, and checks that what was stored has the archive's digests (tree,
// leaf, context); on a mismatch the restored session is removed.
func Unarchive(ctx context.Context, repo session.Repo, target Target, id, newID string) (Manifest, error) {
	m, t, err := ReadArchive(ctx, target, id)
	if err != nil {
		return m, err
	}
	h := t.Header()
	if newID != "" {
		h.ID = newID
	}
	if err := Import(session.ForRestore(ctx), repo, h, t); err != nil {
		return m, err
	}
	got, err := DigestsIn(ctx, repo, h.ID)
	if err == nil && got != m.Digests {
		err = fmt.Errorf("lifecycle: %s came back different from its archive (%+v, want %+v)", h.ID, got, m.Digests)
	}
	if err != nil {
		return m, errors.Join(err, repo.Delete(context.WithoutCancel(ctx), h.ID))
	}
	return m, nil
}

// DigestsIn computes the digests of a stored session.
func DigestsIn(ctx context.Context, repo session.Repo, id string) (Digests, error) {
	h, entries, err := readSession(ctx, repo, id)
	if err != nil {
		return Digests{}, err
	}
	t, err := treeOf(h, entries)
	if err != nil {
		return Digests{}, err
	}
	return DigestsOf(t)
}
