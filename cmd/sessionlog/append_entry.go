package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// maxEntriesAtOnce bounds the entries of one `append -entry`.
const maxEntriesAtOnce = 1000

// decodeEntries reads pi entries as the service does: strictly (no member
// twice, valid UTF-8, known members of the kinds they hold; entries of
// unknown types are kept as they are), each error naming the line and the
// member. One JSON object, or one per line.
func decodeEntries(data []byte) ([]*session.Entry, error) {
	var entries []*session.Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxStdinMessage+1)
	no := 0
	for sc.Scan() {
		no++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if len(entries) == maxEntriesAtOnce {
			return nil, fmt.Errorf("more than %d entries on stdin: append them in several batches", maxEntriesAtOnce)
		}
		// As the service reads its requests: no member twice, valid UTF-8.
		v := jsontext.Value(slices.Clone(line))
		if err := v.Canonicalize(); err != nil {
			return nil, fmt.Errorf("entry on line %d: not strict JSON: %w", no, err)
		}
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &probe) == nil && probe.Type == string(session.TypeSession) {
			return nil, fmt.Errorf("entry on line %d: a session header is not an entry (import a file with `sessionlog import`)", no)
		}
		e, err := codec.DecodeEntryStrict(line)
		if err != nil {
			return nil, fmt.Errorf("entry on line %d: %w", no, err)
		}
		if e.ID != "" {
			if err := session.ValidateID(e.ID); err != nil {
				return nil, fmt.Errorf("entry on line %d: id: %w", no, err)
			}
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(entries) == 0 {
		return nil, usageError("no entries on stdin")
	}
	return entries, nil
}

// appendEntries completes entries as the service does (ids, parents
// chained from the leaf, timestamps), checks every field, and appends
// them as one batch.
func appendEntries(ctx context.Context, e env, s *session.Session, entries []*session.Entry, withSeq bool) error {
	if _, err := s.Fill(ctx, entries, nil); err != nil {
		return err
	}
	for i, en := range entries {
		if err := session.ValidateWrite(en); err != nil {
			var fe *session.FieldError
			if errors.As(err, &fe) {
				return fmt.Errorf("entry %d (%s), at %s: %w", i+1, en.Type, fe.Pointer, err)
			}
			return fmt.Errorf("entry %d (%s): %w", i+1, en.Type, err)
		}
	}
	if err := session.AppendAll(ctx, s.Store(), entries); err != nil {
		return err
	}
	return printAppended(ctx, e, s, entries, withSeq)
}
