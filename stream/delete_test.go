package stream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// deletable writes session id with entries carrying marker (one of them
// large enough to be a blob of its own), an entry whose large content is
// shared (the same bytes as another session's), and a snapshot.
func deletable(t *testing.T, b *stream.Backend, id, marker, shared string) {
	t.Helper()
	ctx := context.Background()
	st, err := b.CreateStore(ctx, session.Header{ID: id, Timestamp: "2026-12-03T00:00:00.000Z", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	texts := []string{"said " + marker, strings.Repeat(marker+" ", 40), shared, "and " + marker}
	parent := ""
	for i, text := range texts {
		e := &session.Entry{Type: session.TypeMessage, ID: id + "-" + string(rune('a'+i)), ParentID: parent, Timestamp: "2026-12-03T00:00:01.000Z",
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(text), Timestamp: 1}}
		if err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		parent = e.ID
	}
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
}

// Deleting a session leaves nothing of it in any stream or object store —
// its messages, index record, snapshots and the blob only it named —
// keeps what another session shares with it, and says what it did.
func TestDeleteLeavesNothing(t *testing.T) {
	b, skew := blobBackend(t)
	ctx := context.Background()
	const marker = "GONEMARKER"
	shared := strings.Repeat("SHAREDBYTWO ", 40)
	deletable(t, b, "victim", marker, shared)
	deletable(t, b, "keeper", "KEPTMARKER", shared)
	if got := clustertest.StreamsHolding(t, nc, marker); len(got) < 3 {
		t.Fatalf("before the delete the marker is in %v: want the session's stream, its snapshots and its blob", got)
	}
	*skew = 2 * time.Hour // the blobs are past their grace period
	rep, err := b.DeleteSession(ctx, "victim")
	if err != nil {
		t.Fatal(err)
	}
	want := stream.DeleteReport{Messages: 5, Snapshots: 2, BlobsDeleted: 1, BlobsShared: 1}
	if rep != want {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	if got := clustertest.StreamsHolding(t, nc, marker); len(got) > 0 {
		t.Fatalf("after the delete the marker is still in %v", got)
	}
	if got := clustertest.StreamsHolding(t, nc, "SHAREDBYTWO"); len(got) == 0 {
		t.Fatal("the content the other session shares was deleted")
	}
	st, err := b.OpenStore(ctx, "keeper")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	es, err := st.Entries(ctx)
	if err != nil || len(es) != 4 || es[2].Message.Content.Blocks[0].Text != shared {
		t.Fatalf("the other session: %d entries, %v", len(es), err)
	}
	if _, err := b.OpenStore(ctx, "victim"); err == nil {
		t.Fatal("the deleted session opens")
	}
}

// A blob only the deleted session named, but written within the grace
// period, may be about to be named by an append elsewhere: it is left to
// collection, which deletes it once the period has passed.
func TestDeleteLeavesYoungBlobsToCollection(t *testing.T) {
	b, skew := blobBackend(t)
	ctx := context.Background()
	deletable(t, b, "young", "YOUNGMARKER", strings.Repeat("ALONE ", 40))
	rep, err := b.DeleteSession(ctx, "young")
	if err != nil {
		t.Fatal(err)
	}
	if rep.BlobsYoung != 2 || rep.BlobsDeleted != 0 {
		t.Fatalf("report %+v: want both blobs left to collection", rep)
	}
	*skew = 2 * time.Hour
	if st, err := b.CollectBlobs(ctx); err != nil || st.Deleted != 2 {
		t.Fatalf("collection: %+v, %v", st, err)
	}
	if got := clustertest.StreamsHolding(t, nc, "YOUNGMARKER"); len(got) > 0 {
		t.Fatalf("after collection the marker is in %v", got)
	}
}
