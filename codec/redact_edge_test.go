package codec

import (
	"slices"
	"testing"
)

func TestRedactMissingAndCommon(t *testing.T) {
	mine := RedactRule{Name: "acme-key", Pattern: `acme_[0-9a-f]{32}`}
	other := RedactRule{Name: "acme-key", Pattern: `acme_[0-9a-f]{16}`} // same name, another pattern
	cases := []struct {
		name      string
		edge, ten RedactConfig
		missing   []string
	}{
		{"none wanted", RedactConfig{}, RedactConfig{}, nil},
		{"defaults wanted, none kept", RedactConfig{}, RedactConfig{Defaults: true}, names(DefaultRedactRules())},
		{"defaults both", RedactConfig{Defaults: true}, RedactConfig{Defaults: true}, nil},
		{"own rule lacking", RedactConfig{Defaults: true}, RedactConfig{Defaults: true, Rules: []RedactRule{mine}}, []string{"acme-key"}},
		{"own rule another pattern", RedactConfig{Rules: []RedactRule{other}}, RedactConfig{Rules: []RedactRule{mine}}, []string{"acme-key"}},
		{"more than wanted", RedactConfig{Defaults: true, Rules: []RedactRule{mine}}, RedactConfig{Rules: []RedactRule{mine}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.edge.Missing(c.ten); !slices.Equal(got, c.missing) {
				t.Fatalf("missing %v, want %v", got, c.missing)
			}
		})
	}
	// What both applied misses what either lacked.
	a := RedactConfig{Defaults: true, Rules: []RedactRule{mine}}
	b := RedactConfig{Rules: []RedactRule{mine, DefaultRedactRules()[0]}}
	common := a.Common(b)
	if got := common.Missing(RedactConfig{Rules: []RedactRule{mine, DefaultRedactRules()[0]}}); got != nil {
		t.Fatalf("common %+v misses %v", common, got)
	}
	if got := common.Missing(RedactConfig{Defaults: true}); len(got) != len(DefaultRedactRules())-1 {
		t.Fatalf("common %+v should miss every default but the first, misses %v", common, got)
	}
}

func names(rs []RedactRule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out
}
