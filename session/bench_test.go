package session_test

import (
	"fmt"
	"testing"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiongen"
)

// BenchmarkBuildContext builds the context of branches of growing depth;
// ns/entry stays flat when the work is linear in the path.
func BenchmarkBuildContext(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("depth=%d", n), func(b *testing.B) {
			h, entries := sessiongen.Generate(n)
			t := session.NewTree(h)
			for _, e := range entries {
				if err := t.Apply(e); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				branch, err := t.Branch("")
				if err != nil {
					b.Fatal(err)
				}
				c := session.BuildContext(branch, session.ContextOptions{})
				if len(c.Messages) != n {
					b.Fatal(len(c.Messages))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
		})
	}
}
