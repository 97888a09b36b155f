package console_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/console"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// exportTree is a session with a branch, a label, a compaction, an image
// and content that would be markup if it were not escaped.
func exportTree(t testing.TB) (session.Header, *session.Tree) {
	t.Helper()
	h := sessiontest.TestHeader("exp")
	tr := session.NewTree(h)
	ts := "2025-01-01T00:00:01.000Z"
	msg := func(id, parent, role string, blocks ...session.ContentBlock) *session.Entry {
		return &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: ts,
			Message: &session.Message{Role: role, Content: session.BlocksContent(blocks...), Timestamp: 1, Body: session.NewMessageBody(role)}}
	}
	text := func(s string) session.ContentBlock { return session.ContentBlock{Type: session.BlockText, Text: s} }
	for _, e := range []*session.Entry{
		msg("u1", "", session.RoleUser, text(`<script>alert("x")</script> & "quotes"`)),
		msg("a1", "u1", session.RoleAssistant, text("first answer"),
			session.ContentBlock{Type: session.BlockImage, Body: &session.ImageBlock{MimeType: "image/png", Data: pixel}},
			session.ContentBlock{Type: session.BlockImage, Body: &session.ImageBlock{MimeType: "text/html", Data: "PHNjcmlwdD4="}},
			session.ContentBlock{Type: session.BlockImage, Body: &session.ImageBlock{MimeType: "image/png", Data: `x" onerror="alert(1)`}}),
		msg("a2", "u1", session.RoleAssistant, text("second answer, on a branch")),
		{Type: session.TypeLabel, ID: "l1", ParentID: "a2", Timestamp: ts, Body: &session.Label{TargetID: "a1", Label: "good <one>"}},
		{Type: session.TypeCompaction, ID: "c1", ParentID: "l1", Timestamp: ts, Body: &session.Compaction{Summary: "summary of it all", FirstKeptEntryID: "a2"}},
		msg("u2", "c1", session.RoleUser, text("after the compaction")),
	} {
		if err := tr.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	return h, tr
}

func TestExportHTML(t *testing.T) {
	h, tr := exportTree(t)
	var buf bytes.Buffer
	if err := console.ExportHTML(&buf, h, tr); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		`&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#34;quotes&#34;`, // escaped, not markup
		`src="data:image/png;base64,iVBORw0KGgo`,                                 // the image, inline (its + and = escaped as HTML)
		`[image of type text/html]`,                                              // not an image type: not shown
		`<span class="tag">good &lt;one&gt;</span>`,
		`summary of it all`, `after the compaction`,
		`<span class="leaf">← leaf</span>`,
		`id="e-a1" style="margin-left: 1em"`, // a branch point's children are indented
	} {
		if !strings.Contains(page, want) {
			t.Errorf("export lacks %s", want)
		}
	}
	for _, bad := range []string{"<script", "onerror=", "data:text/html"} {
		if strings.Contains(page, bad) {
			t.Errorf("export holds %q", bad)
		}
	}
	// The context of the leaf: the compaction's summary, the kept branch
	// and what followed; not the other branch.
	ctxPart := page[strings.Index(page, "<h2>Context of the leaf</h2>"):strings.Index(page, "<h2>Tree</h2>")]
	if !strings.Contains(ctxPart, "second answer") || strings.Contains(ctxPart, "first answer") || !strings.Contains(ctxPart, "after the compaction") {
		t.Errorf("context part:\n%s", ctxPart)
	}
}

// The export opens in a browser from a file, offline, its image drawn.
func TestExportHTMLInBrowser(t *testing.T) {
	h, tr := exportTree(t)
	f := filepath.Join(t.TempDir(), "exp.html")
	var buf bytes.Buffer
	if err := console.ExportHTML(&buf, h, tr); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	if err := chromedpOpen(ctx, "file://"+f, `document.querySelectorAll('img').length === 1 && document.querySelector('img').naturalWidth === 1 && document.title.startsWith('exp')`); err != nil {
		t.Fatalf("the export in a browser: %v\n%s", err, page(ctx))
	}
}
