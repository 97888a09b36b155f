package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrNotArchived is returned when a target holds no archive of a session.
var ErrNotArchived = errors.New("lifecycle: not archived")

// Target is where archives are kept. Put stores an object whole or not
// at all (a reader sees the previous one or the new one); Get returns
// ErrNotArchived for an object that is not there.
type Target interface {
	Put(ctx context.Context, name string, r io.Reader) error
	Get(ctx context.Context, name string) (io.ReadCloser, error)
	// Describe says where the target is, for messages.
	Describe() string
}

// DirTarget keeps archives as files in a directory.
type DirTarget struct{ Dir string }

var _ Target = DirTarget{}

// Put writes the file through a temporary one, synced, then renamed into
// place.
func (d DirTarget) Put(ctx context.Context, name string, r io.Reader) error {
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return fmt.Errorf("lifecycle: %w", err)
	}
	f, err := os.CreateTemp(d.Dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("lifecycle: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename, nothing
	if _, err := io.Copy(f, ctxReader{ctx, r}); err != nil {
		f.Close()
		return fmt.Errorf("lifecycle: write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("lifecycle: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("lifecycle: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(d.Dir, name)); err != nil {
		return fmt.Errorf("lifecycle: %w", err)
	}
	// The rename itself is durable once the directory is synced.
	if dir, err := os.Open(d.Dir); err == nil {
		dir.Sync()
		dir.Close()
	}
	return nil
}

// Get opens the file.
func (d DirTarget) Get(_ context.Context, name string) (io.ReadCloser, error) {
	f, err := os.Open(filepath.Join(d.Dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: no %s in %s", ErrNotArchived, name, d.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("lifecycle: %w", err)
	}
	return f, nil
}

// Describe names the directory.
func (d DirTarget) Describe() string { return d.Dir }

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// StoreTarget keeps archives in a JetStream object store.
type StoreTarget struct {
	Store  jetstream.ObjectStore
	Bucket string
}

var _ Target = StoreTarget{}

// Put stores the object (the object store replaces it whole).
func (s StoreTarget) Put(ctx context.Context, name string, r io.Reader) error {
	if _, err := s.Store.Put(ctx, jetstream.ObjectMeta{Name: name}, r); err != nil {
		return fmt.Errorf("lifecycle: put %s: %w", name, err)
	}
	return nil
}

// Get reads the object.
func (s StoreTarget) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	r, err := s.Store.Get(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: no %s in the object store", ErrNotArchived, name)
	}
	if err != nil {
		return nil, fmt.Errorf("lifecycle: get %s: %w", name, err)
	}
	return r, nil
}

// Describe names the bucket.
func (s StoreTarget) Describe() string { return "object store " + s.Bucket }

// ArchiveBucket is the object store archives go to by default (one per
// deployment, or per tenant account).
const ArchiveBucket = "SESSIONS_ARCHIVE"

// OpenStoreTarget opens (creating it if needed) the archive bucket.
func OpenStoreTarget(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (StoreTarget, error) {
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: bucket, Description: "sessionlog archives", Storage: jetstream.FileStorage, Replicas: max(replicas, 1), Compression: false,
	})
	if err != nil {
		return StoreTarget{}, fmt.Errorf("lifecycle: archive bucket %s: %w", bucket, err)
	}
	return StoreTarget{Store: obs, Bucket: bucket}, nil
}
