package stream_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// Edges linking at once each keep their source: a stream's config is
// replaced whole, so a link whose source another update dropped adds it
// again. (Sources of domains nobody serves are kept as given.)
func TestEdgesLinkingAtOnceAllStay(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			if _, err := b.SourceFrom(ctx, fmt.Sprintf("edge%d", i), b.Config().Streams()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := b.JetStream().Stream(ctx, b.Config().Streams()[0])
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Config.Sources) != 8 {
		t.Fatalf("%d sources after 8 edges linked at once", len(info.Config.Sources))
	}
	if _, err := b.SourceFrom(ctx, "other", []string{"NOT_THESE"}); err == nil {
		t.Fatal("an edge of another layout was taken in")
	}
}
