package session

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// randomSession is a session of n entries with branches, leaf moves,
// compactions (keeping a first entry on the path, off it, or a retained
// tail), settings and custom messages.
func randomSession(r *rand.Rand, n int) (Header, []*Entry) {
	h := Header{Version: CurrentVersion, ID: "plan", Timestamp: "2026-01-01T00:00:00.000Z"}
	t := NewTree(h)
	var all []*Entry
	for i := range n {
		e := &Entry{ID: fmt.Sprintf("e%04d", i), ParentID: t.Leaf(), Timestamp: "2026-01-01T00:00:01.000Z"}
		switch k := r.IntN(20); {
		case k < 3:
			e.Type, e.Message = TypeMessage, &Message{Role: RoleUser, Content: TextContent(fmt.Sprint("u", i)), Timestamp: 1}
		case k < 6:
			e.Type, e.Message = TypeMessage, &Message{Role: RoleAssistant, Body: &AssistantFields{Provider: "p", Model: fmt.Sprint("m", i)}, Content: TextContent("a"), Timestamp: 1}
		case k < 8:
			e.Type, e.Message = TypeMessage, &Message{Role: RoleToolResult, Body: &ToolResultFields{ToolCallID: "c", ToolName: "t"}, Content: TextContent("r"), Timestamp: 1}
		case k < 9:
			e.Type, e.Body = TypeThinkingLevelChange, &ThinkingLevelChange{ThinkingLevel: fmt.Sprint("t", i)}
		case k < 10:
			e.Type, e.Body = TypeModelChange, &ModelChange{Provider: "p", ModelID: fmt.Sprint("mc", i)}
		case k < 11:
			e.Type, e.Body = TypeActiveToolsChange, &ActiveToolsChange{ActiveTools: []string{fmt.Sprint("tool", i)}}
		case k < 13 && len(all) > 0:
			c := &Compaction{Summary: fmt.Sprint("s", i), TokensBefore: 1}
			c.FirstKeptEntryID = all[r.IntN(len(all))].ID // on the path or not
			if r.IntN(4) == 0 {
				c.RetainedTail = []Message{{Role: RoleUser, Content: TextContent("kept"), Timestamp: 1}}
			}
			e.Type, e.Body = TypeCompaction, c
		case k < 14:
			e.Type, e.Body = TypeCustomMessage, &CustomMessage{CustomType: "note", Content: TextContent("c")}
		case k < 16 && len(all) > 0:
			e.Type, e.ParentID = TypeLeaf, all[r.IntN(len(all))].ID // a move: a branch
		default:
			e.Type, e.Message = TypeMessage, &Message{Role: RoleUser, Content: TextContent("u"), Timestamp: 1}
		}
		if err := t.Apply(e); err != nil {
			panic(err)
		}
		all = append(all, e)
	}
	return h, all
}

// The reduced branch, loaded in rounds into a partial tree, builds the
// context the whole branch builds, for any leaf of random sessions; and
// for a compacted branch it loads less than the session.
func TestContextBranchBuildsTheSameContext(t *testing.T) {
	smaller := 0
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		h, all := randomSession(r, 20+r.IntN(300))
		full := NewTree(h)
		for _, e := range all {
			if err := full.Apply(e); err != nil {
				t.Fatal(err)
			}
		}
		sk, err := full.Skeleton()
		if err != nil {
			t.Fatal(err)
		}
		for _, leaf := range []string{full.Leaf(), all[r.IntN(len(all))].ID, all[len(all)/2].ID} {
			part, err := NewPartialTree(h, sk)
			if err != nil {
				t.Fatal(err)
			}
			loaded := 0
			for round := 0; ; round++ {
				need, err := part.ContextNeeds(leaf)
				if err != nil {
					t.Fatal(err)
				}
				if len(need) == 0 {
					break
				}
				if round > 20 {
					t.Fatalf("seed %d: still needing %d entries after %d rounds", seed, len(need), round)
				}
				es := make([]*Entry, len(need))
				for i, p := range need {
					es[i] = all[p]
				}
				if err := part.Fill(need, es); err != nil {
					t.Fatal(err)
				}
				loaded += len(need)
			}
			reduced, err := part.ContextBranch(leaf)
			if err != nil {
				t.Fatal(err)
			}
			branch, err := full.Branch(leaf)
			if err != nil {
				t.Fatal(err)
			}
			want := BuildContext(branch, ContextOptions{})
			got := BuildContext(reduced, ContextOptions{})
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, leaf %s: the reduced branch (%d of %d entries) builds another context:\n got %+v\nwant %+v", seed, leaf, len(reduced), len(branch), got, want)
			}
			if loaded < len(branch) {
				smaller++
			}
		}
	}
	if smaller == 0 {
		t.Fatal("no context loaded less than its branch")
	}
}

// Fill refuses entries that are not the skeleton's, and fills nothing then.
func TestFillChecksTheSkeleton(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h, all := randomSession(r, 50)
	full := NewTree(h)
	for _, e := range all {
		_ = full.Apply(e)
	}
	sk, _ := full.Skeleton()
	part, err := NewPartialTree(h, sk)
	if err != nil {
		t.Fatal(err)
	}
	if err := part.Fill([]int32{3, 4}, []*Entry{all[3], all[5]}); err == nil {
		t.Fatal("an entry at another position was taken")
	}
	if part.Missing() != len(all) {
		t.Fatalf("a refused fill filled %d", len(all)-part.Missing())
	}
	if err := part.Fill([]int32{int32(len(all))}, []*Entry{all[0]}); err == nil {
		t.Fatal("a position past the skeleton was taken")
	}
	pos := make([]int32, len(all))
	for i := range pos {
		pos[i] = int32(i)
	}
	if err := part.Fill(pos, all); err != nil || part.Partial() {
		t.Fatalf("filling every position: %v, partial %v", err, part.Partial())
	}
}
