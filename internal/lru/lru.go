// Package lru is the one least-recently-used cache of the module: the
// service's open sessions, the replica's trees and the gateway's user
// connections. It only orders and evicts; what a value holds, and whether
// it is in use, is the caller's.
package lru

import (
	"iter"
	"sort"
	"sync/atomic"
)

// Cache holds values by key and evicts the least recently used first,
// skipping those the caller says it cannot evict (in use, pinned).
//
// It is not safe for concurrent use by itself: callers guard it with their
// own lock, which also guards what they keep beside it. Get and Peek may
// run under
// a shared (read) lock — concurrent Gets and Peeks are safe: recency is an atomic
// stamp — everything else needs the caller's exclusive lock.
type Cache[K comparable, V any] struct {
	items map[K]*item[V]
	clock atomic.Uint64
}

type item[V any] struct {
	val  V
	used atomic.Uint64
}

// New returns an empty cache.
func New[K comparable, V any]() *Cache[K, V] {
	return &Cache[K, V]{items: map[K]*item[V]{}}
}

// Get returns the value of key and marks it used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	it, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	it.used.Store(c.clock.Add(1))
	return it.val, true
}

// Peek returns the value of key without marking it used.
func (c *Cache[K, V]) Peek(key K) (V, bool) {
	it, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	return it.val, true
}

// Put stores the value of key, replacing any, as the most recently used.
func (c *Cache[K, V]) Put(key K, v V) {
	it := &item[V]{val: v}
	it.used.Store(c.clock.Add(1))
	c.items[key] = it
}

// Remove drops key and returns its value.
func (c *Cache[K, V]) Remove(key K) (V, bool) {
	it, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	delete(c.items, key)
	return it.val, true
}

// Len is the number of values held.
func (c *Cache[K, V]) Len() int { return len(c.items) }

// All yields every key and value, in no order; the caller may Remove the
// key it is given.
func (c *Cache[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for k, it := range c.items {
			if !yield(k, it.val) {
				return
			}
		}
	}
}

// Trim removes values, least recently used first, until at most max are
// held, skipping those evictable refuses; it returns what it removed (for
// the caller to close). With too few evictable values it stops short of
// max: the bound is exceeded until they can go.
func (c *Cache[K, V]) Trim(max int, evictable func(K, V) bool) []V {
	over := len(c.items) - max
	if over <= 0 {
		return nil
	}
	var out []V
	c.TrimWhile(func() bool { over--; return over >= 0 }, evictable, func(_ K, v V) { out = append(out, v) })
	return out
}

// TrimWhile removes values, least recently used first, while over reports
// the cache too full (a bound in bytes, say), skipping those evictable
// refuses, and hands each to removed.
func (c *Cache[K, V]) TrimWhile(over func() bool, evictable func(K, V) bool, removed func(K, V)) {
	type cand struct {
		key  K
		used uint64
	}
	var cands []cand
	for k, it := range c.items {
		if evictable == nil || evictable(k, it.val) {
			cands = append(cands, cand{k, it.used.Load()})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].used < cands[j].used })
	for _, cd := range cands {
		if !over() {
			return
		}
		v := c.items[cd.key].val
		delete(c.items, cd.key)
		removed(cd.key, v)
	}
}
