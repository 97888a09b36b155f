package codec_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// Every line pi wrote, offloaded at every threshold down to the smallest,
// goes through the stored form (JSON and msgpack, strictly decoded and
// validated) and resolves back to the same bytes.
func TestOffloadedPiSamplesResolveExactly(t *testing.T) {
	for _, threshold := range []int{1, 40, 200, 1 << 20} {
		blobs := map[string][]byte{}
		put := func(ref session.BlobRef, b []byte) error {
			blobs[ref.SHA256] = bytes.Clone(b)
			return nil
		}
		get := func(ref session.BlobRef) ([]byte, error) {
			b, ok := blobs[ref.SHA256]
			if !ok || int64(len(b)) != ref.Size {
				return nil, fmt.Errorf("blob %s missing", ref.SHA256)
			}
			return session.BlobContent(ref, b), nil
		}
		offloaded := 0
		for _, s := range sessiontest.PiSamples(t) {
			lines := bytes.Split(bytes.TrimRight(s.Data, "\n"), []byte("\n"))
			for i, l := range lines[1:] {
				at := fmt.Sprintf("%s:%d at %d", s.Name, i+2, threshold)
				e, err := codec.DecodeEntry(l)
				if err != nil {
					t.Fatalf("%s: %v", at, err)
				}
				off, err := session.OffloadEntry(e, threshold, put)
				if err != nil {
					t.Fatalf("%s: offload: %v", at, err)
				}
				if off != e {
					offloaded++
					if !off.HasBlobs() || len(off.BlobRefs()) == 0 {
						t.Fatalf("%s: offloaded entry names no blob", at)
					}
				}
				mp, err := codec.EncodeEntryMsgpack(off)
				if err != nil {
					t.Fatalf("%s: %v", at, err)
				}
				back, err := codec.DecodeEntryMsgpack(mp)
				if err != nil {
					t.Fatalf("%s: %v", at, err)
				}
				js, _ := codec.EncodeEntry(back)
				strict := back
				if _, err := codec.DecodeEntryStrict(l); err == nil {
					if strict, err = codec.DecodeEntryStrict(js); err != nil {
						t.Fatalf("%s: the stored form is refused by the strict reader: %v\n%s", at, err, js)
					}
				}
				if session.ValidateWrite(e) == nil {
					if err := session.ValidateWrite(strict); err != nil {
						t.Fatalf("%s: the stored form does not validate: %v\n%s", at, err, js)
					}
				}
				res, err := session.ResolveEntry(strict, get)
				if err != nil {
					t.Fatalf("%s: resolve: %v", at, err)
				}
				got, err := codec.EncodeEntry(res)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, l) {
					t.Fatalf("%s:\n got %s\nwant %s", at, got, l)
				}
			}
		}
		if threshold == 1 && offloaded == 0 {
			t.Fatal("nothing was offloaded at threshold 1")
		}
		if threshold == 1<<20 && offloaded != 0 {
			t.Fatalf("%d entries offloaded at 1 MiB", offloaded)
		}
	}
}

// Image data in canonical base64 is stored decoded, anything else as it
// is; both resolve to the data they were.
func TestOffloadStoresImagesDecoded(t *testing.T) {
	img := bytes.Repeat([]byte{0, 1, 2, 250}, 64)
	for _, tc := range []struct {
		data, enc string
	}{
		{data: b64(img), enc: session.BlobBase64},
		{data: b64(img)[:len(b64(img))-2] + "\n==", enc: session.BlobUTF8},
	} {
		e := &session.Entry{Type: session.TypeMessage, ID: "a1", Timestamp: "2026-01-01T00:00:00.000Z",
			Message: &session.Message{Role: session.RoleUser, Timestamp: 1, Content: session.BlocksContent(
				session.ContentBlock{Type: session.BlockImage, Body: &session.ImageBlock{Data: tc.data, MimeType: "image/png"}})}}
		var stored []byte
		off, err := session.OffloadEntry(e, 100, func(ref session.BlobRef, b []byte) error { stored = b; return nil })
		if err != nil {
			t.Fatal(err)
		}
		refs := off.BlobRefs()
		if len(refs) != 1 || refs[0].Encoding != tc.enc {
			t.Fatalf("refs %+v, want one of encoding %q", refs, tc.enc)
		}
		if tc.enc == session.BlobBase64 && !bytes.Equal(stored, img) {
			t.Fatal("image stored encoded")
		}
		if err := session.ValidateWrite(off); err != nil {
			t.Fatal(err)
		}
		res, err := session.ResolveEntry(off, func(ref session.BlobRef) ([]byte, error) { return session.BlobContent(ref, stored), nil })
		if err != nil {
			t.Fatal(err)
		}
		if res.Message.Content.Blocks[0].Image().Data != tc.data {
			t.Fatalf("%s: resolves to other data", tc.enc)
		}
	}
}

// A member that claims to be a reference must be one, and only where a
// reference can be restored.
func TestMalformedReferencesAreRefused(t *testing.T) {
	good := strings.Repeat("ab", 32)
	for _, tc := range []struct{ name, line, want string }{
		{"bad hash", `{"type":"custom","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"x","data":{"$blob":"xyz","size":3}}`, "SHA-256"},
		{"no size", `{"type":"custom","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"x","data":{"$blob":"` + good + `"}}`, "size"},
		{"extra member", `{"type":"custom","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"x","data":{"$blob":"` + good + `","size":3,"x":1}}`, "wrong"},
		{"string ref for JSON", `{"type":"custom","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"x","data":{"$blob":"` + good + `","size":3,"encoding":"utf8"}}`, "encoding utf8"},
		{"string ref in a name", `{"type":"model_change","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","provider":{"$blob":"` + good + `","size":3,"encoding":"utf8"},"modelId":"m"}`, "provider"},
		{"bad encoding", `{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":{"$blob":"` + good + `","size":3,"encoding":"rot13"},"timestamp":1}}`, "encoding"},
		{"negative size", `{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":{"$blob":"` + good + `","size":-1,"encoding":"utf8"},"timestamp":1}}`, "size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := codec.DecodeEntryStrict([]byte(tc.line))
			if err == nil {
				err = session.ValidateWrite(e)
			}
			if !errors.Is(err, session.ErrInvalidEntry) && !errors.Is(err, codec.ErrInvalid) {
				t.Fatalf("got %v, want an invalid entry", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
	ok := `{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":{"$blob":"` + good + `","size":3,"encoding":"utf8"},"timestamp":1}}`
	e, err := codec.DecodeEntryStrict([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if err := session.ValidateWrite(e); err != nil {
		t.Fatalf("a well-formed reference is refused: %v", err)
	}
	if refs := e.BlobRefs(); len(refs) != 1 || refs[0].SHA256 != good {
		t.Fatalf("refs %+v", refs)
	}
	_ = hex.EncodeToString
}

func b64(b []byte) string {
	const enc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var sb strings.Builder
	for i := 0; i < len(b); i += 3 {
		var n uint32
		k := min(3, len(b)-i)
		for j := 0; j < 3; j++ {
			n <<= 8
			if j < k {
				n |= uint32(b[i+j])
			}
		}
		for j := 0; j < 4; j++ {
			if j <= k {
				sb.WriteByte(enc[(n>>(18-6*j))&63])
			} else {
				sb.WriteByte('=')
			}
		}
	}
	return sb.String()
}

// Whatever an entry holds, storing its members apart (at any threshold)
// and resolving them gives back what it encoded to; a reference it
// already held is neither stored again nor lost.
func FuzzOffloadResolve(f *testing.F) {
	addSamples(f)
	good := strings.Repeat("cd", 32)
	f.Add([]byte(`{"type":"custom","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"x","data":{"$blob":"` + good + `","size":3}}`))
	f.Add([]byte(`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"image","data":"AAAA","mimeType":"image/png"}],"timestamp":1}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := codec.DecodeEntry(line)
		if err != nil {
			return
		}
		// What the stored form gives back without offloading (msgpack
		// keeps invalid UTF-8 as JSON.parse would read it).
		mp0, err := codec.EncodeEntryMsgpack(e)
		if err != nil {
			return
		}
		e0, err := codec.DecodeEntryMsgpack(mp0)
		if err != nil {
			return
		}
		want, err := codec.EncodeEntry(e0)
		if err != nil {
			return
		}
		held := e.BlobRefs()
		blobs := map[string][]byte{}
		for _, threshold := range []int{1, 8, 64} {
			off, err := session.OffloadEntry(e, threshold, func(ref session.BlobRef, b []byte) error {
				if session.NewBlobRef(b, ref.Encoding) != ref {
					t.Fatalf("reference %+v does not name its content", ref)
				}
				blobs[ref.SHA256] = bytes.Clone(b)
				return nil
			})
			if err != nil {
				t.Fatalf("offload at %d: %v", threshold, err)
			}
			if len(off.BlobRefs()) < len(held) {
				t.Fatalf("offload at %d lost references", threshold)
			}
			mp, err := codec.EncodeEntryMsgpack(off)
			if err != nil {
				t.Fatalf("stored form at %d: %v", threshold, err)
			}
			back, err := codec.DecodeEntryMsgpack(mp)
			if err != nil {
				t.Fatalf("stored form at %d: %v", threshold, err)
			}
			res, err := session.ResolveEntry(back, func(ref session.BlobRef) ([]byte, error) {
				if b, ok := blobs[ref.SHA256]; ok {
					return session.BlobContent(ref, b), nil
				}
				// One the entry held as it came: left to stand.
				return nil, fmt.Errorf("held")
			})
			if len(held) > 0 {
				continue // held references cannot resolve here
			}
			if err != nil {
				t.Fatalf("resolve at %d: %v", threshold, err)
			}
			// A member stored apart keeps its exact bytes, the stored
			// form its meaning: either is what went in.
			got, err := codec.EncodeEntry(res)
			orig, _ := codec.EncodeEntry(e)
			if err != nil || (!bytes.Equal(got, want) && !bytes.Equal(got, orig)) {
				t.Fatalf("at %d:\n got %s\nwant %s (%v)", threshold, got, want, err)
			}
		}
	})
}
