package follow

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/internal/lines"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

// fileState is what the state file keeps of a file: how far it was taken
// in and how to tell it was rewritten since.
type fileState struct {
	Format  string `json:"format"`
	Session string `json:"session"`
	Offset  int64  `json:"offset"`  // bytes of the complete lines taken in
	Lines   int    `json:"lines"`   // how many lines those are
	Head    string `json:"head"`    // SHA-256 of its first HeadLen bytes
	HeadLen int64  `json:"headLen"` // at most headBytes
	Size    int64  `json:"size"`
	ModTime int64  `json:"modTime"` // Unix nanoseconds
	// Skip is how far into the line at Offset the follow has looked for
	// its end: a line longer than codec.MaxLineBytes is passed over.
	Skip int64 `json:"skip,omitempty"`
}

// headBytes of a file are hashed to notice it was rewritten: an agent's
// file only grows, and its first line names the session.
const headBytes = 4096

// maxRead bounds what one poll reads of a file: a large file is taken in
// over several polls. It holds the longest line taken (codec.MaxLineBytes,
// as an import takes) with its newline; a longer line is skipped, said
// once, and the lines after it are taken in.
const maxRead = codec.MaxLineBytes + 1

// skipChunk is what one read looks at for the end of a line too long.
const skipChunk = 1 << 20

type file struct {
	path   string
	said   string // the problem last reported, not said again until it changes
	st     fileState
	dec    transcript.LineDecoder // nil until the file's lines up to Offset are replayed
	src    transcript.Source
	store  session.Store
	active time.Time
}

// poll takes in the file's new complete lines; changed reports that its
// state moved.
func (fl *file) poll(ctx context.Context, repo session.Repo, log io.Writer) (changed bool, err error) {
	info, err := os.Stat(fl.path)
	if err != nil {
		return false, err
	}
	size, mod := info.Size(), info.ModTime().UnixNano()
	if size == fl.st.Size && mod == fl.st.ModTime {
		return false, nil
	}
	seen := func() { fl.st.Size, fl.st.ModTime = size, mod } // nothing more until the file changes
	f, _, err := filestore.OpenRegular(fl.path, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, filestore.ErrNotRegular) {
			seen()
		}
		return false, err
	}
	defer f.Close()
	if fl.st.Offset > 0 {
		head, err := readAt(f, 0, fl.st.HeadLen)
		if err != nil {
			return false, err
		}
		switch {
		case size < fl.st.Offset:
			fmt.Fprintf(log, "%s: truncated (%d bytes, %d taken in): read again from the start; lines already in session %s are not appended again\n", shown(fl.path), size, fl.st.Offset, fl.st.Session)
			fl.restart()
		case hashOf(head) != fl.st.Head:
			fmt.Fprintf(log, "%s: rewritten (its first bytes changed): read again from the start; lines already in session %s are not appended again\n", shown(fl.path), fl.st.Session)
			fl.restart()
		}
	}
	if fl.dec == nil {
		if err := fl.replay(f); err != nil {
			if errors.Is(err, transcript.ErrUnknownFormat) {
				seen() // said once; looked at again when the file changes
			}
			return false, err
		}
		if fl.dec == nil {
			seen() // not a whole line yet
			return false, nil
		}
	}
	skipped := false
	if fl.st.Skip > 0 { // still passing over a line too long
		done, err := fl.skipPast(f, size)
		if err != nil || !done {
			if err == nil {
				seen()
			}
			return true, err
		}
		skipped = true
	}
	data, err := readAt(f, fl.st.Offset, min(size-fl.st.Offset, maxRead))
	if err != nil {
		return skipped, err
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	for end == 0 && int64(len(data)) == maxRead {
		// A line longer than codec.MaxLineBytes: said once, passed over
		// (however many polls it takes to be written), and the lines
		// after it read.
		fmt.Fprintf(log, "%s:%d: skipped: a line longer than %d bytes\n", shown(fl.path), fl.st.Lines+1, codec.MaxLineBytes)
		fl.st.Skip, skipped = maxRead, true
		done, err := fl.skipPast(f, size)
		if err != nil || !done {
			if err == nil {
				seen()
			}
			return true, err
		}
		if data, err = readAt(f, fl.st.Offset, min(size-fl.st.Offset, maxRead)); err != nil {
			return true, err
		}
		end = bytes.LastIndexByte(data, '\n') + 1
	}
	if end == 0 {
		seen() // only a line being written
		return skipped, nil
	}
	var entries []*session.Entry
	no := fl.st.Lines
	for _, line := range bytes.SplitAfter(data[:end], []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		no++
		line = bytes.TrimRight(line, "\r\n")
		if no == 1 {
			line = transcript.TrimBOM(line)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		got, err := fl.dec.Line(no, line)
		if err != nil {
			fmt.Fprintf(log, "%s:%d: skipped: %v\n", shown(fl.path), no, err)
			continue
		}
		entries = append(entries, got...)
	}
	if err := fl.append(ctx, repo, entries, log); err != nil {
		// Nothing is marked taken in: the lines are read again (the
		// decoder replayed up to them), and those stored meanwhile are
		// recognised by their ids.
		fl.dec = nil
		if errors.Is(err, errNoHeader) {
			seen()
			return false, nil
		}
		return false, err
	}
	fl.st.Offset += int64(end)
	fl.st.Lines = no
	if fl.st.HeadLen < headBytes {
		fl.st.HeadLen = min(fl.st.Offset, headBytes)
		head, err := readAt(f, 0, fl.st.HeadLen)
		if err != nil {
			return false, err
		}
		fl.st.Head = hashOf(head)
	}
	seen()
	if int64(len(data)) == maxRead {
		fl.st.Size = -1 // more to read next poll
	}
	return true, nil
}

// skipPast looks for the end of the line at Offset that is too long
// (Skip: how far into it the follow has looked): done when it was found
// (Offset is past it), not when it is still being written.
func (fl *file) skipPast(f *os.File, size int64) (done bool, err error) {
	for at := fl.st.Offset + fl.st.Skip; at < size; at += skipChunk {
		chunk, err := readAt(f, at, min(skipChunk, size-at))
		if err != nil {
			return false, err
		}
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			fl.st.Offset, fl.st.Skip = at+int64(i)+1, 0
			fl.st.Lines++
			return true, nil
		}
	}
	fl.st.Skip = max(fl.st.Skip, size-fl.st.Offset)
	return false, nil
}

// errNoHeader is a file whose lines so far do not say which session it
// is: its session is made when one does.
var errNoHeader = errors.New("follow: no line says which session this is, or when it started")

// restart forgets how far the file was read (its session stays).
func (fl *file) restart() {
	fl.st.Offset, fl.st.Lines, fl.st.Head, fl.st.HeadLen = 0, 0, "", 0
	fl.dec = nil
}

// replay makes the file's decoder and feeds it the lines taken in before
// (a follow started again, or a failed append): the decoder's ids and
// parents for the next lines depend on them. It also settles the format.
func (fl *file) replay(f *os.File) error {
	head, err := readAt(f, 0, 64<<10)
	if err != nil {
		return err
	}
	format := transcript.Format(fl.st.Format)
	if format == "" {
		if format, err = transcript.Detect(head); err != nil {
			if bytes.IndexByte(head, '\n') < 0 {
				return nil // not a whole line yet
			}
			return err
		}
		fl.st.Format = string(format)
	}
	dec, err := transcript.NewLineDecoder(format)
	if err != nil {
		return err
	}
	fl.src = transcript.SourceFor(format, fl.path)
	// The lines taken in before, read a line at a time: a line longer
	// than codec.MaxLineBytes was skipped when first read, and is here.
	err = lines.Scan(io.NewSectionReader(f, 0, fl.st.Offset), codec.MaxLineBytes, func(no int, line []byte, _ int) error {
		if line == nil {
			return nil
		}
		if no == 1 {
			line = transcript.TrimBOM(line)
		}
		if l := bytes.TrimRight(line, "\r"); len(bytes.TrimSpace(l)) > 0 {
			// The scan's line is its buffer's: the decoder may keep what
			// it is given.
			_, _ = dec.Line(no, bytes.Clone(l)) // reported when first read
		}
		return nil
	})
	if err != nil {
		return err
	}
	fl.dec = dec
	return nil
}

// append stores entries in the file's session (made on its first lines),
// leaving out those it holds already.
func (fl *file) append(ctx context.Context, repo session.Repo, entries []*session.Entry, log io.Writer) error {
	if len(entries) == 0 {
		return nil
	}
	if fl.store == nil {
		h, ok := fl.dec.Header(fl.src)
		if !ok {
			return errNoHeader
		}
		st, err := repo.Open(ctx, h.ID)
		if errors.Is(err, session.ErrSessionNotFound) {
			if st, err = repo.Create(ctx, h); err == nil {
				fmt.Fprintf(log, "%s: new session %s (%s)\n", shown(fl.path), h.ID, fl.st.Format)
			}
		}
		if err != nil {
			return err
		}
		fl.store, fl.st.Session = st, h.ID
	}
	fresh := entries[:0:0]
	has, _ := fl.store.(session.IDChecker)
	for _, e := range entries {
		if has != nil {
			if ok, err := has.Has(ctx, e.ID); err != nil {
				return err
			} else if ok {
				continue
			}
		}
		fresh = append(fresh, e)
	}
	if err := session.AppendAll(session.ForImport(ctx), fl.store, fresh); err != nil {
		if !errors.Is(err, session.ErrInvalidEntry) {
			return err
		}
		// An entry the store refuses (past a bound: MaxUnknownTypes, the
		// nesting) would hold back every line after it for good: the
		// batch goes in one entry at a time, the refused ones said and
		// left out.
		kept, left := fresh[:0:0], map[string]bool{}
		for _, e := range fresh {
			if left[e.ParentID] {
				left[e.ID] = true // its parent was left out: so is it
				fmt.Fprintf(log, "%s: entry %s skipped: its parent %s was\n", shown(fl.path), shown(e.ID), shown(e.ParentID))
				continue
			}
			if err := session.AppendAll(session.ForImport(ctx), fl.store, []*session.Entry{e}); err != nil {
				if !errors.Is(err, session.ErrInvalidEntry) {
					return err
				}
				left[e.ID] = true
				fmt.Fprintf(log, "%s: entry %s skipped: %v\n", shown(fl.path), shown(e.ID), err)
				continue
			}
			kept = append(kept, e)
		}
		fresh = kept
	}
	if len(fresh) > 0 {
		fmt.Fprintf(log, "%s: +%d entries in session %s\n", shown(fl.path), len(fresh), fl.st.Session)
	}
	return nil
}

func (fl *file) closeStore(ctx context.Context, log io.Writer) {
	if fl.store == nil {
		return
	}
	if err := fl.store.Close(ctx); err != nil {
		fmt.Fprintf(log, "%s: closing session %s: %v\n", shown(fl.path), fl.st.Session, err)
	}
	fl.store = nil
}

func readAt(f *os.File, off, n int64) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	buf := make([]byte, n)
	k, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:k], nil
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
