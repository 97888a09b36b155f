package lru_test

import (
	"slices"
	"testing"

	"github.com/agentcore/sessionlog/internal/lru"
)

func TestTrimEvictsLeastRecentlyUsedFirst(t *testing.T) {
	inUse := map[string]bool{}
	tests := []struct {
		name  string
		setup func(c *lru.Cache[string, int])
		max   int
		want  []int // evicted, in order
		left  int
	}{
		{"under the bound", func(c *lru.Cache[string, int]) { c.Put("a", 1) }, 2, nil, 1},
		{"oldest first", func(c *lru.Cache[string, int]) { c.Put("a", 1); c.Put("b", 2); c.Put("c", 3) }, 1, []int{1, 2}, 1},
		{"a Get makes it recent", func(c *lru.Cache[string, int]) {
			c.Put("a", 1)
			c.Put("b", 2)
			c.Get("a")
		}, 1, []int{2}, 1},
		{"in use is skipped", func(c *lru.Cache[string, int]) {
			c.Put("busy", 1)
			c.Put("b", 2)
			c.Put("c", 3)
			inUse["busy"] = true
		}, 1, []int{2, 3}, 1},
		{"all in use: over the bound", func(c *lru.Cache[string, int]) {
			c.Put("busy", 1)
			c.Put("busy2", 2)
			inUse["busy"], inUse["busy2"] = true, true
		}, 1, nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clear(inUse)
			c := lru.New[string, int]()
			tt.setup(c)
			got := c.Trim(tt.max, func(k string, _ int) bool { return !inUse[k] })
			if !slices.Equal(got, tt.want) || c.Len() != tt.left {
				t.Fatalf("evicted %v leaving %d; want %v leaving %d", got, c.Len(), tt.want, tt.left)
			}
		})
	}
}

func TestRemoveAndAll(t *testing.T) {
	c := lru.New[string, int]()
	c.Put("a", 1)
	c.Put("b", 2)
	if v, ok := c.Remove("a"); !ok || v != 1 {
		t.Fatalf("Remove: %v %v", v, ok)
	}
	if _, ok := c.Get("a"); ok {
		t.Fatal("a removed value is still there")
	}
	n := 0
	for k, v := range c.All() {
		if k != "b" || v != 2 {
			t.Fatalf("All yields %s=%d", k, v)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("All yielded %d values", n)
	}
}
