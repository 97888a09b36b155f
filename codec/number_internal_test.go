package codec

import (
	"strconv"
	"testing"
)

// TestPlainDecimalAgreesWithFormatting holds the shortcut to what
// formatting says, on the shapes around each of its bounds.
func TestPlainDecimalAgreesWithFormatting(t *testing.T) {
	lits := []string{
		"0", "-0", "0.0", "1", "-1", "10", "1000", "0.5", "0.50", "-0.003", "0.00375", "00.5", "01",
		"0.000001", "0.0000001", "0.0000015", "0.00000123456789012345", "123456789012345", "1234567890123456",
		"999999999999999", "1e3", "1E3", "1.5e-7", "0.1", "0.2", "0.30000000000000004", "123.456", "1.", ".5",
		"12345678.9012345", "12345678.90123456", "-", "", "1.0", "100.25", "9007199254740993",
	}
	for _, lit := range lits {
		if !plainDecimal(lit) {
			continue
		}
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			t.Errorf("%q: plain, but does not parse: %v", lit, err)
			continue
		}
		b, _ := appendFloat(nil, f, "", nil)
		if string(b) != lit {
			t.Errorf("%q: plain, but written as %s", lit, b)
		}
	}
	for _, lit := range []string{"0.5", "-0.003", "123.456", "0.000001", "999999999999999"} {
		if !plainDecimal(lit) {
			t.Errorf("%q: not found plain", lit)
		}
	}
}

func FuzzPlainDecimal(f *testing.F) {
	for _, s := range []string{"0.003", "1", "0.000001", "12345678.9012345"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		if !plainDecimal(lit) {
			return
		}
		v, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			t.Fatalf("%q: plain, but does not parse: %v", lit, err)
		}
		if b, _ := appendFloat(nil, v, "", nil); string(b) != lit {
			t.Fatalf("%q: plain, but written as %s", lit, b)
		}
	})
}
