package service_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

var fuzzAppends = flag.Int("fuzz-appends", 1500, "mutated entries TestAppendMutatedEntries sends")

// hostile are the values a mutation puts in place of a member: each kind,
// out-of-range numbers, times that are not, names that are too long.
var hostile = []string{
	`1.5`, `1e400`, `-1`, `18446744073709551616`, `9007199254740993`, `0`, `""`, `"x"`, `null`, `true`, `false`,
	`[]`, `{}`, `[1]`, `["a",2]`, `{"a":1}`, `"2025-01-04T00:59:36.639Z"`, `"not a time"`, `"wizard"`,
	`"image/png"`, `[{"type":"text","text":"t"}]`, `[{"type":"image","data":"aGk="}]`, `[{"type":"toolCall","id":"c","name":"n","arguments":[]}]`,
	`"` + string(bytes.Repeat([]byte("n"), 1500)) + `"`, `"\u0000\ud800"`, `{"a":1,"a":2}`, `{"x":"\ud800"}`,
}

// seedEntries are pi's own entry lines, without ids (the service assigns
// them and the parents).
func seedEntries(t testing.TB) []map[string]any {
	var out []map[string]any
	for _, s := range sessiontest.PiSamples(t) {
		for _, line := range bytes.Split(s.Data, []byte("\n"))[1:] {
			var m map[string]any
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			delete(m, "id")
			delete(m, "parentId")
			if m["type"] == "label" || m["type"] == "compaction" || m["type"] == "context_edit" {
				continue // they name other entries of their session
			}
			out = append(out, m)
		}
	}
	return out
}

// mutate replaces, removes or adds one member somewhere in v.
func mutate(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		if len(keys) == 0 || r.IntN(6) == 0 {
			x[[]string{"timestamp", "role", "content", "usage", "extra", "tokensBefore", "firstKeptEntryId"}[r.IntN(7)]] = json.RawMessage(hostile[r.IntN(len(hostile))])
			return x
		}
		slices.Sort(keys) // map order is random: keep runs repeatable
		k := keys[r.IntN(len(keys))]
		_, isMap := x[k].(map[string]any)
		_, isList := x[k].([]any)
		switch n := r.IntN(6); {
		case (isMap || isList) && n < 4:
			x[k] = mutate(r, x[k])
		case n == 0:
			delete(x, k)
		default:
			x[k] = json.RawMessage(hostile[r.IntN(len(hostile))])
		}
		return x
	case []any:
		if len(x) == 0 {
			return append(x, json.RawMessage(hostile[r.IntN(len(hostile))]))
		}
		i := r.IntN(len(x))
		x[i] = mutate(r, x[i])
		return x
	}
	return json.RawMessage(hostile[r.IntN(len(hostile))])
}

// The write path end to end: mutated pi entries (wrong kinds, values out
// of range, members missing or added) through the service's append; after
// each, the session must still answer context, entries, tree and stats,
// and every stored entry must be JSON with unique member names that
// decodes and re-encodes to itself — or the append must have been refused.
// Bounded here (-fuzz-appends); FuzzServiceAppend runs it open-ended.
func TestAppendMutatedEntries(t *testing.T) { sessiontest.EachLayout(t, testAppendMutatedEntries) }

func testAppendMutatedEntries(t *testing.T, partitions int) {
	f := startOn(t, partitions, unlimited)
	seeds := seedEntries(t)
	r := rand.New(rand.NewPCG(12, uint64(*fuzzAppends)))
	f.call(t, api.OpCreate, api.CreateRequest{ID: "fuzz"}, nil)
	accepted, refused := 0, 0
	for i := range *fuzzAppends {
		var m map[string]any
		b, _ := json.Marshal(seeds[r.IntN(len(seeds))])
		_ = json.Unmarshal(b, &m)
		v := mutate(r, m)
		if r.IntN(2) == 0 {
			v = mutate(r, v)
		}
		entry, _ := json.Marshal(v)
		ok := appendAndRead(t, f, "fuzz", entry)
		if ok {
			accepted++
		} else {
			refused++
		}
		if t.Failed() {
			t.Fatalf("after append %d of %s", i, entry)
		}
	}
	t.Logf("%d mutated entries accepted, %d refused", accepted, refused)
	exportLoads(t, f, "fuzz")
	if accepted == 0 || refused == 0 {
		t.Fatalf("the mutations tried only one side (%d accepted, %d refused)", accepted, refused)
	}
}

// FuzzServiceAppend is TestAppendMutatedEntries driven by the fuzzer.
func FuzzServiceAppend(f *testing.F) {
	for _, s := range seedEntries(f) {
		b, _ := json.Marshal(s)
		f.Add(b)
	}
	f.Add([]byte(`{"type":"message","message":{"role":"user","content":"x","timestamp":1.5}}`))
	fx := start(f, unlimited)
	fx.call(f, api.OpCreate, api.CreateRequest{ID: "fuzz"}, nil)
	f.Fuzz(func(t *testing.T, entry []byte) {
		if !jsontext.Value(entry).IsValid() {
			return
		}
		appendAndRead(t, fx, "fuzz", entry)
	})
}

// appendAndRead appends entry and checks that the session still reads.
func appendAndRead(t testing.TB, f *fixture, id string, entry []byte) (accepted bool) {
	t.Helper()
	// Sent as written: the client's encoder would refuse some of it.
	err := f.raw(api.OpAppend, `{"session":"`+id+`","entries":[`+string(entry)+`]}`)
	var pe *api.Error
	switch {
	case err == nil:
		accepted = true
	case errors.As(err, &pe) && (pe.Code == api.CodeInvalidEntry || pe.Code == api.CodeBadRequest || pe.Code == api.CodeTooLarge):
		if pe.Message == "" {
			t.Errorf("refusal without a message: %+v", pe)
		}
		return false
	default:
		t.Errorf("append of %s: %v", entry, err)
		return false
	}
	var cx api.ContextReply
	if err := f.callErr2(api.OpContext, api.ContextRequest{Session: id}, &cx); err != nil {
		t.Errorf("context after %s: %v", entry, err)
	}
	var tr api.TreeReply
	if err := f.callErr2(api.OpTree, api.SessionRequest{Session: id}, &tr); err != nil {
		t.Errorf("tree after %s: %v", entry, err)
	}
	if err := f.callErr2(api.OpStats, api.SessionRequest{Session: id}, nil); err != nil {
		t.Errorf("stats after %s: %v", entry, err)
	}
	var page api.EntriesReply
	if err := f.callErr2(api.OpEntries, api.EntriesRequest{Session: id, Offset: max(0, len(tr.Nodes)-1)}, &page); err != nil {
		t.Errorf("entries after %s: %v", entry, err)
	}
	for _, e := range page.Entries {
		if err := storedDecodes(e); err != nil {
			t.Errorf("stored from %s: %v", entry, err)
		}
	}
	return true
}

// storedDecodes checks a stored entry as pi and strict readers take it:
// JSON with unique names, decoded and re-encoded to the same bytes, and
// through msgpack to the same meaning.
func storedDecodes(v jsontext.Value) error {
	if !v.IsValid() { // default options refuse duplicate names
		return fmt.Errorf("not strict JSON (duplicate member?): %s", v)
	}
	e, err := codec.DecodeEntry(v)
	if err != nil {
		return err
	}
	out, err := codec.EncodeEntry(e)
	if err != nil {
		return err
	}
	if !bytes.Equal(out, v) {
		return fmt.Errorf("re-encodes differently:\n%s\n%s", v, out)
	}
	mp, err := codec.EncodeEntryMsgpack(e)
	if err != nil {
		return err
	}
	if _, err := codec.DecodeEntryMsgpack(mp); err != nil {
		return err
	}
	return nil
}

// exportLoads exports the session as a pi file and loads it strictly:
// every stored entry reads back from a file, as pi would read it.
func exportLoads(t *testing.T, f *fixture, id string) {
	t.Helper()
	ctx := t.Context()
	st, err := f.b.Open(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	h, err := st.Header(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := st.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := codec.EncodeFile(&h, all)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	ld, err := codec.DecodeFile(data, id+".jsonl", codec.Strict)
	if err != nil {
		t.Fatalf("the export does not load: %v", err)
	}
	if ld.Tree.Len() != len(all) {
		t.Fatalf("the export holds %d entries of %d", ld.Tree.Len(), len(all))
	}
}
