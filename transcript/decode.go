package transcript

import (
	"bytes"
	"errors"
	"fmt"
	json "github.com/go-json-experiment/json/v1"
	"path"
	"strings"
	"time"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// Format is a kind of session file.
type Format string

const (
	FormatPi         Format = "pi"
	FormatClaudeCode Format = "claude-code"
	FormatCodex      Format = "codex"
)

// Formats lists the formats by name, for flags.
var Formats = []Format{FormatPi, FormatClaudeCode, FormatCodex}

// ParseFormat reads a format's name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("%w: %q (pi, claude-code or codex)", ErrUnknownFormat, s)
}

var (
	// ErrUnknownFormat is a file none of the formats recognises, or a
	// format name that is none of them.
	ErrUnknownFormat = errors.New("transcript: not a session file of a known format")
	// ErrNotJSON is a line that is not a JSON value.
	ErrNotJSON = errors.New("transcript: not JSON")
	// ErrBadLine is a JSON line whose members are not what its format
	// writes (a message that is not an object, say).
	ErrBadLine = errors.New("transcript: bad line")
	// ErrNoLines is a file without a line to import.
	ErrNoLines = errors.New("transcript: no lines")
	// ErrNotImported is an export in a format the session was not
	// imported from: it has none of that format's lines.
	ErrNotImported = errors.New("transcript: the session holds no lines of that format")
)

// Detect tells a file's format from its first lines: pi's start with a
// session header; Codex's with a line whose payload is a session_meta (or,
// before mid-2025, a line with an id and instructions); Claude Code's
// lines carry a sessionId, or are its snapshots, summaries and queue lines.
func Detect(data []byte) (Format, error) {
	data = TrimBOM(data)
	for i, line := range bytes.SplitN(data, []byte("\n"), 16) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var probe struct {
			Type         string          `json:"type"`
			SessionID    string          `json:"sessionId"`
			Payload      json.RawMessage `json:"payload"`
			ID           string          `json:"id"`
			Instructions json.RawMessage `json:"instructions"`
			RecordType   string          `json:"record_type"`
		}
		if json.Unmarshal(line, &probe) != nil {
			continue
		}
		switch {
		case i == 0 && probe.Type == "session":
			return FormatPi, nil
		case probe.Type == "session_meta" && len(probe.Payload) > 0,
			i == 0 && probe.ID != "" && len(probe.Instructions) > 0:
			return FormatCodex, nil
		case probe.SessionID != "",
			probe.Type == "file-history-snapshot", probe.Type == "summary", probe.Type == "queue-operation":
			return FormatClaudeCode, nil
		}
	}
	return "", ErrUnknownFormat
}

// bom is the UTF-8 byte order mark some editors and tools put first.
var bom = []byte("\xef\xbb\xbf")

// TrimBOM drops a UTF-8 byte order mark from the start of a file's data
// (or its first line): the rule of every reader of session files, an
// import and a follow alike. It is not JSON, and nothing else in a
// file changes for it.
func TrimBOM(b []byte) []byte { return bytes.TrimPrefix(b, bom) }

// Source names a transcript: the session it becomes.
type Source struct {
	// ID is the session's id.
	ID string
	// ParentSession is the main session's id for a subagent's file.
	ParentSession string
	// File is the file's name, kept in the header's metadata.
	File string
}

// SourceFor is the Source of a Claude Code or Codex file at path p: a
// Claude Code session is named by its file (<uuid>.jsonl), a subagent
// (<uuid>/subagents/agent-<id>.jsonl) by both, a Codex rollout
// (rollout-<time>-<uuid>.jsonl) by its uuid; "" when the name says
// nothing (the lines then name the session).
func SourceFor(f Format, p string) Source {
	p = path.Clean(strings.ReplaceAll(p, "\\", "/"))
	base := strings.TrimSuffix(path.Base(p), ".jsonl")
	src := Source{File: path.Base(p)}
	switch f {
	case FormatClaudeCode:
		dir := path.Dir(p)
		if path.Base(dir) == "subagents" {
			parent := path.Base(path.Dir(dir))
			if session.ValidateSessionID(parent) == nil {
				src.ParentSession = parent
				src.ID = parent + "_" + base
				src.File = parent + "/subagents/" + src.File
			}
		} else {
			src.ID = base
		}
	case FormatCodex:
		// rollout-2025-12-28T12-18-30-019b64e5-57fa-7463-b644-fba7e456f905
		if parts := strings.Split(base, "-"); len(parts) >= 5 {
			src.ID = strings.Join(parts[len(parts)-5:], "-")
		}
	}
	if session.ValidateSessionID(src.ID) != nil {
		src.ID = ""
	}
	return src
}

// Decoded is a transcript as a session.
type Decoded struct {
	Header  session.Header
	Entries []*session.Entry
	// Issues are the lines skipped (Lenient mode).
	Issues []*codec.LineError
}

// LineDecoder decodes a transcript one line at a time, as a follow reads
// a file that grows: each line's entries follow those of the lines before.
type LineDecoder interface {
	// Line decodes line number no (1-based), without its newline.
	Line(no int, line []byte) ([]*session.Entry, error)
	// Header is the session's header, from what the lines so far say; ok
	// is false until a line has given its time.
	Header(src Source) (h session.Header, ok bool)
}

// NewLineDecoder returns a decoder for f.
func NewLineDecoder(f Format) (LineDecoder, error) {
	switch f {
	case FormatPi:
		return &piLines{}, nil
	case FormatClaudeCode:
		return &headed{dec: newClaudeDecoder()}, nil
	case FormatCodex:
		return &headed{dec: newCodexDecoder()}, nil
	}
	return nil, fmt.Errorf("%w: %q has no line decoder", ErrUnknownFormat, f)
}

// Decode reads a whole Claude Code or Codex file. In Strict mode a bad
// line refuses the file (every bad line is listed in a *codec.FileError);
// in Lenient mode it is skipped and reported in Issues. A last line
// without its newline that is not JSON is a write cut short: skipped in
// both modes, and reported.
func Decode(f Format, data []byte, src Source, mode codec.Mode, opts ...Option) (*Decoded, error) {
	if f == FormatPi {
		return nil, fmt.Errorf("%w: pi's files are read by codec.DecodeFile", ErrUnknownFormat)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	items := splitItems(TrimBOM(data), src)
	var out *Decoded
	var bad []*codec.LineError
	var h *headed
	ok := false
	if o.run != nil {
		out, bad, h, ok = decodeSpread(f, src, items, o)
	}
	if !ok {
		var err error
		if h, err = o.decoder(f); err != nil {
			return nil, err
		}
		out, bad = decodeItems(src, items, func(i int) ([]*session.Entry, error) { return h.Line(items[i].no, items[i].line) })
	}
	if len(bad) > 0 && mode == codec.Strict {
		return nil, &codec.FileError{File: src.File, Issues: bad}
	}
	out.Issues = append(out.Issues, bad...)
	hd, ok := h.Header(src)
	if !ok || len(out.Entries) == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoLines, src.File)
	}
	out.Header = hd
	return out, nil
}

// fileItem is a non-blank line of a file: its number, its bytes, whether
// it ends in a newline, and err when it is refused unread.
type fileItem struct {
	no       int
	line     []byte
	complete bool
	err      *codec.LineError
}

func splitItems(data []byte, src Source) []fileItem {
	items := make([]fileItem, 0, bytes.Count(data, []byte("\n"))+1)
	no := 0
	for len(data) > 0 {
		no++
		line, rest, complete := bytes.Cut(data, []byte("\n"))
		data = rest
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		it := fileItem{no: no, line: line, complete: complete}
		if len(line) > codec.MaxLineBytes {
			it.err = &codec.LineError{File: src.File, Line: no, Err: fmt.Errorf("%w: %d bytes", codec.ErrLineTooLong, len(line))}
		}
		items = append(items, it)
	}
	return items
}

// decodeItems decodes the items in order through line (of an item's
// index): the entries, the torn last line in Issues, and the bad lines.
func decodeItems(src Source, items []fileItem, line func(i int) ([]*session.Entry, error)) (*Decoded, []*codec.LineError) {
	out := &Decoded{}
	var bad []*codec.LineError
	for i, it := range items {
		if it.err != nil {
			bad = append(bad, it.err)
			continue
		}
		entries, err := line(i)
		if err != nil {
			le := &codec.LineError{File: src.File, Line: it.no, Err: err}
			if !it.complete && errors.Is(err, ErrNotJSON) {
				le.Err = fmt.Errorf("%w: %w", codec.ErrTornWrite, err)
				out.Issues = append(out.Issues, le)
				continue
			}
			bad = append(bad, le)
			continue
		}
		out.Entries = append(out.Entries, entries...)
	}
	return out, bad
}

// headed is a line decoder that also gathers the header's members.
type headed struct {
	dec interface {
		line(no int, raw []byte) ([]*session.Entry, error)
		headerInfo(raw []byte, h *headerInfo)
	}
	info headerInfo
}

// headerInfo is what a session's header takes from its lines: the first
// id, time, working directory and version they give.
type headerInfo struct {
	id, cwd, version string
	ts               string
}

func (h *headed) Line(no int, line []byte) ([]*session.Entry, error) {
	entries, err := h.dec.line(no, line)
	if err == nil {
		h.dec.headerInfo(line, &h.info)
	}
	return entries, err
}

func (h *headed) Header(src Source) (session.Header, bool) {
	id := src.ID
	if id == "" {
		id = h.info.id
	}
	if h.info.ts == "" || session.ValidateSessionID(id) != nil {
		return session.Header{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, h.info.ts)
	if err != nil {
		return session.Header{}, false
	}
	meta := map[string]string{"source": string(formatOf(h.dec)), "file": src.File}
	if h.info.version != "" {
		meta["version"] = h.info.version
	}
	mj, _ := json.Marshal(meta)
	return session.Header{
		Version: session.CurrentVersion, ID: id, Timestamp: session.FormatTime(t), Cwd: h.info.cwd,
		ParentSession: src.ParentSession, Metadata: mj,
	}, true
}

func formatOf(d any) Format {
	if _, ok := d.(*codexDecoder); ok {
		return FormatCodex
	}
	return FormatClaudeCode
}

func (d *claudeDecoder) headerInfo(raw []byte, h *headerInfo) {
	if h.ts != "" && h.cwd != "" {
		return
	}
	var l claudeLine
	if json.Unmarshal(raw, &l) != nil {
		return
	}
	if h.id == "" {
		h.id = l.SessionID
	}
	if h.ts == "" {
		h.ts = l.Timestamp
	}
	if h.cwd == "" {
		h.cwd = l.CWD
	}
	if h.version == "" {
		h.version = l.Version
	}
}
