package stream

import (
	"testing"

	"github.com/agentcore/sessionlog/session"
)

func TestDecide(t *testing.T) {
	move := []*session.Entry{{Type: session.TypeLeaf, ID: "m"}}
	msg := []*session.Entry{{Type: session.TypeMessage, ID: "x"}}
	tests := []struct {
		name    string
		opts    AppendOptions
		entries []*session.Entry
		want    AppendOptions
	}{
		{"a message follows the leaf", OptionsFor(AfterLeaf, 0), msg, AppendOptions{Policy: Rebase, FollowLeaf: true}},
		{"a move is never rebased", OptionsFor(AfterLeaf, 0), move, AppendOptions{Policy: Retry}},
		{"nor under the backend's Rebase", AppendOptions{Policy: Rebase}, move, AppendOptions{Policy: Retry}},
		{"a chosen parent is retried", OptionsFor(ParentChosen, 7), msg, AppendOptions{Policy: Retry, IfSequence: 7}},
		{"a conditional move keeps its check", OptionsFor(AfterLeaf, 9), move, AppendOptions{Policy: Retry, IfSequence: 9}},
		{"ReturnConflict stays", AppendOptions{}, move, AppendOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.opts, tt.entries); got != tt.want {
				t.Fatalf("decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}
