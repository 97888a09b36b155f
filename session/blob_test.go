package session

import "testing"

// Image data is stored decoded only when encoding it again gives the same
// text: padding bits set, or line breaks, keep it as text.
func TestOnlyCanonicalBase64IsDecoded(t *testing.T) {
	for data, want := range map[string]string{
		"QQ==": BlobBase64, "QR==": BlobUTF8, "QQ": BlobUTF8, "QUJD": BlobBase64, "QU\nJD": BlobUTF8, "QUJD\r\n": BlobUTF8, "Q===": BlobUTF8, "!!!!": BlobUTF8,
	} {
		e := &Entry{Type: TypeMessage, ID: "a", Message: &Message{Role: RoleUser, Content: BlocksContent(ContentBlock{Type: BlockImage, Body: &ImageBlock{Data: data, MimeType: "image/png"}})}}
		off, err := OffloadEntry(e, 1, func(BlobRef, []byte) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if refs := off.BlobRefs(); len(refs) != 1 || refs[0].Encoding != want {
			t.Errorf("%q: refs %+v, want encoding %q", data, refs, want)
		}
	}
}
