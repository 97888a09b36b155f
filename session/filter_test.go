package session_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
)

func TestListedLabels(t *testing.T) {
	var l session.ListedLabels
	l.Change("", "a")
	l.Change("", "b")
	l.Change("", "a") // a second entry labelled a: a is the most recent
	if got := l.List(); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("labels %v, want [b a]", got)
	}
	l.Change("a", "") // one of the two a's cleared: a stays
	l.Change("b", "") // b's only one cleared: b goes
	if got := l.List(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("labels %v, want [a]", got)
	}
	for i := range 3 * session.MaxListedLabels {
		l.Change("", fmt.Sprintf("l%d", i))
	}
	got := l.List()
	if len(got) != session.MaxListedLabels || got[len(got)-1] != fmt.Sprintf("l%d", 3*session.MaxListedLabels-1) {
		t.Fatalf("%d labels ending %q, want the %d most recent", len(got), got[len(got)-1], session.MaxListedLabels)
	}
}

func TestFilterValidate(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		f    *session.Filter
		ok   bool
	}{
		{"nil", nil, true},
		{"zero", &session.Filter{}, true},
		{"since before until", &session.Filter{Since: at, Until: at.Add(time.Second)}, true},
		{"since at until", &session.Filter{Since: at, Until: at}, false},
		{"empty label", &session.Filter{Labels: []string{""}}, false},
		{"too many labels", &session.Filter{Labels: make([]string, session.MaxListedLabels+1)}, false},
		{"empty meta key", &session.Filter{Meta: map[string]string{"": "x"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f.Validate()
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, session.ErrInvalidConfig)) {
				t.Fatalf("Validate = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestFilterMetadata(t *testing.T) {
	in := session.Listing{Metadata: []byte(`{"a":"x","n":1.5,"o":{"a":"y"},"t":true,"e":"\u0041"}`)}
	for kv, want := range map[[2]string]bool{
		{"a", "x"}: true, {"n", "1.5"}: true, {"t", "true"}: true, {"e", "A"}: true,
		{"a", "y"}: false, {"o", "y"}: false, {"missing", "x"}: false,
	} {
		f := &session.Filter{Meta: map[string]string{kv[0]: kv[1]}}
		if got := f.Match(in); got != want {
			t.Errorf("meta %s=%s: %v, want %v", kv[0], kv[1], got, want)
		}
	}
}
