// Package lincheck checks that a recorded history of service operations on
// sessions is linearizable, against a model of one session: appends that
// follow the leaf, appends conditional on a sequence, and reads of the leaf
// and sequence. Each session is checked on its own (porcupine partitions by
// session). Operations whose outcome the client could not learn (a timeout,
// a lost connection) may have taken effect at any time after their call, or
// never: the checker tries both.
package lincheck

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kind is what an operation does.
type Kind int

const (
	// Append stores one entry with a client-chosen id under the leaf
	// (IfSequence 0) or only if the session is at IfSequence.
	Append Kind = iota
	// Read asks for the session's leaf and sequence (open, context, tree).
	Read
)

// Input is an operation as called.
type Input struct {
	Session    string
	Kind       Kind
	ID         string // the appended entry's id
	IfSequence uint64
}

// Output is what the operation returned.
type Output struct {
	// Unknown: no answer (the append may or may not be stored).
	Unknown bool
	// Conflict: a conditional append refused; Leaf and Sequence are where
	// the session is.
	Conflict bool
	Leaf     string
	Sequence uint64
}

// state is one session: its leaf and last sequence, which may be unknown
// after an append whose outcome nobody learnt (it is then at least seq).
type state struct {
	leaf  string
	seq   uint64
	known bool
}

// History records operations from many goroutines.
type History struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
}

// NewHistory starts a history now.
func NewHistory() *History { return &History{start: time.Now()} }

// Record adds an operation of client, called at call and returned at ret.
func (h *History) Record(client int, in Input, call, ret time.Time, out Output) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: out,
		Call: int64(call.Sub(h.start)), Return: int64(ret.Sub(h.start))})
}

// Len is the number of operations recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Check reports whether the history is linearizable (porcupine.Ok),
// not (Illegal), or could not be decided within timeout (Unknown).
func (h *History) Check(timeout time.Duration) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(Model(), h.operations(), timeout)
}

// operations is a copy of the history as the checker takes it: an
// operation without an answer may take effect until the end.
func (h *History) operations() []porcupine.Operation {
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	for i := range ops {
		if ops[i].Output.(Output).Unknown {
			ops[i].Return = math.MaxInt64 / 2
		}
	}
	return ops
}

// Model is the sequential specification of sessions, partitioned by
// session.
func Model() porcupine.Model {
	nd := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range history {
				s := op.Input.(Input).Session
				if _, ok := by[s]; !ok {
					keys = append(keys, s)
				}
				by[s] = append(by[s], op)
			}
			sort.Strings(keys)
			out := make([][]porcupine.Operation, len(keys))
			for i, k := range keys {
				out[i] = by[k]
			}
			return out
		},
		Init: func() []any { return []any{state{}} },
		Step: func(st, in, out any) []any { return step(st.(state), in.(Input), out.(Output)) },
		DescribeOperation: func(in, out any) string {
			i, o := in.(Input), out.(Output)
			var call string
			switch {
			case i.Kind == Read:
				call = "read()"
			case i.IfSequence != 0:
				call = fmt.Sprintf("append(%s, if %d)", i.ID, i.IfSequence)
			default:
				call = fmt.Sprintf("append(%s)", i.ID)
			}
			switch {
			case o.Unknown:
				return call + " -> ?"
			case o.Conflict:
				return fmt.Sprintf("%s -> conflict(%s, %d)", call, o.Leaf, o.Sequence)
			}
			return fmt.Sprintf("%s -> (%s, %d)", call, o.Leaf, o.Sequence)
		},
		DescribeState: func(st any) string {
			s := st.(state)
			if !s.known {
				return fmt.Sprintf("leaf %s, sequence ≥ %d", s.leaf, s.seq)
			}
			return fmt.Sprintf("leaf %s, sequence %d", s.leaf, s.seq)
		},
	}
	return nd.ToModel()
}

// step is every state the session may be in after the operation, given
// what it returned; none when it could not have returned that.
func step(s state, in Input, out Output) []any {
	// sees says whether the session, in state s, could be seen at (leaf,
	// seq), and the state once it has been.
	sees := func(leaf string, seq uint64) (bool, state) {
		if leaf != s.leaf || seq < s.seq || (s.known && seq != s.seq) {
			return false, s
		}
		return true, state{leaf: leaf, seq: seq, known: true}
	}
	switch in.Kind {
	case Read:
		if out.Unknown {
			return []any{s}
		}
		if ok, next := sees(out.Leaf, out.Sequence); ok {
			return []any{next}
		}
		return nil
	case Append:
		// Whether the append may apply in state s.
		may := in.IfSequence == 0 || !s.known && in.IfSequence >= s.seq || s.known && in.IfSequence == s.seq
		switch {
		case out.Unknown:
			next := []any{s}
			if may {
				next = append(next, state{leaf: in.ID, seq: max(s.seq, in.IfSequence) + 1, known: false})
			}
			return next
		case out.Conflict:
			if in.IfSequence == 0 {
				return nil // an append under the leaf does not conflict
			}
			if ok, next := sees(out.Leaf, out.Sequence); ok && next.seq != in.IfSequence {
				return []any{next}
			}
			return nil
		default:
			// The reply's leaf and sequence are where the session is once
			// the entry is stored — later appends of others may already be
			// in them (and a resend of a stored entry is answered so) —
			// so they bound the state rather than name it.
			if !may || out.Sequence <= s.seq {
				return nil
			}
			return []any{state{leaf: in.ID, seq: max(s.seq, in.IfSequence) + 1, known: false}}
		}
	}
	return nil
}

// Explain describes why a history is not linearizable: for each session
// that fails, the end of the longest order the checker found, and the
// operations that could not come next.
func (h *History) Explain(timeout time.Duration) string {
	ops := h.operations()
	model := Model()
	res, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	if res == porcupine.Ok {
		return "linearizable"
	}
	var b strings.Builder
	for _, part := range info.PartialLinearizationsOperations() {
		if len(part) == 0 {
			continue
		}
		longest := part[0]
		for _, p := range part {
			if len(p) > len(longest) {
				longest = p
			}
		}
		in := map[porcupine.Operation]bool{}
		for _, op := range longest {
			in[op] = true
		}
		var all []porcupine.Operation
		session := ""
		if len(longest) > 0 {
			session = longest[0].Input.(Input).Session
		}
		for _, op := range ops {
			if op.Input.(Input).Session == session {
				all = append(all, op)
			}
		}
		if len(all) == len(longest) {
			continue // this session is fine
		}
		fmt.Fprintf(&b, "session %s: %d of %d operations linearized; the last of them:\n", session, len(longest), len(all))
		for _, op := range longest[max(0, len(longest)-8):] {
			fmt.Fprintf(&b, "  c%d [%v, %v] %s\n", op.ClientId, time.Duration(op.Call), time.Duration(op.Return), model.DescribeOperation(op.Input, op.Output))
		}
		var last int64
		for _, op := range longest {
			last = max(last, op.Call)
		}
		b.WriteString(" none of these fits next:\n")
		shown := 0
		sort.Slice(all, func(i, j int) bool { return all[i].Call < all[j].Call })
		for _, op := range all {
			if in[op] || op.Call < last-int64(time.Second) || shown == 10 {
				continue
			}
			shown++
			fmt.Fprintf(&b, "  c%d [%v, %v] %s\n", op.ClientId, time.Duration(op.Call), time.Duration(op.Return), model.DescribeOperation(op.Input, op.Output))
		}
	}
	return b.String()
}
