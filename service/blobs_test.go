package service_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session"
)

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func code(err error) api.Code {
	var pe *api.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// A 3 MiB image, larger than any request, appended as an upload: stored
// apart, it reads back byte for byte from entries and context (resolved
// when a reply holds it, else by reference and a blob read), and the
// same image appended again is stored once.
func TestLargeEntriesTravelAsUploads(t *testing.T) {
	f := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f.call(t, api.OpCreate, api.CreateRequest{ID: "img"}, nil)
	img := randomBytes(t, 3<<20)
	line := `{"type":"message","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"` +
		base64.StdEncoding.EncodeToString(img) + `","mimeType":"image/png"}],"timestamp":1}}`
	body := `{"entries":[` + line + `]}`

	// Inline, it is refused: over the request limit.
	if err := f.raw(api.OpAppend, `{"session":"img","entries":[`+line+`]}`); code(err) != api.CodeTooLarge {
		t.Fatalf("inline 4 MiB append: %v, want too_large", err)
	}
	if _, err := f.c.Upload(ctx, "up1", strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	var a api.AppendReply
	f.call(t, api.OpAppend, api.AppendRequest{Session: "img", Upload: "up1"}, &a)
	if len(a.Entries) != 1 {
		t.Fatalf("appended %+v", a)
	}
	used, err := f.b.Blobs().Usage(ctx)
	if err != nil || used < 3<<20 {
		t.Fatalf("blob store holds %d bytes (%v), want the image", used, err)
	}

	// By reference: small, naming the image's SHA-256.
	var refs api.EntriesReply
	f.call(t, api.OpEntries, api.EntriesRequest{Session: "img", Refs: true}, &refs)
	if len(refs.Entries) != 1 || len(refs.Entries[0]) > 4096 {
		t.Fatalf("entries by reference: %d entries, first %d bytes", len(refs.Entries), len(refs.Entries[0]))
	}
	// The image is stored decoded.
	text := img
	sum := sha256.Sum256(text)
	name := hex.EncodeToString(sum[:])
	if !bytes.Contains(refs.Entries[0], []byte(name)) {
		t.Fatalf("the reference does not name the image: %s", refs.Entries[0])
	}
	var got bytes.Buffer
	if _, err := f.c.ReadBlob(ctx, name, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), text) {
		t.Fatalf("blob read back: %d bytes, differs from the image's data", got.Len())
	}
	// A piece asked for by offset alone (no cursor) starts there.
	var piece api.BlobDataReply
	f.call(t, api.OpBlob, api.BlobRequest{SHA256: name, Offset: 1<<20 + 7}, &piece)
	if !bytes.Equal(piece.Data, text[1<<20+7:1<<20+7+len(piece.Data)]) || piece.Size != int64(len(text)) {
		t.Fatalf("piece at an offset: %d bytes of %d", len(piece.Data), piece.Size)
	}

	// Resolved: whole when a reply can hold it, too_large naming the way
	// out when it cannot.
	var full api.EntriesReply
	err = f.c.Call(ctx, api.OpEntries, api.EntriesRequest{Session: "img"}, &full)
	switch {
	case err == nil:
		e, derr := codec.DecodeEntry(full.Entries[0])
		if derr != nil || e.Message.Content.Blocks[1].Image().Data != base64.StdEncoding.EncodeToString(img) {
			t.Fatalf("resolved entry differs (%v)", derr)
		}
	case code(err) == api.CodeTooLarge && strings.Contains(err.Error(), "refs: true"):
	default:
		t.Fatalf("entries resolved: %v", err)
	}

	// The same image again is stored once.
	if _, err := f.c.Upload(ctx, "up2", strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	f.call(t, api.OpAppend, api.AppendRequest{Session: "img", Upload: "up2"}, nil)
	used2, _ := f.b.Blobs().Usage(ctx)
	if used2 > used+64<<10 {
		t.Fatalf("the same image appended again grew the blob store from %d to %d bytes", used, used2)
	}
}

// Blob first: a client stores a blob and names it in an entry it sends.
func TestBlobFirst(t *testing.T) {
	f := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f.call(t, api.OpCreate, api.CreateRequest{ID: "bf"}, nil)
	img := randomBytes(t, 2<<20)
	if _, err := f.c.Upload(ctx, "pic", bytes.NewReader(img)); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(img)
	var br api.BlobReply
	f.call(t, api.OpPutBlob, api.PutBlobRequest{Upload: "pic", SHA256: hex.EncodeToString(sum[:])}, &br)
	ref, ok, err := session.ParseBlobRef(session.Raw(br.Blob))
	if !ok || err != nil || ref.Size != int64(len(img)) {
		t.Fatalf("putblob reply %s: %v", br.Blob, err)
	}
	ref.Encoding = session.BlobBase64
	line := fmt.Sprintf(`{"type":"message","message":{"role":"user","content":[{"type":"image","data":%s,"mimeType":"image/png"}],"timestamp":1}}`, ref.Raw())
	f.call(t, api.OpAppend, api.AppendRequest{Session: "bf", Entries: entries(line)}, nil)
	var got api.EntriesReply
	err = f.c.Call(ctx, api.OpEntries, api.EntriesRequest{Session: "bf"}, &got)
	if err == nil {
		e, derr := codec.DecodeEntry(got.Entries[0])
		if derr != nil || e.Message.Content.Blocks[0].Image().Data != base64.StdEncoding.EncodeToString(img) {
			t.Fatalf("the image named by reference does not resolve (%v)", derr)
		}
	} else if code(err) != api.CodeTooLarge {
		t.Fatal(err)
	}

	// Inline data, and a digest that does not match.
	f.call(t, api.OpPutBlob, api.PutBlobRequest{Data: []byte(`{"k":1}`)}, &br)
	if err := f.callErr(api.OpPutBlob, api.PutBlobRequest{Data: []byte("x"), SHA256: strings.Repeat("0", 64)}); code(err) != api.CodeInvalidEntry {
		t.Fatalf("wrong digest: %v", err)
	}
}

// What a careless or hostile client can send about blobs gets a clear
// error and stores nothing.
func TestHostileBlobRequests(t *testing.T) {
	f := start(t, func(c *service.Config) { c.Limits.MaxUploadBytes = 1 << 20; c.Limits.MaxEntryBytes = 1 << 20 })
	f.call(t, api.OpCreate, api.CreateRequest{ID: "h"}, nil)
	missing := session.BlobRef{SHA256: strings.Repeat("ab", 32), Size: 10}
	for _, tc := range []struct {
		name string
		op   string
		req  any
		want api.Code
	}{
		{"reference to no blob", api.OpAppend, api.AppendRequest{Session: "h", Entries: entries(
			`{"type":"custom","customType":"x","data":` + string(missing.Raw()) + `}`)}, api.CodeBlobNotFound},
		{"malformed reference", api.OpAppend, api.AppendRequest{Session: "h", Entries: entries(
			`{"type":"custom","customType":"x","data":{"$blob":"../../etc","size":1}}`)}, api.CodeInvalidEntry},
		{"read of no blob", api.OpBlob, api.BlobRequest{SHA256: missing.SHA256}, api.CodeBlobNotFound},
		{"read of a bad name", api.OpBlob, api.BlobRequest{SHA256: "*"}, api.CodeBadRequest},
		{"upload id with a dot", api.OpUpload, api.UploadRequest{Upload: "a.b", Data: []byte("x")}, api.CodeBadRequest},
		{"piece out of place", api.OpUpload, api.UploadRequest{Upload: "u1", Offset: 5, Data: []byte("x")}, api.CodeConflict},
		{"upload over the limit", api.OpUpload, api.UploadRequest{Upload: "u2", Offset: 1<<20 - 1, Data: []byte("xy")}, api.CodeTooLarge},
		{"append of no upload", api.OpAppend, api.AppendRequest{Session: "h", Upload: "nothing"}, api.CodeUploadNotFound},
		{"append with upload and entries", api.OpAppend, api.AppendRequest{Session: "h", Upload: "u1", Entries: entries(userHi)}, api.CodeBadRequest},
		{"putblob of no upload", api.OpPutBlob, api.PutBlobRequest{Upload: "nothing"}, api.CodeUploadNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.callErr(tc.op, tc.req)
			if code(err) != tc.want {
				t.Fatalf("%v, want %s", err, tc.want)
			}
		})
	}
	// An entry of small references to a large blob is as large as what
	// it names: refused over the entry limit.
	var br api.BlobReply
	f.call(t, api.OpPutBlob, api.PutBlobRequest{Data: bytes.Repeat([]byte("z"), 600<<10)}, &br)
	ref, _, _ := session.ParseBlobRef(session.Raw(br.Blob))
	ref.Encoding = session.BlobUTF8
	block := `{"type":"text","text":` + string(ref.Raw()) + `}`
	many := `{"type":"message","message":{"role":"user","content":[` + strings.Repeat(block+",", 3) + block + `],"timestamp":1}}`
	if err := f.callErr(api.OpAppend, api.AppendRequest{Session: "h", Entries: entries(many)}); code(err) != api.CodeTooLarge || !strings.Contains(err.Error(), "blobs it names") {
		t.Fatalf("an entry naming 2.4 MiB under a 1 MiB limit: %v", err)
	}
	// An upload that is not an append request is refused, naming where.
	ctx := context.Background()
	if _, err := f.c.Upload(ctx, "junk", strings.NewReader(`{"entries":[{"type":"message"}]}`)); err != nil {
		t.Fatal(err)
	}
	err := f.callErr(api.OpAppend, api.AppendRequest{Session: "h", Upload: "junk"})
	var pe *api.Error
	if !errors.As(err, &pe) || pe.Code != api.CodeInvalidEntry || !strings.HasPrefix(pe.Field, "/entries/0") {
		t.Fatalf("junk upload: %v", err)
	}
	var st api.EntriesReply
	f.call(t, api.OpEntries, api.EntriesRequest{Session: "h"}, &st)
	if st.Total != 0 {
		t.Fatalf("%d entries stored by refused requests", st.Total)
	}
}

// A tenant reaches only its own blobs: another tenant's, named by hash,
// is not found, and cannot be named in an entry.
func TestBlobsStayInTheirTenant(t *testing.T) {
	tt := startTenants(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bobNC, _ := tt.user(t, nats.UserInfo("bob", "bob-pw"))
	bob := api.NewClient(bobNC, "sessionlog.v1")
	aliceNC, _ := tt.user(t, nats.UserInfo("alice", "alice-pw"))
	alice := api.NewClient(aliceNC, "sessionlog.v1")
	secret := []byte(`"globex's secret plan"`)
	var br api.BlobReply
	if err := bob.Call(ctx, api.OpPutBlob, api.PutBlobRequest{Data: secret}, &br); err != nil {
		t.Fatal(err)
	}
	ref, _, _ := session.ParseBlobRef(session.Raw(br.Blob))
	if err := alice.Call(ctx, api.OpBlob, api.BlobRequest{SHA256: ref.SHA256}, nil); code(err) != api.CodeBlobNotFound {
		t.Fatalf("another tenant's blob: %v", err)
	}
	if err := alice.Call(ctx, api.OpCreate, api.CreateRequest{ID: "steal"}, nil); err != nil {
		t.Fatal(err)
	}
	line := `{"type":"custom","customType":"x","data":` + string(br.Blob) + `}`
	if err := alice.Call(ctx, api.OpAppend, api.AppendRequest{Session: "steal", Entries: entries(line)}, nil); code(err) != api.CodeBlobNotFound {
		t.Fatalf("naming another tenant's blob: %v", err)
	}
	var mine api.BlobDataReply
	if err := bob.Call(ctx, api.OpBlob, api.BlobRequest{SHA256: ref.SHA256}, &mine); err != nil || !bytes.Equal(mine.Data, secret) {
		t.Fatalf("the owner's read: %v", err)
	}
	_ = json.Marshal
	_ = jsontext.Value(nil)
}

// A page is sized with each item's content resolved before anything is
// fetched: an image that cannot fit in this page is not read at all. The
// second image's blob is deleted behind the store's back, so a service
// that fetched before sizing would fail the first page; the second page,
// which must fetch it, says which blob is missing.
func TestPagesAreSizedBeforeBlobsAreFetched(t *testing.T) {
	f := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f.call(t, api.OpCreate, api.CreateRequest{ID: "pages"}, nil)
	// Each image resolves (as base64) to over half of a reply: one fits
	// with the other's reference, not with its content.
	size := int(nc.MaxPayload()) * 4 / 10
	var names []string
	for i := range 2 {
		img := randomBytes(t, size)
		sum := sha256.Sum256(img)
		names = append(names, hex.EncodeToString(sum[:]))
		line := `{"type":"message","message":{"role":"user","content":[{"type":"image","data":"` +
			base64.StdEncoding.EncodeToString(img) + `","mimeType":"image/png"}],"timestamp":` + fmt.Sprint(i+1) + `}}`
		up := fmt.Sprintf("page-up%d", i)
		if _, err := f.c.Upload(ctx, up, strings.NewReader(`{"entries":[`+line+`]}`)); err != nil {
			t.Fatal(err)
		}
		f.call(t, api.OpAppend, api.AppendRequest{Session: "pages", Upload: up}, nil)
	}
	obs, err := f.b.JetStream().ObjectStore(ctx, f.b.Config().BlobBucket())
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(ctx, names[1]); err != nil {
		t.Fatal(err)
	}

	var first api.ContextReply
	f.call(t, api.OpContext, api.ContextRequest{Session: "pages"}, &first)
	if first.Total != 2 || first.Next != 1 || len(first.Sources) != 1 {
		t.Fatalf("first page: total %d, next %d, %d messages; want the first image alone", first.Total, first.Next, len(first.Sources))
	}
	if bytes.Contains(first.Messages, []byte(`"$blob"`)) {
		t.Fatalf("the first page holds a reference, not the image")
	}
	err = f.callErr(api.OpContext, api.ContextRequest{Session: "pages", Offset: 1})
	if err == nil || !strings.Contains(err.Error(), names[1]) {
		t.Fatalf("the page of the deleted image: %v, want an error naming blob %s", err, names[1])
	}
}
