package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/blobs"
)

// Backups: every session of a repository, each read at a cut — the
// stream sequence its state was read at, recorded — as an archive in a
// directory, and a manifest listing the sessions, their cuts and digests,
// written last. Writers may go on appending: each session's archive is
// its state at its cut, nothing more, nothing less. An incremental backup
// names a base backup and writes only the sessions changed since it;
// restore reads the chain.
//
// What is backed up is what a session is: its entries, with content
// stored apart in place. The index, snapshots and blob store are derived
// from them, and a restore rebuilds them (content is stored apart again
// as the restoring deployment's threshold says, each blob once).

// BackupVersion is the format of backup manifests written.
const BackupVersion = 1

// backupManifestName is the file a backup's manifest is in.
const backupManifestName = "backup.json"

// BackupManifest lists what a backup holds.
type BackupManifest struct {
	Version int    `json:"version"`
	Taken   string `json:"taken"` // RFC 3339
	// Base is the backup this one is incremental to (its directory,
	// relative to this one's), "" for a full backup.
	Base     string          `json:"base,omitempty"`
	Sessions []BackupSession `json:"sessions"`
}

// BackupSession is one session of a backup.
type BackupSession struct {
	ID string `json:"id"`
	// Sequence is the cut: the stream sequence the session was read at
	// (0 for repositories without one).
	Sequence uint64 `json:"sequence,omitempty"`
	Digests
	// In is the backup directory holding its archive, relative to this
	// one ("" here): in an incremental backup, a session unchanged since
	// the base is in the base.
	In string `json:"in,omitempty"`
}

// BackupOptions are a backup's.
type BackupOptions struct {
	// Base, when set, is the directory of an earlier backup: sessions
	// whose cut is the same as there are not written again.
	Base string
	// Workers is how many sessions are read at once (default 8).
	Workers int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// cutReader is what a repository offers to read a session at a cut.
type cutReader interface {
	OpenStore(ctx context.Context, id string) (*stream.Store, error)
	Blobs() *blobs.Store
}

// Backup writes every session of repo to dir (which must be empty or
// absent) and returns the manifest.
func Backup(ctx context.Context, repo session.Repo, dir string, opts BackupOptions) (BackupManifest, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	m := BackupManifest{Version: BackupVersion, Taken: now().UTC().Format(time.RFC3339Nano)}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return m, fmt.Errorf("lifecycle: backup to %s: the directory is not empty", dir)
	}
	base := map[string]BackupSession{}
	if opts.Base != "" {
		bm, err := ReadBackupManifest(opts.Base)
		if err != nil {
			return m, err
		}
		rel, err := filepath.Rel(dir, opts.Base)
		if err != nil {
			return m, fmt.Errorf("lifecycle: base %s: %w", opts.Base, err)
		}
		m.Base = rel
		for _, s := range bm.Sessions {
			// Where the session's archive is, seen from this backup.
			s.In = filepath.Join(rel, s.In)
			base[s.ID] = s
		}
	}
	ids, err := allIDs(ctx, repo)
	if err != nil {
		return m, err
	}
	target := DirTarget{Dir: filepath.Join(dir, "sessions")}
	workers := max(1, opts.Workers)
	if opts.Workers == 0 {
		workers = 8
	}
	out := make([]BackupSession, len(ids))
	found := make([]bool, len(ids))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	var first error
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := i >= len(ids) || first != nil
				mu.Unlock()
				if stop {
					return
				}
				s, ok, err := backupOne(ctx, repo, ids[i], target, base, now)
				mu.Lock()
				if err != nil && first == nil {
					first = fmt.Errorf("lifecycle: backup of %s: %w", ids[i], err)
				}
				out[i], found[i] = s, ok
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return m, first
	}
	for i, s := range out {
		if found[i] { // not deleted while the backup ran
			m.Sessions = append(m.Sessions, s)
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, err
	}
	return m, DirTarget{Dir: dir}.Put(ctx, backupManifestName, strings.NewReader(string(b)))
}

// allIDs lists every session of repo: through SessionIDs where the
// repository has it (a listing's pages can miss a session written while
// they are read).
func allIDs(ctx context.Context, repo session.Repo) ([]string, error) {
	if e, ok := repo.(interface {
		SessionIDs(ctx context.Context) ([]string, error)
	}); ok {
		return e.SessionIDs(ctx)
	}
	var ids []string
	for cursor := ""; ; {
		page, err := repo.List(ctx, session.ListOptions{Limit: session.MaxPageSize, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, s := range page.Sessions {
			ids = append(ids, s.ID)
		}
		if cursor = page.Next; cursor == "" {
			return ids, nil
		}
	}
}

// backupOne reads one session at a cut and writes its archive, unless the
// base holds it at the same cut. ok is false for a session deleted
// meanwhile.
func backupOne(ctx context.Context, repo session.Repo, id string, target Target, base map[string]BackupSession, now func() time.Time) (BackupSession, bool, error) {
	s := BackupSession{ID: id}
	var h session.Header
	var entries []*session.Entry
	if cr, ok := repo.(cutReader); ok {
		st, err := cr.OpenStore(ctx, id)
		if errors.Is(err, session.ErrSessionNotFound) {
			return s, false, nil
		}
		if err != nil {
			return s, false, err
		}
		defer st.Close(ctx)
		if b, ok := base[id]; ok && b.Sequence != 0 {
			seq, err := st.Sequence(ctx)
			if err != nil {
				return s, false, err
			}
			if seq == b.Sequence {
				return b, true, nil // unchanged since the base
			}
		}
		// The tree and the sequence it is at, read together: the cut.
		err = st.ReadTreeAt(ctx, func(t *session.Tree, at uint64) error {
			es, err := t.Entries()
			h, entries, s.Sequence = t.Header(), slices.Clone(es), at
			return err
		})
		if err != nil {
			return s, false, err
		}
		if entries, err = cr.Blobs().ResolveAll(ctx, entries); err != nil {
			return s, false, err
		}
	} else {
		var err error
		h, entries, err = readSession(ctx, repo, id)
		if errors.Is(err, session.ErrSessionNotFound) {
			return s, false, nil
		}
		if err != nil {
			return s, false, err
		}
	}
	am, err := writeArchive(ctx, target, h, entries, now())
	if err != nil {
		return s, false, err
	}
	s.Digests = am.Digests
	return s, true, nil
}

// ReadBackupManifest reads and checks a backup's manifest.
func ReadBackupManifest(dir string) (BackupManifest, error) {
	var m BackupManifest
	path := filepath.Join(dir, backupManifestName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("%w: %s is missing: not a backup, or one that did not finish", ErrBadArchive, path)
	}
	if err != nil {
		return m, fmt.Errorf("lifecycle: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: %s: %v", ErrBadArchive, path, err)
	}
	if err := session.CheckFormat("backup manifest", path, m.Version, 1, BackupVersion); err != nil {
		return m, fmt.Errorf("%w: %w", ErrBadArchive, err)
	}
	seen := map[string]bool{}
	for _, s := range m.Sessions {
		if err := session.ValidateSessionID(s.ID); err != nil || seen[s.ID] {
			return m, fmt.Errorf("%w: %s lists session %q twice or badly", ErrBadArchive, path, s.ID)
		}
		if filepath.IsAbs(s.In) {
			return m, fmt.Errorf("%w: %s places %s at an absolute path", ErrBadArchive, path, s.ID)
		}
		seen[s.ID] = true
	}
	return m, nil
}

// RestoreReport is what a restore did.
type RestoreReport struct {
	Sessions int
	Entries  int
}

// Restore loads a backup (the chain of an incremental one) into repo,
// which must hold none of its sessions. Every archive is read and checked
// against its digests and the manifest's before anything is written: a
// damaged backup is refused, naming the file, and nothing is restored.
// Each restored session is checked against its digests again.
func Restore(ctx context.Context, repo session.Repo, dir string) (RestoreReport, error) {
	var rep RestoreReport
	m, err := ReadBackupManifest(dir)
	if err != nil {
		return rep, err
	}
	targetOf := func(s BackupSession) Target { return DirTarget{Dir: filepath.Join(dir, s.In, "sessions")} }
	// First every archive, checked; nothing written yet.
	for _, s := range m.Sessions {
		am, _, err := ReadArchive(ctx, targetOf(s), s.ID)
		if err != nil {
			return rep, err
		}
		if am.Digests != s.Digests {
			return rep, fmt.Errorf("%w: the archive of %s in %s is not the one the backup lists", ErrBadArchive, s.ID, targetOf(s).Describe())
		}
		if st, err := repo.Open(ctx, s.ID); err == nil {
			st.Close(ctx)
			return rep, fmt.Errorf("%w: %q (restore into a deployment that does not hold the backup's sessions)", session.ErrSessionExists, s.ID)
		}
	}
	for _, s := range m.Sessions {
		if _, err := Unarchive(ctx, repo, targetOf(s), s.ID, ""); err != nil {
			return rep, fmt.Errorf("lifecycle: restore of %s: %w", s.ID, err)
		}
		rep.Sessions++
		rep.Entries += s.Entries
	}
	return rep, nil
}
