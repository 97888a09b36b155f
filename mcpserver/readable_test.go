package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestReadableAsEncodingJSONReads: readable gives what reading each
// message with encoding/json gave, on every shape a stored or hostile
// message takes.
func TestReadableAsEncodingJSONReads(t *testing.T) {
	for _, m := range readableSeeds {
		if got, want := readable("s", []byte(m)), readableRef("s", json.RawMessage(m)); got != want {
			t.Errorf("%s:\n got %q\nwant %q", m, got, want)
		}
	}
}

func FuzzReadable(f *testing.F) {
	for _, m := range readableSeeds {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, m string) {
		if !json.Valid([]byte(m)) {
			return // the service answers with JSON
		}
		if got, want := readable("s", []byte(m)), readableRef("s", json.RawMessage(m)); got != want {
			t.Fatalf("%s:\n got %q\nwant %q", m, got, want)
		}
		var msgs []json.RawMessage
		if json.Unmarshal([]byte("["+m+","+m+"]"), &msgs) == nil {
			var got []string
			err := eachMessage([]byte(" [ "+m+" , "+m+" ] "), func(i int, v []byte) { got = append(got, fmt.Sprint(i, string(v))) })
			if err != nil || strings.Join(got, "|") != fmt.Sprint(0, string(msgs[0]))+"|"+fmt.Sprint(1, string(msgs[1])) {
				t.Fatalf("eachMessage: %q, %v; want %q", got, err, msgs)
			}
		}
	})
}

var readableSeeds = []string{
	`{"role":"user","content":"hi"}`,
	`{"role":"user","content":null}`,
	`{"role":"user"}`,
	`{"role":"user","content":5}`,
	`{"role":"user","content":{"type":"text"}}`,
	`{"role":"user","content":[1,{"type":"text","text":"after a bad block"}]}`,
	`{"ROLE":"assistant","Content":[{"TYPE":"text","text":"case"}]}`,
	`{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"toolCall","name":"Bash","arguments":{ "cmd" : "ls\u2028" , "n":[1, 2]}},{"type":"image","mimeType":"image/png","data":"x"},{"type":"unknown"}]}`,
	`{"role":"toolResult","toolName":"Bash","content":[{"type":"text","text":"out"}],"isError":false}`,
	`{"role":"toolResult","toolName":5,"content":"x"}`,
	`{"role":"compactionSummary","summary":"sum","content":"c"}`,
	`{"role":"branchSummary","summary":null}`,
	`{"role":"toolResult","toolName":"x","content":null}`,
	`{"role":"bashExecution","command":"ls","output":"a\nb"}`,
	`{"role":"custom","customType":"x","content":"\u0000\ud800 lone surrogate"}`,
	`{"role":"user","content":"dup","content":[{"type":"text","text":"second"}]}`,
	"{\"role\":\"user\",\"content\":\"bad \xff utf-8\"}",
	`[]`,
	`"just a string"`,
	`null`,
	`{"role":["not","a string"],"content":"x"}`,
	`{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}`,
	`{"role":"user","content":[{"type":"toolCall","name":"n","arguments":null}]}`,
	`{"role":"user","content":[{"type":"toolCall","name":"n"}]}`,
	`{"role":"user","content":  "leading spaces"}`,
}

// readableRef is readable as it was (encoding/json, each value validated first): the reference its rewrite is checked against.
// readable is a context message as text: its text and thinking, its tool
// calls with their arguments, images as a note; summaries as they read.
func readableRef(source string, raw json.RawMessage) ContextMessage {
	var m struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		Summary    string          `json:"summary"`
		ToolName   string          `json:"toolName"`
		CustomType string          `json:"customType"`
		Command    string          `json:"command"`
		Output     string          `json:"output"`
	}
	// raw is an entry the service answered with, valid JSON: an error
	// is a member of another type than m's, left empty and not shown.
	_ = json.Unmarshal(raw, &m)
	var parts []string
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		parts = append(parts, s)
	} else {
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			Thinking  string          `json:"thinking"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			MimeType  string          `json:"mimeType"`
		}
		_ = json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			switch b.Type {
			case "text":
				parts = append(parts, b.Text)
			case "thinking":
				parts = append(parts, "(thinking) "+b.Thinking)
			case "toolCall":
				parts = append(parts, fmt.Sprintf("(calls %s %s)", b.Name, b.Arguments))
			case "image":
				parts = append(parts, fmt.Sprintf("(an image, %s)", b.MimeType))
			}
		}
	}
	switch m.Role {
	case "compactionSummary", "branchSummary":
		parts = append(parts, m.Summary)
	case "toolResult":
		parts = append([]string{"(result of " + m.ToolName + ")"}, parts...)
	case "bashExecution":
		parts = append(parts, "$ "+m.Command, m.Output)
	}
	return ContextMessage{Entry: source, Role: m.Role, Text: strings.Join(parts, "\n")}
}
