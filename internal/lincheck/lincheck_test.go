package lincheck

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op is one operation at [call, ret] (milliseconds).
type op struct {
	call, ret int
	in        Input
	out       Output
}

func history(ops ...op) *History {
	h := &History{start: time.Unix(0, 0)}
	for i, o := range ops {
		h.Record(i%3, o.in, time.Unix(0, int64(o.call)*1e6), time.Unix(0, int64(o.ret)*1e6), o.out)
	}
	return h
}

func app(id string, ifSeq uint64) Input {
	return Input{Session: "s", Kind: Append, ID: id, IfSequence: ifSeq}
}

var read = Input{Session: "s", Kind: Read}

func TestModel(t *testing.T) {
	tests := []struct {
		name string
		ops  []op
		want porcupine.CheckResult
	}{
		{"appends then reads", []op{
			{0, 1, read, Output{Leaf: "", Sequence: 1}},
			{2, 3, app("a", 0), Output{Leaf: "a", Sequence: 5}},
			{4, 5, read, Output{Leaf: "a", Sequence: 5}},
		}, porcupine.Ok},
		{"a stale read after an acknowledged append", []op{
			{0, 1, read, Output{Leaf: "", Sequence: 1}},
			{2, 3, app("a", 0), Output{Leaf: "a", Sequence: 5}},
			{4, 5, read, Output{Leaf: "", Sequence: 1}},
		}, porcupine.Illegal},
		{"a read concurrent with the append may see either", []op{
			{0, 1, read, Output{Leaf: "", Sequence: 1}},
			{2, 6, app("a", 0), Output{Leaf: "a", Sequence: 5}},
			{3, 4, read, Output{Leaf: "", Sequence: 1}},
		}, porcupine.Ok},
		{"a conditional append at the current sequence", []op{
			{0, 1, read, Output{Leaf: "", Sequence: 1}},
			{2, 3, app("a", 1), Output{Leaf: "a", Sequence: 2}},
		}, porcupine.Ok},
		{"two conditional appends from one state both stored", []op{
			{0, 1, read, Output{Leaf: "", Sequence: 1}},
			{2, 3, app("a", 1), Output{Leaf: "a", Sequence: 2}},
			{4, 5, app("b", 1), Output{Leaf: "b", Sequence: 3}},
		}, porcupine.Illegal},
		{"the loser conflicts with the winner's state", []op{
			{0, 1, read, Output{Leaf: "", Sequence: 1}},
			{2, 3, app("a", 1), Output{Leaf: "a", Sequence: 2}},
			{4, 5, app("b", 1), Output{Conflict: true, Leaf: "a", Sequence: 2}},
		}, porcupine.Ok},
		{"an append nobody heard of may show up later", []op{
			{0, 1, read, Output{Leaf: "", Sequence: 1}},
			{2, 3, app("a", 0), Output{Unknown: true}},
			{10, 11, read, Output{Leaf: "a", Sequence: 7}},
		}, porcupine.Ok},
		{"or never", []op{
			{0, 1, read, Output{Leaf: "", Sequence: 1}},
			{2, 3, app("a", 0), Output{Unknown: true}},
			{10, 11, read, Output{Leaf: "", Sequence: 1}},
		}, porcupine.Ok},
		{"but not go back once seen", []op{
			{0, 1, read, Output{Leaf: "", Sequence: 1}},
			{2, 3, app("a", 0), Output{Unknown: true}},
			{10, 11, read, Output{Leaf: "a", Sequence: 7}},
			{12, 13, read, Output{Leaf: "", Sequence: 1}},
		}, porcupine.Illegal},
		{"sequences never go back", []op{
			{0, 1, read, Output{Leaf: "", Sequence: 4}},
			{2, 3, read, Output{Leaf: "", Sequence: 3}},
		}, porcupine.Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := history(tt.ops...).Check(10 * time.Second); got != tt.want {
				t.Fatalf("%s, want %s", got, tt.want)
			}
		})
	}
}
