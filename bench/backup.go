package bench

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// backupPart measures a full backup of a deployment and its restore into
// an empty one: BackupSessions sessions of BackupSessionBytes each (text
// that compresses about as much as agent transcripts do), fsync always;
// the baseline is reading every session (open and entries), what a backup
// cannot do without.
func backupPart(ctx context.Context, cfg Config, n *node, dir string, r *Report, p progress) error {
	total := cfg.BackupSessions
	b, err := n.backend(ctx, func(c *stream.Config) { c.OffloadThreshold = 0 })
	if err != nil {
		return err
	}
	p.say("backup: creating %d sessions of %d KiB", total, cfg.BackupSessionBytes>>10)
	// Base32 of random bytes in 8 messages: it compresses to about 5/8,
	// where JSON transcripts compress further (the backup is the slower
	// for it).
	err = createWith(ctx, b, "bk", 0, total, func(st *stream.Store, i int) error {
		var batch []*session.Entry
		parent := ""
		for k := range 8 {
			raw := make([]byte, cfg.BackupSessionBytes/8*5/8)
			rand.Read(raw)
			text := base32.StdEncoding.EncodeToString(raw)
			e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("%08x", k+1), ParentID: parent, Timestamp: "2026-01-01T00:00:00.000Z",
				Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprintf("%d %d ", i, k) + text), Timestamp: 1}}
			batch, parent = append(batch, e), e.ID
		}
		return st.AppendBatch(ctx, batch)
	})
	if err != nil {
		return err
	}
	ids, err := b.SessionIDs(ctx)
	if err != nil {
		return err
	}
	p.say("backup: reading every session whole (the baseline)")
	start := time.Now()
	var bytes int64
	for _, id := range ids {
		st, err := b.Open(ctx, id)
		if err != nil {
			return err
		}
		_, err = st.Entries(ctx)
		st.Close(ctx)
		if err != nil {
			return err
		}
	}
	read := time.Since(start)
	p.say("backup: backing up")
	bdir := filepath.Join(dir, "backup")
	os.RemoveAll(bdir)
	start = time.Now()
	m, err := lifecycle.Backup(ctx, b, bdir, lifecycle.BackupOptions{})
	if err != nil {
		return err
	}
	backedUp := time.Since(start)
	filepath.Walk(bdir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			bytes += fi.Size()
		}
		return nil
	})
	p.say("backup: restoring into an empty deployment")
	dst, err := n.backend(ctx, func(c *stream.Config) { c.OffloadThreshold = 0 })
	if err != nil {
		return err
	}
	start = time.Now()
	rep, err := lifecycle.Restore(ctx, dst, bdir)
	if err != nil {
		return err
	}
	restored := time.Since(start)
	if rep.Sessions != total || len(m.Sessions) != total {
		return fmt.Errorf("bench: backed up %d and restored %d of %d sessions", len(m.Sessions), rep.Sessions, total)
	}
	group := fmt.Sprintf("Backup and restore of %d sessions, %.0f MB of entries, fsync %s", total, float64(total*cfg.BackupSessionBytes)/1e6, n.sync)
	r.add(Row{Group: group, Name: fmt.Sprintf("full backup (%.1f MB written)", float64(bytes)/1e6), Ours: seconds(backedUp), Base: seconds(read), Unit: "s", BaseName: "reading every session whole"})
	r.add(Row{Group: group, Name: "restore into an empty deployment, every session checked", Ours: seconds(restored), Base: seconds(backedUp), Unit: "s", BaseName: "the backup"})
	os.RemoveAll(bdir)
	return nil
}

func seconds(d time.Duration) float64 { return d.Seconds() }
