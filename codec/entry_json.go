package codec

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/session"
)

// entryRequires says which members are always written for an entry type:
// the ones pi's loader reads without checking they exist.
func entryRequires(t session.EntryType, key string) bool {
	switch key {
	case "type", "id", "parentId", "timestamp":
		return true
	case "message":
		return t == session.TypeMessage
	case "thinkingLevel":
		return t == session.TypeThinkingLevelChange
	case "provider":
		return t == session.TypeModelChange || t == session.TypeUsage
	case "modelId":
		return t == session.TypeModelChange
	case "kind", "model", "usage":
		return t == session.TypeUsage
	case "activeTools":
		return t == session.TypeActiveToolsChange
	case "summary":
		return t == session.TypeCompaction || t == session.TypeBranchSummary
	case "firstKeptEntryId", "tokensBefore":
		return t == session.TypeCompaction
	case "fromId":
		return t == session.TypeBranchSummary
	case "customType":
		return t == session.TypeCustom || t == session.TypeCustomMessage
	case "content", "display":
		return t == session.TypeCustomMessage
	case "targetId":
		return t == session.TypeLabel || t == session.TypeContextEdit
	}
	return false
}

// AppendEntry appends the JSON encoding of e (one line, no newline) to b.
func AppendEntry(b []byte, e *session.Entry) ([]byte, error) {
	if e.Type == "" || e.Type == session.TypeSession {
		return b, fmt.Errorf("%w: entry %q has type %q", ErrInvalid, e.ID, e.Type)
	}
	if e.ID == "" {
		return b, fmt.Errorf("%w: %s entry has no id", ErrInvalid, e.Type)
	}
	var f flat
	flatten(e, &f)
	return appendFlat(b, e, &f)
}

// appendFlat is AppendEntry writing e's envelope, message and verbatim
// members with the members in f.
func appendFlat(b []byte, e *session.Entry, f *flat) ([]byte, error) {
	t := e.Type
	req := func(k string) bool { return entryRequires(t, k) }
	w := newObjIn(b, e.Extra, e.Layout)
	w.str("type", string(t), true)
	// pi spreads custom fields before the envelope for these two types;
	// writing the same order keeps its files byte-identical on round trip.
	customFirst := t == session.TypeCustom || t == session.TypeCustomMessage
	if customFirst {
		writeCustom(&w, t, f, req)
	}
	w.str("id", e.ID, true)
	if e.ParentID == "" {
		w.null("parentId")
	} else {
		w.str("parentId", e.ParentID, true)
	}
	w.str("timestamp", e.Timestamp, true)
	if !customFirst {
		writeCustom(&w, t, f, req)
	}
	w.message("message", e.Message, req("message"))
	w.str("thinkingLevel", f.ThinkingLevel, req("thinkingLevel"))
	w.str("kind", f.Kind, req("kind"))
	w.str("provider", f.Provider, req("provider"))
	w.str("modelId", f.ModelID, req("modelId"))
	w.str("model", f.Model, req("model"))
	if w.want("activeTools", f.ActiveTools != nil, req("activeTools")) {
		w.key("activeTools")
		w.b = append(w.b, '[')
		for i, name := range f.ActiveTools {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendString(w.b, name)
		}
		w.b = append(w.b, ']')
	}
	w.str("fromId", f.FromID, req("fromId"))
	w.str("summary", f.Summary, req("summary"))
	w.str("firstKeptEntryId", f.FirstKeptEntryID, req("firstKeptEntryId"))
	w.int("tokensBefore", f.TokensBefore, req("tokensBefore"))
	if w.want("retainedTail", f.RetainedTail != nil, false) {
		w.key("retainedTail")
		w.b = append(w.b, '[')
		for i := range f.RetainedTail {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			var err error
			w.b, err = appendMessage(w.b, &f.RetainedTail[i])
			w.fail(err)
		}
		w.b = append(w.b, ']')
	}
	if !customFirst {
		w.raw("details", f.Details, false, "")
	}
	if w.want("usage", f.Usage != nil, req("usage")) {
		u := f.Usage
		if u == nil {
			u = &session.Usage{}
		}
		w.key("usage")
		w.b, w.err = appendUsage(w.b, u, w.err)
	}
	w.str("note", f.Note, false)
	w.bool("fromHook", f.FromHook, false)
	w.message("systemMessage", f.SystemMessage, false)
	w.str("targetId", f.TargetID, req("targetId"))
	if f.Edit != nil {
		w.key("replacement")
		var err error
		w.b, err = appendEdit(w.b, f.Edit)
		w.fail(err)
	}
	w.str("label", f.Label, false)
	w.str("name", f.Name, false)
	return w.close()
}

// message writes a message member: m, or an empty message where one is
// required and none is set.
func (w *objWriter) message(key string, m *session.Message, required bool) {
	if !w.want(key, m != nil, required) {
		return
	}
	w.key(key)
	if m == nil {
		m = &session.Message{}
	}
	var err error
	w.b, err = appendMessage(w.b, m)
	w.fail(err)
}

// appendEdit writes a context_edit's replacement: null, or {content}.
func appendEdit(b []byte, c *session.Replacement) ([]byte, error) {
	if c.Remove {
		return append(b, "null"...), nil
	}
	w := newObjIn(b, c.Extra, c.Layout)
	if w.want("content", !c.Content.IsZero(), true) {
		w.key("content")
		w.b, w.err = appendContent(w.b, c.Content, w.err)
	}
	return w.close()
}

// writeCustom writes the members of custom and custom_message entries.
func writeCustom(w *objWriter, t session.EntryType, f *flat, req func(string) bool) {
	w.str("customType", f.CustomType, req("customType"))
	w.raw("data", f.Data, false, "")
	if w.want("content", !f.Content.IsZero(), req("content")) {
		w.key("content")
		w.b, w.err = appendContent(w.b, f.Content, w.err)
	}
	w.bool("display", f.Display, req("display"))
	if t == session.TypeCustom || t == session.TypeCustomMessage {
		w.raw("details", f.Details, false, "")
	}
}

// EncodeEntry returns the JSON line for e, without the newline.
func EncodeEntry(e *session.Entry) ([]byte, error) { return AppendEntry(nil, e) }

// DecodeEntry decodes one JSON line holding an entry (not a header).
func DecodeEntry(line []byte) (*session.Entry, error) {
	return decodeEntry(getReader(line), false, false)
}

// DecodeEntryStrict is DecodeEntry for input from clients rather than
// files: a known member holding the wrong kind of value, which
// DecodeEntry would keep verbatim, is refused with a *MemberError naming
// it. Unknown members, and every member of an entry of an unknown type,
// are kept verbatim as DecodeEntry keeps them: pi adds members and types
// from one release to the next. id and parentId may be absent (the
// caller assigns them); null and absent parentIds both decode as "".
func DecodeEntryStrict(line []byte) (*session.Entry, error) {
	return decodeEntry(getReader(line), true, true)
}

// DecodeLegacyEntry decodes an entry of a version 1 file, which has no id
// and no parentId; the caller assigns both.
func DecodeLegacyEntry(line []byte) (*session.Entry, error) {
	return decodeEntry(getReader(line), false, true)
}

// decodeEntry decodes the entry r holds and returns r to its pool.
func decodeEntry(r *reader, strict, legacy bool) (*session.Entry, error) {
	defer putReader(r)
	r.strict = strict
	e := &session.Entry{}
	retry, err := r.entry(e, legacy, "")
	if retry != "" {
		// A member the decoder knows came before a type it does not
		// belong to (or a type the decoder does not know): read the line
		// again knowing the type, keeping such members verbatim.
		r.sc.Reset(r.data)
		r.br.Reset(r.data)
		if r.jd != nil && r.d == r.jd {
			r.jd.Reset(&r.br, decoderOpts...)
		}
		e = &session.Entry{}
		_, err = r.entry(e, legacy, retry)
	}
	if err != nil {
		return nil, err
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return e, nil
}

// end checks nothing but whitespace follows the value.
func (r *reader) end() error {
	if _, err := r.d.ReadToken(); err != io.EOF {
		return fmt.Errorf("%w: text after the JSON value", ErrMalformed)
	}
	return nil
}

// entry decodes an entry into e: the envelope, a message entry's message,
// and the members of its type into its Body. Every other member — all of
// them for a type the decoder does not know — is kept verbatim, in order,
// so that the line round-trips byte for byte. typ, when set, is the type
// before it is read. retry, when set, is the type of an entry with a
// member the decoder knows read before the type it does not belong to:
// the caller reads the line again with typ set to it.
func (r *reader) entry(e *session.Entry, legacy bool, typ session.EntryType) (retry session.EntryType, err error) {
	var fs fieldSet
	var hasType, hasID, hasParent bool
	f := &r.flat
	*f = flat{}
	r.early = r.early[:0]
	err = r.objectIn("line", &e.Layout, func() (*order, *[]session.Field) {
		t := e.Type
		e.Extra = fs.finish(func(k string) bool { return entryRequires(t, k) })
		return entryOrder(t), &e.Extra
	}, func(key string) error {
		switch key {
		case "type":
			hasType = true
			return r.structural(key, (*string)(&e.Type), false, r.readSymbol)
		case "id":
			hasID = true
			return r.structural(key, &e.ID, false, r.readString)
		case "parentId":
			hasParent = true
			return r.structural(key, &e.ParentID, true, r.readString)
		case "timestamp":
			return r.str(key, &e.Timestamp, &fs)
		}
		switch {
		case typ != "":
			if !session.Defines(typ, key) {
				return r.keepUnknown(key, &fs)
			}
		case hasType:
			if !session.Defines(e.Type, key) {
				return r.keepUnknown(key, &fs)
			}
		default:
			r.early = append(r.early, key)
		}
		return r.entryMember(key, e, f, &fs)
	})
	if err != nil {
		return "", malformed(err)
	}
	switch {
	case !hasType || e.Type == "":
		return "", fmt.Errorf("%w: no type", ErrMalformed)
	case e.Type == session.TypeSession:
		return "", fmt.Errorf("%w: a session header where an entry belongs", ErrMalformed)
	case typ == "" && r.foreignEarly(e.Type):
		return e.Type, nil
	case legacy:
	case !hasID || e.ID == "":
		return "", fmt.Errorf("%w: %s entry has no id", ErrMalformed, e.Type)
	case !hasParent:
		return "", fmt.Errorf("%w: entry %s has %w", ErrMalformed, e.ID, errNoParent)
	case e.ParentID == e.ID && e.ID != "":
		return "", fmt.Errorf("%w: entry %s is its own parent", ErrMalformed, e.ID)
	}
	e.Body = f.body(e.Type)
	return "", nil
}

// foreignEarly reports whether a member read before the type is not one
// of t's.
func (r *reader) foreignEarly(t session.EntryType) bool {
	for _, k := range r.early {
		if !session.Defines(t, k) {
			return true
		}
	}
	return false
}

// errNoParent marks an entry without a parentId member (pi's loader keeps
// it as a root; DecodeFile's Lenient mode does too).
var errNoParent = errors.New("no parentId")

// structural reads a member the tree depends on: it must be a string (or
// null where nullable); anything else makes the line unusable.
func (r *reader) structural(key string, dst *string, nullable bool, read func() (string, error)) error {
	k := r.d.PeekKind()
	if k == 'n' && nullable {
		_, err := r.d.ReadToken()
		*dst = ""
		return err
	}
	if k != '"' {
		v, err := r.d.ReadValue()
		if err != nil {
			return err
		}
		return fmt.Errorf("%q is %s (%s), not a string", key, kindName(k), truncate(v))
	}
	var err error
	*dst, err = read()
	return err
}

func (r *reader) messages(key string, dst *[]session.Message, fs *fieldSet) error {
	if r.d.PeekKind() != '[' {
		return r.keep(key, fs)
	}
	if _, err := r.d.ReadToken(); err != nil {
		return err
	}
	out := []session.Message{}
	for r.d.PeekKind() != ']' {
		var m session.Message
		if err := r.message(&m); err != nil {
			return err
		}
		out = append(out, m)
	}
	*dst = out
	_, err := r.d.ReadToken()
	return err
}

func malformed(err error) error {
	if errors.Is(err, ErrMalformed) {
		return err
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %v", ErrMalformed, se.Err)
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}

func truncate(v []byte) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}

// AppendHeader appends the JSON encoding of the session header.
func AppendHeader(b []byte, h *session.Header) ([]byte, error) {
	if h.ID == "" {
		return b, fmt.Errorf("%w: header has no id", ErrInvalid)
	}
	w := newObj(b, h.Extra)
	w.str("type", string(session.TypeSession), true)
	w.int("version", int64(h.Version), true)
	w.str("id", h.ID, true)
	w.str("timestamp", h.Timestamp, true)
	w.str("cwd", h.Cwd, true)
	w.str("parentSession", h.ParentSession, false)
	w.raw("metadata", h.Metadata, false, "")
	return w.close()
}

// EncodeHeader returns the JSON line of a session header.
func EncodeHeader(h *session.Header) ([]byte, error) { return AppendHeader(nil, h) }

// DecodeHeader decodes a session header line. A header without a version
// is version 1, as pi reads it.
func DecodeHeader(line []byte) (*session.Header, error) {
	r := getReader(line)
	defer putReader(r)
	h := &session.Header{}
	var fs fieldSet
	var typ string
	var version int64 = -1
	err := r.object("header", func(key string) error {
		switch key {
		case "type":
			return r.structural(key, &typ, false, r.readString)
		case "id":
			return r.structural(key, &h.ID, false, r.readString)
		case "version":
			return r.integer(key, &version, &fs)
		case "timestamp":
			return r.str(key, &h.Timestamp, &fs)
		case "cwd":
			return r.str(key, &h.Cwd, &fs)
		case "parentSession":
			return r.str(key, &h.ParentSession, &fs)
		case "metadata":
			return r.raw(&h.Metadata)
		}
		return r.keep(key, &fs)
	})
	if err != nil {
		return nil, malformed(err)
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	if typ != string(session.TypeSession) {
		return nil, fmt.Errorf("%w: first line has type %q, not a session header", ErrMalformed, typ)
	}
	if h.ID == "" {
		return nil, fmt.Errorf("%w: session header has no id", ErrMalformed)
	}
	h.Version = int(version)
	if version < 0 {
		h.Version = 1
	}
	h.Extra = fs.finish(func(k string) bool {
		return k == "cwd" || k == "timestamp" || k == "version"
	})
	return h, nil
}

// PeekType returns the "type" member of a JSON line without decoding the
// rest, or "" if the line has none.
func PeekType(line []byte) string {
	r := getReader(line)
	defer putReader(r)
	var typ string
	stop := errors.New("stop")
	_ = r.object("line", func(key string) error {
		if key == "type" {
			if r.d.PeekKind() == '"' {
				var err error
				if typ, err = r.readString(); err != nil {
					return err
				}
			}
			return stop
		}
		return r.d.SkipValue()
	})
	return typ
}
