package codec

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/session"
)

// reader decodes one JSON value token by token, so that the whole line is
// scanned once however deeply the entry nests.
type reader struct {
	d  tokens
	sc scanner
	// shared lets strings share the bytes of data rather than copy them,
	// for a caller that never changes data afterwards (WithSharedData).
	shared bool
	// jd is jsontext's Decoder, for what is checked against it (tests).
	br bytes.Reader
	jd *jsontext.Decoder
	// strict refuses what would otherwise be kept verbatim: unknown
	// members and known members of the wrong kind.
	strict bool
	// syms are the repeated values learnt (strings.go); scratch holds an
	// unescaped string.
	syms    symbols
	scratch []byte
	blocks  []session.ContentBlock // content being read (message_json.go)
	// keys are the member names of the objects being read, the
	// innermost object's last (layout.go).
	keys []string
	// data is what the reader reads, to read it again (entry_json.go).
	data []byte
	// flat holds the members of the entry being read, early the known
	// members read before its type (entry_json.go).
	flat  flat
	early []string
	// memo holds the layouts of the last member sequences read (layout.go).
	memo layoutMemo
}

var readerPool = sync.Pool{New: func() any { return &reader{} }}

// JSON.parse accepts duplicate names (last wins) and lone surrogates.
var decoderOpts = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

func getReader(data []byte) *reader {
	r := readerPool.Get().(*reader)
	r.sc.Reset(data)
	r.d = &r.sc
	r.data = data
	return r
}

// getJSONTextReader is getReader with jsontext's Decoder tokenizing.
func getJSONTextReader(data []byte) *reader {
	r := readerPool.Get().(*reader)
	r.data = data
	r.br.Reset(data)
	if r.jd == nil {
		r.jd = jsontext.NewDecoder(&r.br, decoderOpts...)
	} else {
		r.jd.Reset(&r.br, decoderOpts...)
	}
	r.d = r.jd
	return r
}

func putReader(r *reader) {
	r.br.Reset(nil)
	r.sc.Reset(nil)
	r.d = nil
	r.shared = false
	r.data = nil
	r.keys = r.keys[:0]
	r.strict = false
	r.flat = flat{} // the pool keeps no entry's values
	r.early = r.early[:0]
	if cap(r.blocks) > 64 {
		r.blocks = nil // a pooled reader keeps no outsized buffer
	}
	if cap(r.scratch) > 64<<10 {
		r.scratch = nil
	}
	readerPool.Put(r)
}

// fieldSet collects unknown members and known members whose value had to be
// kept raw (wrong JSON kind) or that were present with a zero value.
type fieldSet struct {
	extra []session.Field
	// index finds a name in extra once it holds many (see keySet).
	index map[string]int
	zeros []session.Field
	// noZeros drops zeros at once, for objects whose members are all
	// always written.
	noZeros bool
}

func (r *reader) object(what string, fn func(key string) error) error {
	base := len(r.keys)
	defer func() { r.keys = r.keys[:base] }()
	return r.objectKeys(what, fn)
}

// objectIn reads an object as object does, then sets *l to its layout as
// the order ord gives reads it (ord is called once the object is read:
// the order of an entry depends on its type). extra is the object's kept
// members then.
func (r *reader) objectIn(what string, l *session.Layout, ord func() (*order, *[]session.Field), fn func(key string) error) error {
	base := len(r.keys)
	defer func() { r.keys = r.keys[:base] }()
	if err := r.objectKeys(what, fn); err != nil {
		return err
	}
	o, extra := ord()
	*l = r.memo.layout(o, r.keys[base:], *extra)
	return nil
}

// objectKeys reads an object, calling fn for each member and noting its
// name in r.keys.
func (r *reader) objectKeys(what string, fn func(key string) error) error {
	tok, err := r.d.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '{' {
		return fmt.Errorf("%s is %s, not an object", what, kindName(tok.Kind()))
	}
	for r.d.PeekKind() != '}' {
		key, err := r.readName()
		if err != nil {
			return err
		}
		r.keys = append(r.keys, key)
		if err := fn(key); err != nil {
			return err
		}
	}
	_, err = r.d.ReadToken()
	return err
}

// keepUnknown stores the next value, a member the decoder does not know,
// verbatim under key.
func (r *reader) keepUnknown(key string, fs *fieldSet) error {
	v, err := r.d.ReadValue()
	if err != nil {
		return err
	}
	fs.add(key, v)
	return nil
}

// keep stores the next value, a known member holding a kind of value it
// does not hold, verbatim under key; a strict reader refuses it, unless
// it is a reference to content stored apart.
func (r *reader) keep(key string, fs *fieldSet) error {
	v, err := r.d.ReadValue()
	if err != nil {
		return err
	}
	if _, isRef, _ := session.ParseBlobRef(session.Raw(v)); r.strict && !isRef {
		return &MemberError{Pointer: string(r.d.StackPointer()), Kind: kindName(v.Kind())}
	}
	fs.add(key, v)
	return nil
}

// add keeps a member verbatim; of two members of one name the last wins,
// as in JSON.parse.
func (fs *fieldSet) add(key string, v []byte) {
	if i, ok := fs.find(key); ok {
		fs.extra[i].Value = session.Raw(bytes.Clone(v))
		return
	}
	fs.extra = append(fs.extra, session.Field{Key: key, Value: session.Raw(bytes.Clone(v))})
	if fs.index != nil {
		fs.index[key] = len(fs.extra) - 1
	} else if len(fs.extra) > smallSet {
		fs.index = make(map[string]int, 2*len(fs.extra))
		for i, f := range fs.extra {
			fs.index[f.Key] = i
		}
	}
}

// find is where key is in extra.
func (fs *fieldSet) find(key string) (int, bool) {
	if fs.index != nil {
		i, ok := fs.index[key]
		return i, ok
	}
	for i := range fs.extra {
		if fs.extra[i].Key == key {
			return i, true
		}
	}
	return 0, false
}

func (r *reader) zero(key string, lit string, fs *fieldSet) {
	if fs.noZeros {
		return
	}
	fs.zeros = append(fs.zeros, session.Field{Key: key, Value: session.Raw(lit)})
}

func (r *reader) str(key string, dst *string, fs *fieldSet) error {
	return r.strOf(key, dst, fs, r.readString)
}

// sym is str for a value likely to repeat across entries (strings.go).
func (r *reader) sym(key string, dst *string, fs *fieldSet) error {
	return r.strOf(key, dst, fs, r.readSymbol)
}

func (r *reader) strOf(key string, dst *string, fs *fieldSet, read func() (string, error)) error {
	if r.d.PeekKind() != '"' {
		return r.keep(key, fs)
	}
	var err error
	if *dst, err = read(); err != nil {
		return err
	}
	if *dst == "" {
		r.zero(key, `""`, fs)
	}
	return nil
}

func (r *reader) boolean(key string, dst *bool, fs *fieldSet) error {
	k := r.d.PeekKind()
	if k != 't' && k != 'f' {
		return r.keep(key, fs)
	}
	if _, err := r.d.ReadValue(); err != nil {
		return err
	}
	*dst = k == 't'
	if !*dst {
		r.zero(key, "false", fs)
	}
	return nil
}

func (r *reader) integer(key string, dst *int64, fs *fieldSet) error {
	if r.d.PeekKind() != '0' {
		return r.keep(key, fs)
	}
	v, err := r.d.ReadValue()
	if err != nil {
		return err
	}
	n, perr := strconv.ParseInt(string(v), 10, 64)
	if perr == nil && n == 0 && v[0] == '-' {
		fs.add(key, v) // -0: kept as written, as 1.5 is below
		return nil
	}
	if perr != nil {
		if r.strict {
			return &MemberError{Pointer: string(r.d.StackPointer()), Kind: "a number", Reason: "the number " + truncate(v) + " where an integer belongs"}
		}
		// 1.5 or 1e3 where an integer belongs: keep the number as written.
		fs.add(key, v)
		return nil
	}
	*dst = n
	if n == 0 {
		r.zero(key, "0", fs)
	}
	return nil
}

func (r *reader) float(key string, dst *float64, fs *fieldSet) error {
	if r.d.PeekKind() != '0' {
		return r.keep(key, fs)
	}
	v, err := r.d.ReadValue()
	if err != nil {
		return err
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return err // out of range
	}
	*dst = f
	if !canonicalFloat(f, string(v)) {
		// 0.10 or 1.0: the value is f, its written form is kept beside
		// it (objWriter.float writes it while the value is still f).
		fs.add(key, v)
	}
	return nil
}

func (r *reader) raw(dst *session.Raw) error {
	v, err := r.d.ReadValue()
	if err != nil {
		return err
	}
	*dst = session.Raw(bytes.Clone(v))
	return nil
}

func (r *reader) strings(key string, dst *[]string, fs *fieldSet) error {
	if r.d.PeekKind() != '[' {
		return r.keep(key, fs)
	}
	v, err := r.d.ReadValue()
	if err != nil {
		return err
	}
	out := []string{}
	sub := getReader(v)
	defer putReader(sub)
	if _, err := sub.d.ReadToken(); err != nil {
		return err
	}
	for sub.d.PeekKind() != ']' {
		if sub.d.PeekKind() != '"' {
			if r.strict {
				return &MemberError{Pointer: string(r.d.StackPointer()), Kind: "an array", Reason: "an array of names holds something other than strings"}
			}
			// Not a list of names: keep it as written.
			fs.add(key, v)
			return nil
		}
		name, err := sub.readSymbol()
		if err != nil {
			return err
		}
		out = append(out, name)
	}
	*dst = out
	return nil
}

// finish appends the zero-valued members that the encoder would not write
// on its own, so that an explicit false or "" survives a round trip.
func (fs *fieldSet) finish(required func(key string) bool) []session.Field {
	for _, z := range fs.zeros {
		if !required(z.Key) {
			fs.extra = append(fs.extra, z)
		}
	}
	return fs.extra
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "invalid"
}

// byKind reads the members of an object whose kind member (a block's
// type, a message's role) decides which of the others are its own: those
// defines names (once the kind is known) are decoded by own, the others
// kept verbatim in fs, in place. A member read before the kind is held as
// written until the kind is known. (defines, own and fs are passed to
// each call, not kept here: kept in a struct, what they capture would be
// moved to the heap, for every block and message read.)
type byKind struct {
	held  []heldMember
	known bool
}

// heldMember is a member read before its object's kind, as written, and
// where it was (its JSON pointer, for the errors of its decoding).
type heldMember struct {
	key   string
	value []byte
	at    string
}

// member reads a member other than the kind.
func (r *reader) member(k *byKind, key string, fs *fieldSet, defines func(key string) bool, own func(key string) error) error {
	switch {
	case !k.known:
		v, err := r.d.ReadValue()
		k.held = append(k.held, heldMember{key: key, value: bytes.Clone(v), at: string(r.d.StackPointer())})
		return err
	case !defines(key):
		return r.keepUnknown(key, fs)
	}
	return own(key)
}

// kindRead is called once the kind member is read (or, with the object
// read, when it has none): the members held are decoded or kept.
func (r *reader) kindRead(k *byKind, fs *fieldSet, defines func(key string) bool, own func(key string) error) error {
	if k.known {
		return nil
	}
	k.known = true
	for _, h := range k.held {
		if !defines(h.key) {
			fs.add(h.key, h.value)
			continue
		}
		saved := r.d
		var sc scanner
		sc.Reset(h.value)
		r.d = &sc
		err := own(h.key)
		r.d = saved
		var me *MemberError
		if errors.As(err, &me) {
			me.Pointer = h.at + me.Pointer // read apart: its pointer was the value's own
		}
		if err != nil {
			return err
		}
	}
	k.held = nil
	return nil
}
