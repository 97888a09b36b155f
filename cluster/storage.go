package cluster

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Storage that fills up. A write that meets a full disk fails in
// JetStream's file store, which keeps the error on the stream for good
// (its write error sticks), and a clustered server shuts its JetStream
// down: writes stayed refused after the volume was grown, until someone
// restarted the node (issue 69). The node restarts its JetStream itself
// once space is back — ShutdownJetStream, which keeps its state, then a
// reload with JetStream off and on, which reopens every store from disk —
// and says what it did.

// storageEvery is how often the storage watcher looks.
const storageEvery = time.Second

// storageRetry bounds how often JetStream is restarted for space.
const storageRetry = 10 * time.Second

// nearlyFull is free space under which a refused write is the disk's
// doing: at most 64 MiB, or 2% of the file system.
func nearlyFull(free, size uint64) bool {
	return free < 64<<20 || (size > 0 && float64(free) < 0.02*float64(size))
}

// storageWatch is the node's storage watcher's state.
type storageWatch struct {
	full      atomic.Bool // writes were refused with the disk nearly full
	enabled   atomic.Bool // JetStream was up when last seen
	mu        sync.Mutex
	since     time.Time // full since
	restarted time.Time // JetStream last restarted for space
	said      string    // the last thing said of it
	stop      chan struct{}
	done      chan struct{}
}

// DiskSpace is the space free and the size of the file system holding
// the node's data; ok is false where it cannot be read.
func (n *Node) DiskSpace() (free, size uint64, ok bool) { return diskSpace(n.cfg.DataDir) }

// NoteOutOfSpace tells the node a write was refused for want of storage
// (JetStream's insufficient resources). When its disk is nearly full, the
// node restarts its JetStream once space is back; a refusal with space to
// spare is a JetStream limit's, which a restart does not lift.
func (n *Node) NoteOutOfSpace() {
	free, size, ok := diskSpace(n.cfg.DataDir)
	if !ok || !nearlyFull(free, size) {
		return
	}
	n.storage.mu.Lock()
	defer n.storage.mu.Unlock()
	if !n.storage.full.Swap(true) {
		n.storage.since = time.Now()
	}
}

// StorageFull says since when writes have been refused for a full disk
// (the zero time: they are not).
func (n *Node) StorageFull() time.Time {
	n.storage.mu.Lock()
	defer n.storage.mu.Unlock()
	if !n.storage.full.Load() {
		return time.Time{}
	}
	return n.storage.since
}

// watchStorage runs until Close: JetStream restarted once space is back
// after writes were refused for a full disk, or after the server shut its
// JetStream down.
func (n *Node) watchStorage(log func(string)) {
	w := &n.storage
	w.enabled.Store(n.srv.JetStreamEnabled())
	defer close(w.done)
	t := time.NewTicker(storageEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		enabled := n.srv.JetStreamEnabled()
		// Shut down by the server: for want of space when the disk is
		// nearly full (not a test's, nor an operator's doing).
		lost := w.enabled.Load() && !enabled && n.srv.Running()
		if free, size, ok := diskSpace(n.cfg.DataDir); lost && ok && nearlyFull(free, size) {
			n.storage.mu.Lock()
			if !w.full.Swap(true) {
				w.since = time.Now()
			}
			n.storage.mu.Unlock()
		}
		w.enabled.Store(enabled || w.full.Load())
		if !w.full.Load() {
			continue
		}
		free, size, ok := diskSpace(n.cfg.DataDir)
		if !ok || nearlyFull(free, size) {
			continue
		}
		n.storage.mu.Lock()
		due := time.Since(w.restarted) >= storageRetry
		if due {
			w.restarted = time.Now()
		}
		n.storage.mu.Unlock()
		if !due {
			continue
		}
		err := n.restartJetStream()
		if err == nil {
			w.full.Store(false)
			w.enabled.Store(true)
		}
		msg := fmt.Sprintf("sessionlog: storage: %s free again on node %s; JetStream restarted, writes are taken again", bytesFree(free), n.cfg.ServerName)
		if err != nil {
			msg = fmt.Sprintf("sessionlog: storage: %s free again on node %s, but JetStream did not restart (tried again in %v): %v", bytesFree(free), n.cfg.ServerName, storageRetry, err)
		}
		if log != nil && msg != w.said {
			log(msg)
		}
		w.said = msg
	}
}

// restartJetStream reopens every store from disk: the server's write
// errors do not stick past it.
func (n *Node) restartJetStream() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	if err := n.srv.ShutdownJetStream(); err != nil {
		return err
	}
	off := n.opts.Clone()
	off.JetStream = false
	if err := n.srv.ReloadOptions(off); err != nil {
		return err
	}
	on := n.opts.Clone()
	on.JetStream = true
	if err := n.srv.ReloadOptions(on); err != nil {
		return err
	}
	if !n.srv.JetStreamEnabled() {
		return fmt.Errorf("cluster: JetStream did not come back")
	}
	return nil
}

func bytesFree(n uint64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
