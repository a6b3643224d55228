package testfactory

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/id"
)

// ThreadOpts describes a thread.
type ThreadOpts struct {
	// AgentID is the thread's agent; default: a new one made with Agent.
	AgentID string
}

// Thread writes a thread of o's workspace, with no input or run: what a
// test of a thread's resources (its environment, say) needs.
func Thread(tb testing.TB, q Beginner, o Owner, opts *ThreadOpts) db.Thread {
	tb.Helper()
	o.check(tb, "a thread")
	if opts == nil {
		opts = &ThreadOpts{}
	}
	agentID := opts.AgentID
	if agentID == "" {
		agentID = Agent(tb, q, o, nil).ID
	}
	row, err := db.New().ThreadInsert(context.Background(), q, db.ThreadInsertParams{
		ID: id.New(id.Thread), WorkspaceID: o.WorkspaceID, AgentID: agentID, Metadata: json.RawMessage(`{}`), CreatedByID: o.PrincipalID,
	})
	if err != nil {
		tb.Fatalf("testfactory: thread: %v", err)
	}
	return row
}
