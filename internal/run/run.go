// Package run is the lifecycle of threads and runs in the database: threads
// and their queued inputs, runs and their attempts, the thread's messages and
// its gap-free event log (docs/decisions/0027-runs-and-workers.md).
//
// The control side (the API) creates threads, queues inputs, starts and
// cancels runs. The worker side claims runs, holds and renews a lease per
// attempt, records checkpoints and finishes runs; every write of an attempt
// goes through the fence (the run must still carry the attempt's id and an
// unexpired lease), so a worker that lost its lease cannot change the run.
// The sweeps expire leases and advance idle threads. All time arithmetic uses
// the database's clock.
package run

import (
	"encoding/json"
	"time"

	"github.com/svcdev/svc/gen/db"
)

// Status is where a run is in its life.
type Status string

// The run statuses (docs/decisions/0027-runs-and-workers.md).
const (
	StatusAccepted Status = "accepted"
	StatusRunning  Status = "running"
	// StatusWaiting: the run holds no worker slot until a person decides
	// on a call of it or of a run below it
	// (docs/decisions/0052-tool-approvals.md).
	StatusWaiting   Status = "waiting"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Finished reports whether s is a final status.
func (s Status) Finished() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// Error codes of a failed run that this package sets; the agent loop sets
// limit_exceeded, model_error and output_limit (agentloop.CodeLimit,
// agentloop.CodeModel, agentloop.CodeOutputLimit).
const (
	ErrCodeModel             = "model_error"
	ErrCodeAttemptsExhausted = "attempts_exhausted"
	ErrCodeDisabled          = "disabled"
)

// Failure is why a run failed (or was cancelled), as the run view shows it.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error makes a *Failure an error that fails the run rather than its
// attempt: the worker's executor and the toolsets return one when the run's
// own configuration cannot run (its model disabled, its web provider gone),
// and the attempt's end records it as the run's error.
func (f *Failure) Error() string { return f.Code + ": " + f.Message }

// Usage is what a run consumed.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// SkillRevision is a skill revision a run pinned.
type SkillRevision struct {
	SkillID    string `json:"skill_id"`
	RevisionID string `json:"revision_id"`
}

// Thread is a conversation with one agent.
type Thread struct {
	ID            string
	WorkspaceID   string
	AgentID       string
	RevisionID    *string
	Metadata      map[string]any
	ActiveRunID   *string
	LastSeq       int64
	EnvironmentID *string
	CreatedByID   string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Status is idle or running: whether a run of the thread is unfinished.
func (t Thread) Status() string {
	if t.ActiveRunID != nil {
		return "running"
	}
	return "idle"
}

// Input is a message queued on a thread; it starts a run when the thread is idle.
type Input struct {
	ID          string
	ThreadID    string
	Content     string
	Status      string // queued, started, cancelled
	RunID       *string
	CreatedByID string
	CreatedAt   time.Time
	StartedAt   *time.Time
}

// Run is one execution of an agent on a thread.
type Run struct {
	ID                string
	WorkspaceID       string
	ThreadID          string
	InputID           *string
	AgentID           string
	RevisionID        string
	ModelKey          string
	SkillRevisions    []SkillRevision
	ParentRunID       *string
	Status            Status
	AttemptsUsed      int32
	MaxAttempts       int32
	Step              int32
	Error             *Failure
	Usage             Usage
	CancelRequestedAt *time.Time
	CreatedByID       string
	CreatedAt         time.Time
	StartedAt         *time.Time
	FinishedAt        *time.Time
}

// Attempt is one try of a run by a worker.
type Attempt struct {
	ID        string
	RunID     string
	Number    int32
	Worker    string
	Status    string // running, completed, handed_off, expired, lost
	Charged   bool
	FromStep  int32
	ToStep    *int32
	Error     *string
	StartedAt time.Time
	EndedAt   *time.Time
}

// Message is one message of a thread's conversation.
type Message struct {
	Position   int32
	RunID      *string
	Role       string // user, assistant, tool
	Content    string
	ToolCalls  []ToolCall
	ToolCallID *string
	IsError    bool
	CreatedAt  time.Time
}

// ToolCall is a call the model asked for.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func threadOf(r db.Thread) Thread {
	t := Thread{
		ID: r.ID, WorkspaceID: r.WorkspaceID, AgentID: r.AgentID, RevisionID: r.RevisionID,
		ActiveRunID: r.ActiveRunID, LastSeq: r.LastSeq, EnvironmentID: r.EnvironmentID,
		CreatedByID: r.CreatedByID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	_ = json.Unmarshal(r.Metadata, &t.Metadata)
	if t.Metadata == nil {
		t.Metadata = map[string]any{}
	}
	return t
}

func inputOf(r db.ThreadInput) Input {
	return Input{
		ID: r.ID, ThreadID: r.ThreadID, Content: r.Content, Status: r.Status, RunID: r.RunID,
		CreatedByID: r.CreatedByID, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt,
	}
}

func runOf(r db.Run) Run {
	out := Run{
		ID: r.ID, WorkspaceID: r.WorkspaceID, ThreadID: r.ThreadID, InputID: r.InputID, AgentID: r.AgentID,
		RevisionID: r.RevisionID, ModelKey: r.ModelKey, ParentRunID: r.ParentRunID, Status: Status(r.Status),
		AttemptsUsed: r.AttemptsUsed, MaxAttempts: r.MaxAttempts, Step: r.Step,
		CancelRequestedAt: r.CancelRequestedAt, CreatedByID: r.CreatedByID, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
	}
	_ = json.Unmarshal(r.SkillRevisions, &out.SkillRevisions)
	if out.SkillRevisions == nil {
		out.SkillRevisions = []SkillRevision{}
	}
	_ = json.Unmarshal(r.Usage, &out.Usage)
	if len(r.Error) > 0 {
		var f Failure
		if json.Unmarshal(r.Error, &f) == nil {
			out.Error = &f
		}
	}
	return out
}

func attemptOf(r db.RunAttempt) Attempt {
	return Attempt{
		ID: r.ID, RunID: r.RunID, Number: r.Number, Worker: r.Worker, Status: r.Status, Charged: r.Charged,
		FromStep: r.FromStep, ToStep: r.ToStep, Error: r.Error, StartedAt: r.StartedAt, EndedAt: r.EndedAt,
	}
}

func messageOf(r db.ThreadMessage) Message {
	m := Message{
		Position: r.Position, RunID: r.RunID, Role: r.Role, Content: r.Content, ToolCallID: r.ToolCallID,
		IsError: r.IsError, CreatedAt: r.CreatedAt,
	}
	_ = json.Unmarshal(r.ToolCalls, &m.ToolCalls)
	if m.ToolCalls == nil {
		m.ToolCalls = []ToolCall{}
	}
	return m
}
