package run

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/skill"
)

// Bounds of what clients send.
const (
	MaxInputChars    = 100000
	MaxMetadataBytes = 16 << 10
	MaxEventsPage    = 1000
)

// On-busy policies of a posted input.
const (
	OnBusyEnqueue = "enqueue"
	OnBusyReject  = "reject"
)

// Options configure a Service.
type Options struct {
	// MaxAttempts is worker.max_attempts, stored on each run when it is accepted.
	MaxAttempts int
	// MaxRunning is worker.workspace_max_running: claims skip a workspace
	// whose leased runs, counted over every worker, are as many. 0 sets no
	// bound.
	MaxRunning int
	// MaxWaitingRuns is limits.workspace_max_waiting_runs: a request that
	// would start a run while the workspace has as many runs waiting for a
	// worker is refused (429 rate_limited). 0 sets no bound.
	MaxWaitingRuns int
	// Publisher carries committed events to live streams, off the callers'
	// path and in commit order (a queue drained by one goroutine); nil
	// publishes none.
	Publisher Publisher
	// Lease is worker.lease_seconds: how long after the lease sweep ended
	// an attempt the checkpoints its worker may have left are deleted (a
	// worker still alive stops writing within it).
	Lease time.Duration
	// Metrics count runs and lease expiries; nil counts nothing.
	Metrics *Metrics
}

// Service is the control side of threads and runs.
type Service struct {
	pool *pgxpool.Pool
	q    *db.Queries
	l    *lifecycle
	pub  Publisher
	// lease is Options.Lease.
	lease time.Duration
	// maxRunning and maxWaiting are Options.MaxRunning and MaxWaitingRuns.
	maxRunning, maxWaiting int
	metrics                *Metrics
}

// NewService returns the thread and run service over pool.
func NewService(pool *pgxpool.Pool, agents *agent.Service, skills *skill.Service, reg *catalog.Registry, opts Options) *Service {
	var pub Publisher = nopPublisher{}
	if opts.Publisher != nil {
		pub = &asyncPublisher{inner: opts.Publisher}
	}
	q := db.New()
	return &Service{pool: pool, q: q, pub: pub, lease: opts.Lease, maxRunning: opts.MaxRunning, maxWaiting: opts.MaxWaitingRuns, metrics: opts.Metrics,
		l: &lifecycle{q: q, agents: agents, skills: skills, reg: reg, maxAttempts: int32(max(opts.MaxAttempts, 1)), metrics: opts.Metrics}}
}

// CreateThreadInput is a new thread.
type CreateThreadInput struct {
	AgentID    string
	RevisionID *string
	Metadata   map[string]any
}

// CreateThread creates a thread with an agent, pinned to a revision or not.
func (s *Service) CreateThread(ctx context.Context, c *auth.Caller, in CreateThreadInput) (Thread, error) {
	if err := auth.Require(c, auth.PermRun); err != nil {
		return Thread{}, err
	}
	meta, err := encodeMetadata(in.Metadata)
	if err != nil {
		return Thread{}, err
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Thread, error) {
		th, err := s.createThread(ctx, tx, c, in.AgentID, in.RevisionID, meta)
		if err != nil {
			return Thread{}, err
		}
		return threadOf(th), nil
	})
}

func (s *Service) createThread(ctx context.Context, tx pgx.Tx, c *auth.Caller, agentID string, revisionID *string, meta []byte) (db.Thread, error) {
	// An agent that is not in the workspace is 404 naming agent_id.
	if _, err := s.l.agents.RequireRunnable(ctx, tx, c.WorkspaceID, agentID, revisionID); err != nil {
		return db.Thread{}, err
	}
	return s.q.ThreadInsert(ctx, tx, db.ThreadInsertParams{
		ID: id.New(id.Thread), WorkspaceID: c.WorkspaceID, AgentID: agentID, RevisionID: revisionID,
		Metadata: meta, CreatedByID: c.PrincipalID,
	})
}

// Posted is the answer to a posted input: the input, and the run it started
// at once (nil when it queued behind an unfinished run).
type Posted struct {
	Input Input
	Run   *Run
}

// PostInput queues an input on a thread. On an idle thread it starts a run at
// once; on a busy one it waits (onBusy "enqueue", the default) or is refused
// with 409 conflict (onBusy "reject").
func (s *Service) PostInput(ctx context.Context, c *auth.Caller, threadID, content, onBusy string) (Posted, error) {
	if err := auth.Require(c, auth.PermRun); err != nil {
		return Posted{}, err
	}
	if err := validateContent("content", content); err != nil {
		return Posted{}, err
	}
	if onBusy == "" {
		onBusy = OnBusyEnqueue
	}
	if onBusy != OnBusyEnqueue && onBusy != OnBusyReject {
		return Posted{}, apperr.InvalidField("on_busy", "must be enqueue or reject")
	}
	var ev pending
	out, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Posted, error) {
		th, err := s.q.ThreadLock(ctx, tx, db.ThreadLockParams{WorkspaceID: c.WorkspaceID, ID: threadID})
		if err != nil {
			return Posted{}, dbx.Translate(err, "thread")
		}
		return s.post(ctx, tx, c, th, content, onBusy, &ev)
	})
	if err == nil {
		ev.publish(ctx, s.pub)
	}
	return out, err
}

func (s *Service) post(ctx context.Context, tx pgx.Tx, c *auth.Caller, th db.Thread, content, onBusy string, ev *pending) (Posted, error) {
	if th.ActiveRunID != nil && onBusy == OnBusyReject {
		return Posted{}, apperr.New(apperr.KindConflict, "the thread has an unfinished run ("+*th.ActiveRunID+"); post with on_busy=enqueue to queue the input")
	}
	if th.ActiveRunID == nil {
		if err := s.admit(ctx, tx, c.WorkspaceID); err != nil {
			return Posted{}, err
		}
	}
	in, err := s.q.InputInsert(ctx, tx, traced(ctx, db.InputInsertParams{ID: id.New(id.Input), WorkspaceID: c.WorkspaceID, ThreadID: th.ID, Content: content, CreatedByID: c.PrincipalID}))
	if err != nil {
		return Posted{}, err
	}
	if th.ActiveRunID != nil {
		return Posted{Input: inputOf(in)}, nil
	}
	// The thread is idle: an older queued input (left by a run that could not
	// start) goes first, so inputs start in the order they were posted.
	next, err := s.q.InputNextQueued(ctx, tx, th.ID)
	if err != nil {
		return Posted{}, err
	}
	r, err := s.l.startRun(ctx, tx, th, next, nil, nil, ev)
	if err != nil {
		return Posted{}, err
	}
	if next.ID != in.ID {
		return Posted{Input: inputOf(in)}, nil
	}
	in.Status, in.RunID = "started", &r.ID
	view := runOf(r)
	return Posted{Input: inputOf(in), Run: &view}, nil
}

// StartInput is the one-call form of a run: an agent, an input and
// optionally the thread to run on (else a new thread).
type StartInput struct {
	AgentID  string
	Input    string
	ThreadID *string
}

// Start queues an input and starts its run at once, on a new thread or on an
// idle thread of the same agent; a busy thread is 409 conflict.
func (s *Service) Start(ctx context.Context, c *auth.Caller, in StartInput) (Run, error) {
	if err := auth.Require(c, auth.PermRun); err != nil {
		return Run{}, err
	}
	if err := validateContent("input", in.Input); err != nil {
		return Run{}, err
	}
	var ev pending
	out, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Run, error) {
		var th db.Thread
		var err error
		if in.ThreadID == nil {
			th, err = s.createThread(ctx, tx, c, in.AgentID, nil, []byte("{}"))
		} else {
			th, err = s.q.ThreadLock(ctx, tx, db.ThreadLockParams{WorkspaceID: c.WorkspaceID, ID: *in.ThreadID})
			if err != nil {
				err = refNotFound(err, "thread_id", "no thread with this id in the workspace")
			} else if th.AgentID != in.AgentID {
				err = apperr.InvalidField("thread_id", "the thread belongs to another agent ("+th.AgentID+")")
			}
		}
		if err != nil {
			return Run{}, err
		}
		p, err := s.post(ctx, tx, c, th, in.Input, OnBusyReject, &ev)
		if err != nil {
			return Run{}, err
		}
		if p.Run == nil {
			return Run{}, apperr.New(apperr.KindConflict, "the thread has older queued inputs; post the input to the thread instead")
		}
		return *p.Run, nil
	})
	if err == nil {
		ev.publish(ctx, s.pub)
	}
	return out, err
}

// Cancel cancels a run. A run no attempt holds is cancelled at once; a running
// one is asked to stop, and its worker ends it as cancelled within moments
// (or the lease sweep does, if the worker is gone). A finished run is 409.
func (s *Service) Cancel(ctx context.Context, c *auth.Caller, runID string) (Run, error) {
	if err := auth.Require(c, auth.PermRun); err != nil {
		return Run{}, err
	}
	var ev pending
	out, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Run, error) {
		r, err := s.q.RunLock(ctx, tx, db.RunLockParams{WorkspaceID: c.WorkspaceID, ID: runID})
		if err != nil {
			return Run{}, dbx.Translate(err, "run")
		}
		if r.FinishedAt != nil {
			return Run{}, apperr.New(apperr.KindConflict, "the run is already "+r.Status)
		}
		if r.LeaseAttemptID == nil {
			done, err := s.l.finishRun(ctx, tx, r, StatusCancelled, &Failure{Code: "cancelled", Message: "cancelled by " + c.PrincipalID}, nil, 0, &ev)
			if err != nil {
				return Run{}, err
			}
			return runOf(done), nil
		}
		r, err = s.q.RunRequestCancel(ctx, tx, r.ID)
		if err != nil {
			return Run{}, err
		}
		if err := s.q.RunCancelNotify(ctx, tx, r.ID); err != nil {
			return Run{}, err
		}
		return runOf(r), nil
	})
	if err == nil {
		ev.publish(ctx, s.pub)
	}
	return out, err
}

// refNotFound is a lookup's error: no row is the 404 of the reference the
// request held in field; anything else is translated.
func refNotFound(err error, field, reason string) error {
	if dbx.IsNotFound(err) {
		return apperr.NotFoundField("not found", field, reason)
	}
	return dbx.Translate(err, "")
}

func validateContent(field, s string) error {
	n := utf8.RuneCountInString(s)
	switch {
	case !utf8.ValidString(s):
		return apperr.InvalidField(field, "must be UTF-8 text")
	case strings.ContainsRune(s, 0):
		return apperr.InvalidField(field, "must not contain NUL characters")
	case n < 1 || n > MaxInputChars:
		return apperr.InvalidField(field, "must have 1 to 100000 characters")
	}
	return nil
}

func encodeMetadata(m map[string]any) ([]byte, error) {
	if m == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, apperr.InvalidField("metadata", "must be a JSON object")
	}
	if len(b) > MaxMetadataBytes {
		return nil, apperr.InvalidField("metadata", "must be at most 16 KiB of JSON")
	}
	return b, nil
}

// Reads.

// ThreadPage is a page of threads, newest first.
type ThreadPage = resource.Page[Thread]

// GetThread reads a thread.
func (s *Service) GetThread(ctx context.Context, c *auth.Caller, threadID string) (Thread, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Thread{}, err
	}
	th, err := s.q.ThreadGet(ctx, s.pool, db.ThreadGetParams{WorkspaceID: c.WorkspaceID, ID: threadID})
	if err != nil {
		return Thread{}, dbx.Translate(err, "thread")
	}
	return threadOf(th), nil
}

// ListThreads lists the workspace's threads (of one agent, when agentID is
// set), newest first.
func (s *Service) ListThreads(ctx context.Context, c *auth.Caller, agentID *string, limit *int, cursor *string) (ThreadPage, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return ThreadPage{}, err
	}
	after, err := resource.AfterID(cursor)
	if err != nil {
		return ThreadPage{}, err
	}
	n := resource.Limit(limit)
	var rows []db.Thread
	if agentID != nil {
		if err := s.agentExists(ctx, c, *agentID); err != nil {
			return ThreadPage{}, err
		}
		rows, err = s.q.ThreadListByAgent(ctx, s.pool, db.ThreadListByAgentParams{WorkspaceID: c.WorkspaceID, AgentID: *agentID, AfterID: after, PageLimit: resource.Fetch(n)})
	} else {
		rows, err = s.q.ThreadList(ctx, s.pool, db.ThreadListParams{WorkspaceID: c.WorkspaceID, AfterID: after, PageLimit: resource.Fetch(n)})
	}
	if err != nil {
		return ThreadPage{}, dbx.Translate(err, "thread")
	}
	return resource.PageOf(rows, n, threadOf, func(r db.Thread) string { return r.ID }), nil
}

// RunPage is a page of runs, newest first.
type RunPage = resource.Page[Run]

// GetRun reads a run.
func (s *Service) GetRun(ctx context.Context, c *auth.Caller, runID string) (Run, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Run{}, err
	}
	r, err := s.q.RunGet(ctx, s.pool, db.RunGetParams{WorkspaceID: c.WorkspaceID, ID: runID})
	if err != nil {
		return Run{}, dbx.Translate(err, "run")
	}
	return runOf(r), nil
}

// RunFilter selects the runs of a list; every member set applies.
type RunFilter struct {
	ThreadID *string
	AgentID  *string
	Status   *string
	// CreatedAfter keeps the runs created after this time.
	CreatedAfter *time.Time
}

// clockAllowance is how far the clock that made a run's id (the process's)
// may be behind the one that stamped its created_at (the database's) for
// CreatedAfter to still find it: the id floor of a time-filtered list is
// that much earlier.
const clockAllowance = time.Hour

// floorID is the lowest run id a list filtered by f may hold ("" for any).
func (f RunFilter) floorID() string {
	if f.CreatedAfter == nil {
		return ""
	}
	return id.Floor(id.Run, f.CreatedAfter.Add(-clockAllowance))
}

// ListRuns lists the workspace's runs that match f, newest first. A thread
// or agent of f that is not in the workspace is not found.
func (s *Service) ListRuns(ctx context.Context, c *auth.Caller, f RunFilter, limit *int, cursor *string) (RunPage, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return RunPage{}, err
	}
	after, err := resource.AfterID(cursor)
	if err != nil {
		return RunPage{}, err
	}
	if f.ThreadID != nil {
		if _, err := s.q.ThreadGet(ctx, s.pool, db.ThreadGetParams{WorkspaceID: c.WorkspaceID, ID: *f.ThreadID}); err != nil {
			return RunPage{}, refNotFound(err, "thread_id", "no such thread in this workspace")
		}
	}
	if f.AgentID != nil {
		if err := s.agentExists(ctx, c, *f.AgentID); err != nil {
			return RunPage{}, err
		}
	}
	n := resource.Limit(limit)
	floor := f.floorID()
	var rows []db.Run
	switch {
	case f.ThreadID != nil:
		rows, err = s.q.RunListOfThread(ctx, s.pool, db.RunListOfThreadParams{
			WorkspaceID: c.WorkspaceID, ThreadID: *f.ThreadID, AfterID: after, FloorID: floor, Status: f.Status, AgentID: f.AgentID,
			CreatedAfter: f.CreatedAfter, PageLimit: resource.Fetch(n)})
	case f.AgentID != nil:
		rows, err = s.q.RunListByAgent(ctx, s.pool, db.RunListByAgentParams{
			WorkspaceID: c.WorkspaceID, AgentID: *f.AgentID, AfterID: after, FloorID: floor, Status: f.Status,
			CreatedAfter: f.CreatedAfter, PageLimit: resource.Fetch(n)})
	default:
		rows, err = s.q.RunList(ctx, s.pool, db.RunListParams{WorkspaceID: c.WorkspaceID, AfterID: after, FloorID: floor, Status: f.Status,
			CreatedAfter: f.CreatedAfter, PageLimit: resource.Fetch(n)})
	}
	if err != nil {
		return RunPage{}, dbx.Translate(err, "run")
	}
	return resource.PageOf(rows, n, runOf, func(r db.Run) string { return r.ID }), nil
}

// ListAttempts lists a run's attempts, first first.
func (s *Service) ListAttempts(ctx context.Context, c *auth.Caller, runID string) ([]Attempt, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return nil, err
	}
	if _, err := s.q.RunGet(ctx, s.pool, db.RunGetParams{WorkspaceID: c.WorkspaceID, ID: runID}); err != nil {
		return nil, dbx.Translate(err, "run")
	}
	rows, err := s.q.AttemptList(ctx, s.pool, runID)
	if err != nil {
		return nil, dbx.Translate(err, "attempt")
	}
	out := make([]Attempt, len(rows))
	for i, r := range rows {
		out[i] = attemptOf(r)
	}
	return out, nil
}

// ListMessages lists a thread's messages after position after, oldest first.
func (s *Service) ListMessages(ctx context.Context, c *auth.Caller, threadID string, after int32, limit int) ([]Message, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return nil, err
	}
	if _, err := s.q.ThreadGet(ctx, s.pool, db.ThreadGetParams{WorkspaceID: c.WorkspaceID, ID: threadID}); err != nil {
		return nil, dbx.Translate(err, "thread")
	}
	rows, err := s.q.MessageList(ctx, s.pool, db.MessageListParams{ThreadID: threadID, AfterPosition: after, PageLimit: int32(limit)})
	if err != nil {
		return nil, dbx.Translate(err, "message")
	}
	out := make([]Message, len(rows))
	for i, r := range rows {
		out[i] = messageOf(r)
	}
	return out, nil
}

// Events reads a thread's events after seq after, oldest first, at most
// limit (capped at MaxEventsPage). The thread must be the caller's.
func (s *Service) Events(ctx context.Context, c *auth.Caller, threadID string, after int64, limit int) ([]Event, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return nil, err
	}
	if _, err := s.q.ThreadGet(ctx, s.pool, db.ThreadGetParams{WorkspaceID: c.WorkspaceID, ID: threadID}); err != nil {
		return nil, dbx.Translate(err, "thread")
	}
	return s.EventsAfter(ctx, threadID, after, limit)
}

// EventsAfter reads a thread's events after seq after without checking the
// caller (the stream checked it when it opened).
func (s *Service) EventsAfter(ctx context.Context, threadID string, after int64, limit int) ([]Event, error) {
	limit = min(max(limit, 1), MaxEventsPage)
	rows, err := s.q.EventList(ctx, s.pool, db.EventListParams{ThreadID: threadID, AfterSeq: after, PageLimit: int32(limit)})
	if err != nil {
		return nil, dbx.Translate(err, "event")
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = eventOf(r)
	}
	return out, nil
}

// agentExists refuses an agent id that is not an agent of the caller's
// workspace (404 naming agent_id).
func (s *Service) agentExists(ctx context.Context, c *auth.Caller, agentID string) error {
	_, err := s.q.HeadGet(ctx, s.pool, db.HeadGetParams{WorkspaceID: c.WorkspaceID, Kind: "agent", ID: agentID})
	if err != nil {
		return refNotFound(err, "agent_id", "no such agent in this workspace")
	}
	return nil
}

// WaitingRetryAfter is the Retry-After of a run refused because its
// workspace has limits.workspace_max_waiting_runs runs waiting: about the
// time a few of them take to be claimed.
const WaitingRetryAfter = 5 * time.Second

// admit refuses a run that would start while the workspace has
// MaxWaitingRuns runs waiting for a worker (unfinished, unleased, not
// waiting for subagents): 429 rate_limited with Retry-After, and the
// caller's transaction, which wrote nothing yet that the answer would keep,
// is rolled back. The workspace's admissions are serialised until tx ends
// (RunAdmitLock), so two requests cannot both take the last place.
func (s *Service) admit(ctx context.Context, tx pgx.Tx, workspaceID string) error {
	if s.maxWaiting <= 0 {
		return nil
	}
	if err := s.q.RunAdmitLock(ctx, tx, workspaceID); err != nil {
		return fmt.Errorf("lock the workspace's admissions: %w", err)
	}
	n, err := s.q.RunWaitingCount(ctx, tx, workspaceID)
	if err != nil {
		return fmt.Errorf("count waiting runs: %w", err)
	}
	if int(n) < s.maxWaiting {
		return nil
	}
	return apperr.RateLimited(fmt.Sprintf("the workspace has %d runs waiting for a worker, the most limits.workspace_max_waiting_runs allows; "+
		"retry after the time in Retry-After, once some have started", s.maxWaiting), WaitingRetryAfter)
}
