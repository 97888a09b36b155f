package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// A 3 MiB image appended over HTTP (a body three times a request) comes
// back byte for byte from the context, the entries, the event stream, an
// export of the session and the blob route; by reference when asked.
func TestLargeImageOverHTTP(t *testing.T) {
	g, b := startWith(t, 1, nil)
	u := g.URL() + "/v1/sessions"
	if r := do(t, "POST", u, `{"id":"pics"}`); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	img := make([]byte, 3<<20)
	rand.Read(img)
	data := base64.StdEncoding.EncodeToString(img)
	body := `{"entries":[{"type":"message","message":{"role":"user","content":[{"type":"image","data":"` + data + `","mimeType":"image/png"}],"timestamp":1}}]}`
	if r := do(t, "POST", u+"/pics/entries", body); r.status != 200 {
		t.Fatalf("append: %d %v", r.status, r.body)
	}
	imageOf := func(what string, m *session.Message) {
		t.Helper()
		if m == nil || len(m.Content.Blocks) != 1 || m.Content.Blocks[0].Image().Data != data {
			t.Fatalf("%s: the image did not come back byte for byte", what)
		}
	}

	var c struct{ Messages []json.RawMessage }
	getJSON(t, u+"/pics/context", &c)
	m, err := codec.DecodeMessage(c.Messages[0])
	if err != nil {
		t.Fatal(err)
	}
	imageOf("context", m)

	var es struct{ Entries []json.RawMessage }
	getJSON(t, u+"/pics/entries", &es)
	e, err := codec.DecodeEntry(es.Entries[0])
	if err != nil {
		t.Fatal(err)
	}
	imageOf("entries", e.Message)

	var refs struct{ Entries []json.RawMessage }
	getJSON(t, u+"/pics/entries?refs=true", &refs)
	sum := sha256.Sum256(img) // stored decoded
	name := hex.EncodeToString(sum[:])
	if len(refs.Entries[0]) > 4096 || !bytes.Contains(refs.Entries[0], []byte(name)) {
		t.Fatalf("by reference: %d bytes", len(refs.Entries[0]))
	}

	res, err := http.Get(u + "/pics/events?after=0")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 8<<20), 8<<20)
	var event []byte
	for sc.Scan() && event == nil {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(line, `"image"`) {
			event = []byte(line)
		}
	}
	res.Body.Close()
	e, err = codec.DecodeEntry(event)
	if err != nil {
		t.Fatalf("event stream: %v", err)
	}
	imageOf("event stream", e.Message)

	ctx := context.Background()
	st, err := b.OpenStore(ctx, "pics")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	h, _ := st.Header(ctx)
	all, err := st.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	export, err := codec.EncodeFile(&h, all) // what sessionlog export writes
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(export, []byte(`"data":"`+data+`"`)) {
		t.Fatal("export: the image did not come back byte for byte")
	}

	blob, err := http.Get(g.URL() + "/v1/blobs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(blob.Body)
	blob.Body.Close()
	if blob.StatusCode != 200 || !bytes.Equal(got, img) || blob.Header.Get("Content-Length") != strconv.Itoa(len(img)) {
		t.Fatalf("GET /v1/blobs: %d, %d bytes", blob.StatusCode, len(got))
	}
	if r := do(t, "GET", g.URL()+"/v1/blobs/"+strings.Repeat("0", 64), ""); r.status != 404 || errCode(r) != "blob_not_found" {
		t.Fatalf("missing blob: %d %v", r.status, r.body)
	}

	// ?refs takes a boolean and nothing else, on every route.
	for _, path := range []string{"/pics/entries?refs=maybe", "/pics/context?refs=1x", "/pics/events?refs=yes"} {
		if r := do(t, "GET", u+path, ""); r.status != 400 || errField(r) != "?refs" {
			t.Fatalf("GET %s: %d %v", path, r.status, r.body)
		}
	}

	// A digest that is not one, or not the body's, is refused.
	if r := do(t, "POST", g.URL()+"/v1/blobs?sha256=../x", "abc"); r.status != 400 || errField(r) != "/sha256" {
		t.Fatalf("POST /v1/blobs with a bad digest: %d %v", r.status, r.body)
	}
	if r := do(t, "POST", g.URL()+"/v1/blobs?sha256="+strings.Repeat("0", 64), "abc"); r.status != 422 {
		t.Fatalf("POST /v1/blobs with another body's digest: %d %v", r.status, r.body)
	}

	// A blob sent first, raw, larger than a request.
	raw := make([]byte, 2<<20)
	rand.Read(raw)
	r := do(t, "POST", g.URL()+"/v1/blobs", string(raw))
	ref, _ := r.body["blob"].(map[string]any)
	sum = sha256.Sum256(raw)
	if r.status != 200 || ref["$blob"] != hex.EncodeToString(sum[:]) {
		t.Fatalf("POST /v1/blobs: %d %v", r.status, r.body)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
