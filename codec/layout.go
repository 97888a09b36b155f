package codec

import (
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/session"
)

// Member order. The encoders write each kind of object's members in one
// order, pi's. Objects read in another order (pi 1.6 adds an assistant
// message's responseId and durationMs after its timestamp; other writers
// order members as they like) keep theirs as a session.Layout, and the
// encoders write it back: a line round-trips byte for byte.

// layoutSep separates the member names of a Layout. A name holding it is
// never recorded (the object is then written in the encoders' order: the
// same JSON value).
const layoutSep = "\x00"

// order ranks the members of one kind of object as the encoder writes
// them; unknown members, and known ones kept in Extra, rank as extra.
type order struct {
	rank  map[string]int
	extra int
	// always are the members the encoder writes even when zero: one the
	// object did not have is recorded in its Layout, and not written
	// (pi 0.x's usages have no totalTokens; adding one changes the
	// context pi reads).
	always []string
}

// probeKey is the Extra member a probe object carries to find where the
// encoder writes unknown members.
const probeKey = "\x00extra"

// orderOf reads the member order of an object encoded by enc.
func orderOf(enc func() ([]byte, error)) *order {
	b, err := enc()
	if err != nil {
		panic("codec: probe object does not encode: " + err.Error())
	}
	d := jsontext.NewDecoder(strings.NewReader(string(b)))
	d.ReadToken()
	o := &order{rank: map[string]int{}}
	for i := 0; d.PeekKind() == '"'; i++ {
		k, _ := d.ReadToken()
		if k.String() == probeKey {
			o.extra = i
		} else {
			o.rank[k.String()] = i
		}
		d.SkipValue()
	}
	return o
}

var probeExtra = []session.Field{{Key: probeKey, Value: session.Raw("0")}}

func probeUsage() *session.Usage {
	return &session.Usage{Input: 1, Output: 1, CacheRead: 1, CacheWrite: 1, TotalTokens: 1,
		Cost: session.Cost{Input: 1, Output: 1, CacheRead: 1, CacheWrite: 1, Total: 1, Extra: probeExtra}, Extra: probeExtra}
}

func probeMessage() *session.Message {
	return &session.Message{Role: "r", Content: session.TextContent("c"), Timestamp: 1, Extra: probeExtra}
}

// probeMessageJSON encodes a message with every member of every role
// set: the encoders' member order.
func probeMessageJSON() ([]byte, error) {
	return appendMessageFlat(nil, probeMessage(), &messageFlat{
		AssistantFields: session.AssistantFields{API: "a", Provider: "p", Model: "m", ResponseID: "i", Usage: probeUsage(),
			StopReason: "s", ErrorMessage: "e"},
		ToolCallID: "t", ToolName: "n", IsError: true, Details: session.Raw("0"), CustomType: "c", Display: true,
		Summary: "s", TokensBefore: 1, FromID: "f",
	})
}

// probeEntry encodes an entry of type t with every member of every type
// set: the encoders' member order.
func probeEntry(t session.EntryType) ([]byte, error) {
	e := &session.Entry{Type: t, ID: "i", ParentID: "p", Timestamp: "t", Message: probeMessage(), Extra: probeExtra}
	return appendFlat(nil, e, &flat{
		ThinkingLevel: "l", Provider: "p", ModelID: "m", ActiveTools: []string{}, Summary: "s", Details: session.Raw("0"),
		FromHook: true, FirstKeptEntryID: "f", SystemMessage: probeMessage(), TokensBefore: 1,
		RetainedTail: []session.Message{}, Usage: probeUsage(), Kind: "k", Model: "m", Note: "n",
		Edit: &session.Replacement{Content: session.TextContent("c")}, FromID: "f", CustomType: "c",
		Data: session.Raw("0"), Content: session.TextContent("c"), Display: true, TargetID: "t", Label: "l", Name: "n",
	})
}

var orders = sync.OnceValue(func() (o struct{ entry, custom, message, block, usage, cost, edit *order }) {
	o.entry = orderOf(func() ([]byte, error) { return probeEntry(session.TypeMessage) })
	o.custom = orderOf(func() ([]byte, error) { return probeEntry(session.TypeCustomMessage) })
	o.message = orderOf(probeMessageJSON)
	o.block = orderOf(func() ([]byte, error) {
		return appendBlockFlat(nil, &session.ContentBlock{Type: "x", Text: "t", Extra: probeExtra},
			&blockFlat{TextSignature: "s", Thinking: "t", ThinkingSignature: "s", Redacted: true, Data: "d", MimeType: "m", ID: "i", Name: "n",
				Arguments: session.Raw("{}"), ThoughtSignature: "s"})
	})
	o.usage = orderOf(func() ([]byte, error) { return appendUsage(nil, probeUsage(), nil) })
	o.usage.always = membersOf(func() ([]byte, error) { return appendUsage(nil, &session.Usage{}, nil) })
	o.cost = orderOf(func() ([]byte, error) {
		u := probeUsage()
		return appendCost(nil, &u.Cost)
	})
	o.cost.always = membersOf(func() ([]byte, error) { return appendCost(nil, &session.Cost{}) })
	o.edit = orderOf(func() ([]byte, error) {
		return appendEdit(nil, &session.Replacement{Content: session.TextContent("c"), Extra: probeExtra})
	})
	return o
})

// membersOf is the member names of an object encoded by enc.
func membersOf(enc func() ([]byte, error)) []string {
	var names []string
	for k := range orderOf(enc).rank {
		names = append(names, k)
	}
	return names
}

// entryOrder is the order of an entry of type t.
func entryOrder(t session.EntryType) *order {
	if t == session.TypeCustom || t == session.TypeCustomMessage {
		return orders().custom
	}
	return orders().entry
}

// layout returns the Layout of an object whose members were read in the
// order keys, given what was kept in extra: "" when the encoder's order
// is theirs.
func (o *order) layout(keys []string, extra []session.Field) session.Layout {
	// Known members kept in Extra (a kept zero, a value of another kind)
	// are written where unknown ones are; they are few (the known names
	// are), so a slice holds them.
	var kept []string
	for _, f := range extra {
		if _, known := o.rank[f.Key]; known {
			kept = append(kept, f.Key)
		}
	}
	prev := -1
	inOrder := true
	for _, k := range keys {
		r, known := o.rank[k]
		if !known || slices.Contains(kept, k) {
			r = o.extra
		}
		if r < prev {
			inOrder = false
			break
		}
		prev = r
	}
	if inOrder && o.hasAlways(keys, kept) {
		return session.Layout{}
	}
	var seen keySet
	for i, k := range keys {
		twice := false
		if len(keys) <= smallSet {
			twice = slices.Contains(keys[:i], k) // no set to make for a small object
		} else {
			twice = seen.has(k)
			seen.add(k)
		}
		if twice || strings.Contains(k, layoutSep) {
			return session.Layout{} // a name twice: JSON.parse keeps its first place; leave it to the encoder's order
		}
	}
	return internLayout(keys)
}

// layoutMemo remembers the layouts of the last few member sequences a
// reader met: objects of one kind repeat theirs line after line, and
// comparing names the decoder holds as constants costs less than ranking
// them again. Only sequences of few members with nothing kept in Extra
// are remembered (what is kept there changes the layout).
type layoutMemo struct {
	seen [8]memoized
	next int
}

type memoized struct {
	o      *order
	keys   []string
	layout session.Layout
}

const maxMemoKeys = 32

func (m *layoutMemo) layout(o *order, keys []string, extra []session.Field) session.Layout {
	if len(extra) > 0 || len(keys) > maxMemoKeys {
		return o.layout(keys, extra)
	}
	for i := range m.seen {
		if s := &m.seen[i]; s.o == o && slices.Equal(s.keys, keys) {
			return s.layout
		}
	}
	l := o.layout(keys, nil)
	s := &m.seen[m.next]
	m.next = (m.next + 1) % len(m.seen)
	s.o, s.layout, s.keys = o, l, append(s.keys[:0], keys...)
	return l
}

// hasAlways reports whether keys hold every member the encoder always
// writes (or extra keeps it).
func (o *order) hasAlways(keys, kept []string) bool {
	for _, a := range o.always {
		if !slices.Contains(keys, a) && !slices.Contains(kept, a) {
			return false
		}
	}
	return true
}

// Layouts repeat across a session (every assistant message of one
// provider has the same): they are shared, up to a bound in number and
// size, so hostile input cannot grow the table.
const (
	maxLayouts   = 4096
	maxLayoutLen = 1024
)

var layouts struct {
	sync.Mutex
	m map[string]session.Layout
}

func internLayout(keys []string) session.Layout {
	s := strings.Join(keys, layoutSep)
	if len(s) > maxLayoutLen {
		return session.NewLayout(s)
	}
	layouts.Lock()
	defer layouts.Unlock()
	if l, ok := layouts.m[s]; ok {
		return l
	}
	if layouts.m == nil {
		layouts.m = map[string]session.Layout{}
	}
	if len(layouts.m) < maxLayouts {
		l := session.NewLayout(s)
		layouts.m[s] = l
		return l
	}
	return session.NewLayout(s)
}

// writtenMember is one member written by an objWriter with a layout: its name
// and where it starts (at its name) and ends (before the next comma).
type writtenMember struct {
	key        string
	start, end int
}

// reorder rewrites the members of the object w is writing in the order of
// w.layout, when they are the layout's members; otherwise it leaves the
// encoder's order (the object changed since it was read).
func (w *objWriter) reorder() {
	n := strings.Count(string(w.layout), layoutSep) + 1
	if n != len(w.members) {
		return
	}
	if len(w.members) > 0 {
		w.members[len(w.members)-1].end = len(w.b)
	}
	// The members are appended in the layout's order after the object,
	// then moved into its place: no buffer of their own.
	end := len(w.b)
	find := func(k string) (writtenMember, bool) {
		for _, m := range w.members {
			if m.key == k {
				return m, true
			}
		}
		return writtenMember{}, false
	}
	if len(w.members) > smallSet {
		byKey := make(map[string]writtenMember, len(w.members))
		for _, m := range w.members {
			byKey[m.key] = m
		}
		find = func(k string) (writtenMember, bool) { m, ok := byKey[k]; return m, ok }
	}
	rest := string(w.layout)
	for i := range n { // n names, the last of which may be "" (rest is then "" too)
		var k string
		k, rest, _ = strings.Cut(rest, layoutSep)
		m, found := find(k)
		if !found {
			w.b = w.b[:end]
			return
		}
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, w.b[m.start:m.end]...)
	}
	n = copy(w.b[w.start+1:], w.b[end:])
	w.b = w.b[:w.start+1+n]
}
