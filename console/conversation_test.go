package console_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/transcript"
)

// A real Claude Code session (1,512 entries) in the browser: the tree
// shows the conversation as Claude Code showed it — a row a message, tool
// calls with their results, progress lines and snapshots folded into a
// count that opens on demand, no branch the conversation did not have —
// and "All entries" shows every entry. A LangGraph checkpoint row says its
// id, step and the channels that changed; hostile text stays text.
func TestConsoleShowsTheConversation(t *testing.T) {
	s := startStack(t)
	ctx := browser(t)
	dir := artifacts(t)
	file := filepath.Join("..", "transcript", "testdata", "claude-code", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	d, err := transcript.Decode(transcript.FormatClaudeCode, data, transcript.SourceFor(transcript.FormatClaudeCode, file), codec.Strict)
	if err != nil {
		t.Fatal(err)
	}
	id := d.Header.ID
	if err := s.client.Call(context.Background(), api.OpCreate, api.CreateRequest{ID: id, Cwd: d.Header.Cwd}, nil); err != nil {
		t.Fatal(err)
	}
	for len(d.Entries) > 0 {
		n := min(len(d.Entries), 100)
		var list []map[string]any
		for _, e := range d.Entries[:n] {
			j, err := codec.EncodeEntry(e)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			json.Unmarshal(j, &m)
			list = append(list, m)
		}
		s.append(t, id, list...)
		d.Entries = d.Entries[n:]
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/#/s/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#tree .row`)),
		shot(t, dir, "3-claude-code-conversation"),
	)
	if err != nil {
		t.Fatalf("open the session: %v\n%s", err, page(ctx))
	}
	rows := func() int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Math.round(parseFloat(document.querySelector('#tree .spacer').style.height) / 24)`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	conv := rows()
	shown := text(ctx, t, "#tree")
	if conv < 50 || conv > 300 || strings.Contains(shown, "claude-code/progress") || !strings.Contains(shown, "+") {
		t.Fatalf("the conversation view: %d rows\n%s", conv, shown)
	}
	// Tool calls with what they acted on, Claude Code's way (paths under
	// the session's directory relative to it); a message's parallel calls
	// on one row with their results.
	for _, want := range []string{"→ Bash(bd show spotter-dov), Bash(bd ready) (2 results)", "→ Read(lib/spotter_web/live/session_live.ex), Read(",
		"→ Task(Explore transcript rendering codebase) (1 result)"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the conversation view has no %q:\n%s", want, shown)
		}
	}
	// No assistant row without a word or a call (a turn whose text,
	// thinking and calls are lines of their own says all of them).
	empty, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#tree .row:not(.member)')].filter(r =>
		r.querySelector('.kind.assistant') && !r.querySelector('.tools') && r.textContent.replace(/assistant|\[thought\]|\+\d+|← leaf/g, '').trim() === '').map(r => r.dataset.id)`))
	if err != nil || len(empty) > 0 {
		t.Errorf("assistant rows that say nothing: %v %v", empty, err)
	}
	// Headed by its title, as the list names it, not its id.
	if title := text(ctx, t, "#session-title"); !strings.HasPrefix(title, "Work on bead spotter-dov") {
		t.Errorf("the session's heading is %q", title)
	}
	// The context says it thought; the stats say what it cost, each API
	// call once (ccusage's figures: 12,127,036 tokens, $9.5261).
	if err := chromedp.Do(ctx, poll(`!!document.getElementById('context-head')`)); err != nil {
		t.Fatalf("the context: %v\n%s", err, page(ctx))
	}
	if head := text(ctx, t, "#context-head"); !strings.Contains(head, "thinking on") {
		t.Errorf("the context's head: %q", head)
	}
	err = chromedp.Do(ctx,
		clickOn(`#tab-stats`),
		poll(`!!document.getElementById('stats-by-model')`),
		shot(t, dir, "3c-claude-code-stats"),
	)
	if err != nil {
		t.Fatalf("the stats tab: %v\n%s", err, page(ctx))
	}
	if stats := text(ctx, t, "#stats"); !strings.Contains(stats, "12,127,036") || !strings.Contains(stats, "$9.53") || !strings.Contains(stats, "139 replies") {
		t.Errorf("the stats: %q", stats)
	}
	err = chromedp.Do(ctx, clickOn(`#tab-context`), poll(`!!document.getElementById('context-head')`))
	if err != nil {
		t.Fatalf("back to the context: %v", err)
	}
	// Rows are not indented where the conversation did not branch.
	indents, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...new Set([...document.querySelectorAll('#tree .row')].map(r => r.style.paddingLeft))]`))
	if err != nil || len(indents) != 1 {
		t.Errorf("rows at several indents: %v %v", indents, err)
	}
	// A row's count opens on demand: its entries are shown under it.
	err = chromedp.Do(ctx,
		clickOn(`#tree .row:nth-child(2) .toggle`),
		poll(`document.querySelectorAll('#tree .row.member').length > 0`),
	)
	if err != nil {
		t.Fatalf("open a row's folded entries: %v\n%s", err, page(ctx))
	}
	if opened := rows(); opened <= conv {
		t.Errorf("opening a row shows nothing more: %d rows, %d before", opened, conv)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#act-view`)),
		poll(`document.getElementById('act-view').textContent === 'Conversation'`),
	)
	if err != nil {
		t.Fatalf("all entries: %v", err)
	}
	if all := rows(); all < 1500 {
		t.Errorf("all entries shows %d rows, want every entry", all)
	}

	// A LangGraph thread and hostile text.
	hostile := "\x1b[31mred</script><img src=x onerror=\"window.pwned=1\">\u202eevil"
	if err := s.client.Call(context.Background(), api.OpCreate, api.CreateRequest{ID: "lg"}, nil); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(map[string]any{"step": 3, "source": "loop"})
	s.append(t, "lg", user(hostile), map[string]any{"type": "message", "message": map[string]any{"role": "assistant", "provider": "p", "model": "m", "stopReason": "toolUse",
		"content": []any{map[string]any{"type": "toolCall", "id": "c1", "name": hostile, "arguments": map[string]any{"command": hostile, "file_path": hostile}}}}},
		map[string]any{"type": "custom", "customType": "langgraph_checkpoint",
			"data": map[string]any{"ns": "", "id": "1ef-cp-3", "channels": map[string]any{"messages": []any{"3", map[string]any{"type": "json", "text": "[]"}}},
				"metadata": map[string]any{"type": "json", "text": string(meta)}}})
	err = chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/#/s/lg"),
		poll(`[...document.querySelectorAll('#tree .row')].length === 3`),
		shot(t, dir, "3b-langgraph-hostile"),
	)
	if err != nil {
		t.Fatalf("open the thread: %v\n%s", err, page(ctx))
	}
	shown = text(ctx, t, "#tree")
	if !strings.Contains(shown, "checkpoint 1ef-cp-3 step 3 loop changed messages") || !strings.Contains(shown, "red</script>") {
		t.Errorf("the thread's rows: %q", shown)
	}
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!window.pwned || !!document.querySelector('#tree img')`))
	if err != nil || pwned {
		t.Fatalf("hostile text ran or made an element: %v %v", pwned, err)
	}
	if strings.ContainsAny(shown, "\x1b\u202e") {
		t.Errorf("control or bidirectional characters shown: %q", shown)
	}
	// Nor anywhere else the console shows the text: the context panel.
	err = chromedp.Do(ctx, poll(`document.querySelectorAll('#context .msg').length > 0`))
	if ctxText := text(ctx, t, "#context"); err != nil || strings.ContainsRune(ctxText, '\u202e') || !strings.Contains(ctxText, "red</script>") {
		t.Errorf("the context panel shows %q (%v)", ctxText, err)
	}
}
