package search_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/search"
)

// hostileQueries are texts a careless or hostile client sends: regular
// expressions, wildcards first, boolean words, deep quotes, a phrase of
// the longest allowed, expansions of every word, control characters.
var hostileQueries = []string{
	".*zzz.*", "(a|b)+c", "*zzz", "?zzz", "zzz~~~~", "*", "~", "**", "\"", `""""""""`,
	"zzz AND yyy OR NOT xxx", `"a "b" "c" "d" "e" "f" "g"`, "zz* zz* zz*", "zzz* zzy* zzx*",
	strings.TrimSpace(strings.Repeat("zzz* ", 32)), strings.TrimSpace(strings.Repeat("word~ ", 32)),
	`"` + strings.TrimSpace(strings.Repeat("word ", 32)) + `"`, "\x00\x01\x1b[2J", "\u202Eevil", "e\u0301\u0301\u0301", "🙂🙂🙂",
	strings.Repeat("é", 500), "field:value", "+must -not", "a^5 b^10", "/regex/", "word\\*",
}

// Every hostile query ends with a result or a QueryError, promptly: none
// runs past a generous deadline, and an expansion past the bound is
// refused rather than run.
func TestHostileQueriesAreBounded(t *testing.T) {
	b := backend(t, 1)
	x, ix, _ := follow(t, b, "")
	var texts []string
	for i := range 6000 { // 6,000 words starting zzz: more than one prefix may match
		texts = append(texts, fmt.Sprintf("zzz%05d word common", i))
	}
	write(t, b, "h", texts...)
	caughtUp(t, ix)
	for _, q := range hostileQueries {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := x.Search(ctx, search.Query{Text: q}, nil)
		cancel()
		var qe *search.QueryError
		if err != nil && !errors.As(err, &qe) {
			t.Errorf("%.60q: %v, want a result or a QueryError", q, err)
		}
	}
	// zzz* matches 6,000 words: refused, saying why.
	_, err := x.Search(context.Background(), search.Query{Text: "zzz*"}, nil)
	var qe *search.QueryError
	if !errors.As(err, &qe) || !strings.Contains(qe.Reason, "more letters") {
		t.Fatalf("a prefix of 6,000 words: %v", err)
	}
	if res, err := x.Search(context.Background(), search.Query{Text: "zzz0001*"}, nil); err != nil || res.Total != 10 {
		t.Fatalf("a prefix of 10 words: %+v %v", res, err)
	}
}

// FuzzQueryText: whatever the text, a search answers or refuses with a
// QueryError; it never panics.
func FuzzQueryText(f *testing.F) {
	for _, q := range hostileQueries {
		f.Add(q)
	}
	b := backend(f, 1)
	x, ix, _ := follow(f, b, "")
	write(f, b, "f", "the quick brown fox", "zzz yyy xxx", "a phrase of words")
	caughtUp(f, ix)
	f.Fuzz(func(t *testing.T, q string) {
		_, err := x.Search(context.Background(), search.Query{Text: q, Limit: 5}, nil)
		var qe *search.QueryError
		if err != nil && !errors.As(err, &qe) {
			t.Fatalf("%q: %v", q, err)
		}
	})
}
