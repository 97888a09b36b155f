package console_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentcore/sessionlog/api"
)

// firstRender opens a session in the console and returns when its tree
// was first drawn, by the browser's own clock (the "tree-rendered" mark,
// in ms from the navigation's start).
func firstRender(ctx context.Context, url string) (rendered, fetched float64, err error) {
	err = chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("#main")),
		chromedp.Poll[chromedp.Void](`performance.getEntriesByName('tree-rendered').length > 0`, chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		return 0, 0, err
	}
	marks, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`['tree-rendered', 'tree-fetched'].map(n => performance.getEntriesByName(n)[0].startTime)`))
	if err != nil || len(marks) != 2 {
		return 0, 0, fmt.Errorf("marks %v: %v", marks, err)
	}
	return marks[0], marks[1], nil
}

// BenchmarkConsoleFirstRender: the tree of a 100,000-entry session drawn
// in the browser, against that of a 10-entry session in the same run (the
// page, its requests and a tree of nothing much). Goal: at most 1 s.
//
//	go test ./console -run '^$' -bench ConsoleFirstRender -benchtime 3x
func BenchmarkConsoleFirstRender(b *testing.B) {
	s := startStack(b)
	const big = 100_000
	for _, c := range []struct {
		id string
		n  int
	}{{"small", 10}, {"big", big}} {
		if err := s.client.Call(context.Background(), api.OpCreate, api.CreateRequest{ID: c.id}, nil); err != nil {
			b.Fatal(err)
		}
		parent := ""
		for i := 0; i < c.n; i += 100 {
			var batch []map[string]any
			for k := i; k < min(c.n, i+100); k++ {
				id := fmt.Sprintf("%08x", k+1)
				e := user(fmt.Sprintf("message %d of the long session", k))
				e["id"] = id
				if parent != "" {
					e["parentId"] = parent
				}
				batch, parent = append(batch, e), id
			}
			s.append(b, c.id, batch...)
		}
	}
	ctx := browserB(b)
	var small, large, fetched []float64
	b.ResetTimer()
	for range b.N {
		ms, _, err := firstRender(ctx, s.url+"/console/#/s/small")
		if err != nil {
			b.Fatal(err)
		}
		small = append(small, ms)
		ms, f, err := firstRender(ctx, s.url+"/console/#/s/big")
		if err != nil {
			b.Fatal(err)
		}
		large, fetched = append(large, ms), append(fetched, f)
	}
	b.ReportMetric(median(large), "ms-100k-tree")
	b.ReportMetric(median(fetched), "ms-100k-fetched")
	b.ReportMetric(median(small), "ms-10-tree")
	b.ReportMetric(median(large)/median(small), "ratio")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
