package codec

import "testing"

func TestPlainWordExhaustive(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			want := c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
			if got := plain8(string(b)); got != want {
				t.Fatalf("byte %#x at %d: %v", c, pos, got)
			}
		}
	}
}
