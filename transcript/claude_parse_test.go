package transcript

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// parseTyped reads a line in one pass where parseMembers reads its
// message's parts again from their bytes; what it gives must be what
// parseMembers gives, for every line it takes: the real transcripts' and
// lines made to differ only where the two readers might.
func TestClaudeParseTypedAsMembers(t *testing.T) {
	lines := [][]byte{
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":null}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":"plain \u00e9 \ud800 text"}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user"}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":42}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":{"type":"text"}}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":[1,2]}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t"}]}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":null}]}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"out","is_error":true}]}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},{"type":"other"}]}]}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":7}]}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":[{"type":"text","text":"a","content":{"odd":1}}]}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}}`),
		[]byte(`{"type":"user","uuid":"u","message":{"role":"user","Content":"case"}}`),
		[]byte(`{"type":"assistant","uuid":"a","message":{"role":"assistant","model":"m","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":1}}}`),
		[]byte(`{"type":"user","uuid":"u","message":"not an object"}`),
		[]byte(`{"type":"user","uuid":"u","message":null}`),
		[]byte(`{"type":"progress","uuid":"p","data":{"message":{"content":"nested"}}}`),
		[]byte(`{"type":"progress","uuid":"p","uuid":"twice"}`),
		[]byte(`{"type":"user","message":{"content":"x","content":"y"}}`),
		[]byte(`{"type":"user","uuid":"u","parentUuid":null,"message":{"content":"x"}}`),
	}
	files, _ := filepath.Glob("testdata/claude-code/*.jsonl")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines = append(lines, l)
			}
		}
	}
	typed, messages := 0, 0
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"message":{`)) {
			messages++
		}
		var one, members claudeParsed
		if !one.parseTyped(l) {
			continue
		}
		typed++
		members.parseMembers(l)
		if got, want := describe(&one), describe(&members); got != want {
			t.Errorf("line %d %.200s:\nread in one pass %s\nmember by member %s", i, l, got, want)
		}
	}
	// Every line of the real files is read in one pass (a few made above
	// are not: that is what they are for).
	if typed < len(lines)-20 || typed < messages {
		t.Errorf("%d of %d lines (%d with a message) read in one pass: the fast path is not taken", typed, len(lines), messages)
	}
}

// describe is what a parse gave, errors by their text, without the raw
// bytes parseMembers reads the parts from.
func describe(p *claudeParsed) string {
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	l, m := p.l, p.m
	l.Message, m.Content = nil, nil
	blocks := slices.Clone(p.blocks)
	for i := range blocks {
		blocks[i].Content = nil
	}
	var results []any
	for _, r := range p.results {
		results = append(results, map[string]any{"content": r.content, "err": errText(r.err)})
	}
	out, err := json.Marshal(map[string]any{
		"line": l, "err": errText(p.err), "hasMessage": p.hasMessage, "nullParent": p.nullParent,
		"message": m, "mErr": errText(p.mErr), "text": p.text, "blocks": blocks, "blocksErr": errText(p.blocksErr),
		"results": results,
	})
	if err != nil {
		return err.Error()
	}
	return string(out)
}
