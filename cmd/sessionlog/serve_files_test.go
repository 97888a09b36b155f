package main

import "testing"

// The descriptors are shared so that the parts never add up to more than
// the limit, the node keeps its reserve, and NATS clients keep at least
// half of what is left.
func TestBudgetFiles(t *testing.T) {
	for _, c := range []struct {
		limit, http, users int
		want               fileBudget
	}{
		{0, 4096, 1024, fileBudget{http: 4096, gatewayUsers: 1024}},
		{20000, 4096, 1024, fileBudget{limit: 20000, reserve: 1024, http: 4096, gatewayUsers: 1024, nats: 13856}},
		{1 << 20, 4096, 1024, fileBudget{limit: 1 << 20, reserve: 1024, http: 4096, gatewayUsers: 1024, nats: 1<<20 - 1024 - 4096 - 1024}},
		{1024, 4096, 1024, fileBudget{limit: 1024, reserve: 128, http: 298, gatewayUsers: 149, nats: 449, scaled: true}},
		{1024, 0, 0, fileBudget{limit: 1024, reserve: 128, nats: 896}},
		{100, 4096, 1024, fileBudget{limit: 100, reserve: 128, nats: 1, scaled: true}},
	} {
		got := budgetFiles(c.limit, c.http, c.users)
		if got != c.want {
			t.Errorf("budgetFiles(%d, %d, %d) = %+v, want %+v", c.limit, c.http, c.users, got, c.want)
		}
		if c.limit > 0 && got.reserve+got.http+got.gatewayUsers+got.nats > max(c.limit, got.reserve+1) {
			t.Errorf("limit %d: parts add up to more: %+v", c.limit, got)
		}
	}
}
