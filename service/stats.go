package service

import (
	"sync"

	"github.com/nats-io/nats.go/micro"

	"github.com/agentcore/sessionlog/api"
)

// opStats counts what each operation answered. Requests are answered
// from goroutines of ours, after micro's handler has returned, so micro's
// own counts see every request but none of the errors: these go in each
// endpoint's stats data (`nats micro stats sessionlog`).
type opStats struct {
	mu   sync.Mutex
	byOp map[string]*endpointData
}

// endpointData is an endpoint's "data" in micro's STATS.
type endpointData struct {
	Answered  int            `json:"answered"`
	Errors    int            `json:"errors"`
	ByCode    map[string]int `json:"errorsByCode,omitempty"`
	LastError string         `json:"lastError,omitempty"`
}

func (o *opStats) note(op string, e *api.Error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byOp == nil {
		o.byOp = map[string]*endpointData{}
	}
	d := o.byOp[op]
	if d == nil {
		d = &endpointData{}
		o.byOp[op] = d
	}
	d.Answered++
	if e == nil {
		return
	}
	d.Errors++
	if d.ByCode == nil {
		d.ByCode = map[string]int{}
	}
	d.ByCode[string(e.Code)]++
	d.LastError = string(e.Code) + ": " + e.Message
}

// of is micro's StatsHandler: a copy of an endpoint's counts.
func (o *opStats) of(ep *micro.Endpoint) any {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.byOp[ep.Name]
	if d == nil {
		return endpointData{}
	}
	c := *d
	c.ByCode = make(map[string]int, len(d.ByCode))
	for k, v := range d.ByCode {
		c.ByCode[k] = v
	}
	return c
}
