package run

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/webhook"
)

// Tool approvals (docs/decisions/0052-tool-approvals.md): a call of a tool
// the agent's policy marks `ask` waits for a person. Its run records the
// step, gives up its lease and shows waiting (its ancestors too) until the
// call is decided on; a decision that leaves nothing to wait for makes the
// run claimable again, and the run continues from its checkpoint.

// The decisions a person makes on a call.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// The statuses of an approval.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	// ApprovalExpired: nobody decided in time; the call was denied or the
	// run failed, as its OnTimeout said.
	ApprovalExpired = "expired"
	// ApprovalClosed: the run ended before anybody decided.
	ApprovalClosed = "closed"
)

// What a call nobody decided on in time does (agent.TimeoutDeny and
// agent.TimeoutFail).
const (
	OnTimeoutDeny = "deny"
	OnTimeoutFail = "fail"
)

// ErrCodeApprovalTimeout is the error code of a run that failed because
// nobody decided on a call in time (on_timeout fail).
const ErrCodeApprovalTimeout = "approval_timeout"

// MaxDecisionMessage bounds the message of a decision, in characters.
const MaxDecisionMessage = 4000

// ApprovalRequest is a call that waits for a person's decision.
type ApprovalRequest struct {
	CallID    string
	Name      string
	Arguments string
}

// ApprovalTerms bound the wait: how long, and what its end does
// (OnTimeoutDeny or OnTimeoutFail).
type ApprovalTerms struct {
	Timeout   time.Duration
	OnTimeout string
}

// Approval is a call that asked for a person's decision.
type Approval struct {
	RunID       string
	ThreadID    string
	CallID      string
	Name        string
	Arguments   string
	Status      string
	OnTimeout   string
	Message     *string
	DecidedByID *string
	RequestedAt time.Time
	ExpiresAt   time.Time
	DecidedAt   *time.Time
}

func approvalOf(a db.RunApproval) Approval {
	return Approval{RunID: a.RunID, ThreadID: a.ThreadID, CallID: a.CallID, Name: a.Name, Arguments: a.Arguments,
		Status: a.Status, OnTimeout: a.OnTimeout, Message: a.Message, DecidedByID: a.DecidedByID,
		RequestedAt: a.RequestedAt, ExpiresAt: a.ExpiresAt, DecidedAt: a.DecidedAt}
}

// ApprovalRequestedData is the data of an approval.requested event.
// TimeoutSeconds is how long it waits; OnTimeout what its end does.
type ApprovalRequestedData struct {
	CallID         string `json:"call_id"`
	Name           string `json:"name"`
	Arguments      string `json:"arguments"`
	TimeoutSeconds int    `json:"timeout_seconds"`
	OnTimeout      string `json:"on_timeout"`
}

// ApprovalDecidedData is the data of an approval.decided event: Decision
// is approve or deny; TimedOut is set when nobody decided in time (then
// DecidedBy is null).
type ApprovalDecidedData struct {
	CallID    string  `json:"call_id"`
	Name      string  `json:"name"`
	Decision  string  `json:"decision"`
	Message   *string `json:"message"`
	DecidedBy *string `json:"decided_by"`
	TimedOut  bool    `json:"timed_out"`
}

// Suspend records that the attempt's run waits for the results of calls
// (its children's) or for a person's decision on asks (a subset of calls,
// recorded for the approvals inbox, under terms): the attempt ends
// uncharged and the run is claimable again once every call has a result
// or a decision. A run that waits for a person, here or below it, shows
// waiting, and so do its ancestors; the run.waiting webhook says so.
func (s *Service) Suspend(ctx context.Context, l Lease, calls []string, asks []ApprovalRequest, terms ApprovalTerms, toStep int32) error {
	return s.fenced(ctx, l, func(ctx context.Context, tx pgx.Tx, r db.Run, ev *pending) error {
		msg := fmt.Sprintf("waiting for %d subagent result(s)", len(calls)-len(asks))
		if len(asks) > 0 {
			msg = fmt.Sprintf("waiting for a person's decision on %d call(s)", len(asks))
		}
		if err := s.endAttempt(ctx, tx, l, db.AttemptEndParams{ID: l.AttemptID, Status: "handed_off", Charged: false, ToStep: &toStep, Error: &msg}); err != nil {
			return err
		}
		status := StatusRunning
		if len(asks) > 0 {
			p := db.ApprovalInsertParams{RunID: r.ID, WorkspaceID: r.WorkspaceID, ThreadID: r.ThreadID,
				OnTimeout: terms.OnTimeout, TimeoutSeconds: terms.Timeout.Seconds()}
			if p.OnTimeout != OnTimeoutFail {
				p.OnTimeout = OnTimeoutDeny
			}
			for _, a := range asks {
				p.CallIds, p.Names, p.Arguments = append(p.CallIds, a.CallID), append(p.Names, a.Name), append(p.Arguments, textSafe(a.Arguments))
			}
			if err := s.q.ApprovalInsert(ctx, tx, p); err != nil {
				return fmt.Errorf("record approvals of %s: %w", r.ID, err)
			}
			status = StatusWaiting
		} else if below, err := s.q.RunSubtreeWaits(ctx, tx, &r.ID); err != nil {
			return err
		} else if below {
			status = StatusWaiting
		}
		if err := s.q.RunSuspend(ctx, tx, db.RunSuspendParams{ID: r.ID, Calls: calls, Status: string(status)}); err != nil {
			return err
		}
		if status == StatusWaiting {
			r.Status = string(status)
			if err := s.l.announceWaiting(ctx, tx, r, ev); err != nil {
				return err
			}
		}
		if err := s.l.refreshAncestors(ctx, tx, r, ev); err != nil {
			return err
		}
		return s.q.RunNotify(ctx, tx)
	})
}

// announceWaiting writes the run.status event and the run.waiting webhook
// of run r, which waits for a person (here or below it).
func (l *lifecycle) announceWaiting(ctx context.Context, tx pgx.Tx, r db.Run, ev *pending) error {
	out, err := appendEvents(ctx, tx, r.WorkspaceID, r.ThreadID, &r.ID, []NewEvent{{Type: EventRunStatus, Data: RunStatusData{Status: StatusWaiting}}})
	if err != nil {
		return err
	}
	ev.add(r.ThreadID, out)
	return l.emit(ctx, tx, webhook.RunWaiting, r)
}

// refreshAncestors sets the status of run r's unfinished ancestors that
// no attempt holds: waiting while a call of theirs or of a run below them
// waits for a person, running otherwise; each change is a run.status event
// (and, to waiting, a run.waiting webhook). tx holds r locked; the
// ancestors are locked from the deepest up, those an attempt holds too,
// before their status is read in a statement of its own. So an ancestor's
// Suspend under way, which decides its run's status from the calls below it
// while holding its row, is waited for and its outcome seen; and a Suspend
// that comes later sees what tx wrote.
func (l *lifecycle) refreshAncestors(ctx context.Context, tx pgx.Tx, r db.Run, ev *pending) error {
	if r.ParentRunID == nil {
		return nil
	}
	root := r.ID
	if r.RootRunID != nil {
		root = *r.RootRunID
	}
	if err := l.q.RunAncestorsLock(ctx, tx, r.ID); err != nil {
		return fmt.Errorf("lock the ancestors of %s: %w", r.ID, err)
	}
	rows, err := l.q.RunAncestorsWaiting(ctx, tx, db.RunAncestorsWaitingParams{ID: r.ID, RootID: root})
	if err != nil {
		return fmt.Errorf("ancestors of %s: %w", r.ID, err)
	}
	for _, row := range rows {
		if err := l.setWaiting(ctx, tx, row.ID, Status(row.WantStatus), ev); err != nil {
			return err
		}
	}
	return nil
}

// setWaiting sets the status of run runID, unfinished and unheld, to
// waiting or running, with its run.status event (and, to waiting, its
// run.waiting webhook); nothing when it had it already.
func (l *lifecycle) setWaiting(ctx context.Context, tx pgx.Tx, runID string, status Status, ev *pending) error {
	u, err := l.q.RunSetWaiting(ctx, tx, db.RunSetWaitingParams{ID: runID, Status: string(status)})
	if dbx.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("set status of %s: %w", runID, err)
	}
	if status == StatusWaiting {
		return l.announceWaiting(ctx, tx, u, ev)
	}
	out, err := appendEvents(ctx, tx, u.WorkspaceID, u.ThreadID, &u.ID, []NewEvent{{Type: EventRunStatus, Data: RunStatusData{Status: status}}})
	ev.add(u.ThreadID, out)
	return err
}

// DecideInput is a person's decision on a call that waits for one.
type DecideInput struct {
	CallID string
	// Decision is DecisionApprove or DecisionDeny.
	Decision string
	// Message is what the model reads of a denial (and what the run's
	// events show of either); may be empty.
	Message string
}

// DecideApproval records the caller's decision on call in.CallID of run
// runID: an approved call runs when the run continues; a denied one is
// answered to the model with the message. It is an approval.decided event
// and an audit record naming the caller. 409 when the call does not wait
// for a decision (decided already, or never asked for one).
func (s *Service) DecideApproval(ctx context.Context, c *auth.Caller, runID string, in DecideInput) (Approval, error) {
	if err := auth.Require(c, auth.PermRun); err != nil {
		return Approval{}, err
	}
	var bad []apperr.Detail
	if in.CallID == "" || !utf8.ValidString(in.CallID) || len(in.CallID) > 256 {
		bad = append(bad, apperr.Detail{Field: "call_id", Reason: "is required: the id of a call that waits for a decision"})
	}
	if in.Decision != DecisionApprove && in.Decision != DecisionDeny {
		bad = append(bad, apperr.Detail{Field: "decision", Reason: "must be approve or deny"})
	}
	if reason := messageProblem(in.Message); reason != "" {
		bad = append(bad, apperr.Detail{Field: "message", Reason: reason})
	}
	if len(bad) > 0 {
		return Approval{}, apperr.InvalidArgument("the decision is invalid", bad...)
	}
	var ev pending
	out, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Approval, error) {
		r, err := s.q.RunLock(ctx, tx, db.RunLockParams{WorkspaceID: c.WorkspaceID, ID: runID})
		if err != nil {
			return Approval{}, dbx.Translate(err, "run")
		}
		a, err := s.q.ApprovalLock(ctx, tx, db.ApprovalLockParams{RunID: r.ID, CallID: in.CallID})
		if dbx.IsNotFound(err) {
			return Approval{}, apperr.New(apperr.KindConflict, "nothing of the run waits for a decision on call "+in.CallID)
		}
		if err != nil {
			return Approval{}, err
		}
		if a.Status != ApprovalPending {
			return Approval{}, apperr.New(apperr.KindConflict, "the call does not wait for a decision: it is "+a.Status)
		}
		status := ApprovalApproved
		if in.Decision == DecisionDeny {
			status = ApprovalDenied
		}
		var msg *string
		if in.Message != "" {
			msg = &in.Message
		}
		a, err = s.q.ApprovalDecide(ctx, tx, db.ApprovalDecideParams{RunID: r.ID, CallID: a.CallID, Status: status, Message: msg, DecidedByID: &c.PrincipalID})
		if err != nil {
			return Approval{}, err
		}
		if err := s.l.decided(ctx, tx, r, a, in.Decision, &ev); err != nil {
			return Approval{}, err
		}
		if err := audit.Record(ctx, tx, audit.Event{OrganizationID: c.OrganizationID, WorkspaceID: c.WorkspaceID, ActorID: c.PrincipalID,
			Action: "run.approval_" + status, SubjectType: "run", SubjectID: r.ID, ChangedFields: []string{"approval:" + a.CallID}}); err != nil {
			return Approval{}, err
		}
		return approvalOf(a), nil
	})
	if err == nil {
		ev.publish(ctx, s.pub)
	}
	return out, err
}

// decided records what follows a decision on approval a of run r (locked
// in tx): its approval.decided event; the run's status, running unless
// another call of it or below it still waits for a person; its ancestors';
// and the run made claimable when nothing else is awaited.
func (l *lifecycle) decided(ctx context.Context, tx pgx.Tx, r db.Run, a db.RunApproval, decision string, ev *pending) error {
	out, err := appendEvents(ctx, tx, r.WorkspaceID, r.ThreadID, &r.ID, []NewEvent{{Type: EventApprovalDecided, Data: ApprovalDecidedData{
		CallID: a.CallID, Name: a.Name, Decision: decision, Message: a.Message, DecidedBy: a.DecidedByID, TimedOut: a.Status == ApprovalExpired}}})
	if err != nil {
		return err
	}
	ev.add(r.ThreadID, out)
	left, err := l.q.ApprovalPendingCount(ctx, tx, r.ID)
	if err != nil {
		return err
	}
	want := StatusRunning
	if left > 0 {
		want = StatusWaiting
	} else if below, err := l.q.RunSubtreeWaits(ctx, tx, &r.ID); err != nil {
		return err
	} else if below {
		want = StatusWaiting
	}
	if Status(r.Status) != want {
		if err := l.setWaiting(ctx, tx, r.ID, want, ev); err != nil {
			return err
		}
	}
	if err := l.refreshAncestors(ctx, tx, r, ev); err != nil {
		return err
	}
	n, err := l.q.RunWakeIfAnswered(ctx, tx, r.ID)
	if err != nil {
		return err
	}
	if n > 0 {
		return l.q.RunNotify(ctx, tx)
	}
	return nil
}

// messageProblem says what is wrong with a decision's message, "" when
// nothing is.
func messageProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be UTF-8 text"
	case strings.ContainsRune(s, 0):
		return "must not contain NUL characters"
	case utf8.RuneCountInString(s) > MaxDecisionMessage:
		return fmt.Sprintf("must be at most %d characters", MaxDecisionMessage)
	}
	return ""
}

// CallDecision is the decision on a call that waited for a person, as the
// run's model reads it.
type CallDecision struct {
	Approved bool
	// Reason is what the model reads of a denied call.
	Reason string
}

// Decisions reads the decisions made on calls of run runID that waited
// for a person; a call not yet decided is absent.
func (s *Service) Decisions(ctx context.Context, runID string, calls []string) (map[string]CallDecision, error) {
	rows, err := s.q.ApprovalsDecided(ctx, s.pool, db.ApprovalsDecidedParams{RunID: runID, CallIds: calls})
	if err != nil {
		return nil, err
	}
	out := make(map[string]CallDecision, len(rows))
	for _, a := range rows {
		switch a.Status {
		case ApprovalApproved:
			out[a.CallID] = CallDecision{Approved: true}
		case ApprovalDenied:
			reason := "the call was not run: a person denied it"
			if a.Message != nil && *a.Message != "" {
				reason += ", saying: " + *a.Message
			}
			out[a.CallID] = CallDecision{Reason: reason}
		default:
			out[a.CallID] = CallDecision{Reason: fmt.Sprintf("the call was not run: nobody approved it within %s", a.ExpiresAt.Sub(a.RequestedAt).Round(time.Second))}
		}
	}
	return out, nil
}

// PendingApprovals lists the calls of run runID, and of the runs below it,
// that wait for a person's decision, oldest first.
func (s *Service) PendingApprovals(ctx context.Context, c *auth.Caller, runID string) ([]Approval, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return nil, err
	}
	if _, err := s.q.RunGet(ctx, s.pool, db.RunGetParams{WorkspaceID: c.WorkspaceID, ID: runID}); err != nil {
		return nil, dbx.Translate(err, "run")
	}
	byRun, err := s.pendingUnder(ctx, []string{runID})
	if err != nil {
		return nil, err
	}
	return byRun[runID], nil
}

// pendingUnder answers, for each run of ids, the pending approvals of the
// run and of the runs below it.
func (s *Service) pendingUnder(ctx context.Context, ids []string) (map[string][]Approval, error) {
	rows, err := s.q.ApprovalsPendingUnder(ctx, s.pool, ids)
	if err != nil {
		return nil, dbx.Translate(err, "approval")
	}
	out := make(map[string][]Approval, len(ids))
	for _, id := range ids {
		out[id] = []Approval{}
	}
	for _, a := range rows {
		out[a.TopRunID] = append(out[a.TopRunID], approvalOf(db.RunApproval{RunID: a.RunID, CallID: a.CallID, WorkspaceID: a.WorkspaceID,
			ThreadID: a.ThreadID, Name: a.Name, Arguments: a.Arguments, Status: a.Status, OnTimeout: a.OnTimeout, Message: a.Message,
			DecidedByID: a.DecidedByID, RequestedAt: a.RequestedAt, ExpiresAt: a.ExpiresAt, DecidedAt: a.DecidedAt}))
	}
	return out, nil
}

// WaitingRun is a run that waits for a person, with the calls that wait:
// its own, and those of the runs below it (a parent waits while its child
// does; each Approval names its run).
type WaitingRun struct {
	Run     Run
	Pending []Approval
}

// WaitingPage is a page of waiting runs, newest first.
type WaitingPage = resource.Page[WaitingRun]

// ListWaiting lists the workspace's runs that wait for a person, newest
// first, each with its pending calls (an approvals inbox).
func (s *Service) ListWaiting(ctx context.Context, c *auth.Caller, limit *int, cursor *string) (WaitingPage, error) {
	status := string(StatusWaiting)
	runs, err := s.ListRuns(ctx, c, RunFilter{Status: &status}, limit, cursor)
	if err != nil {
		return WaitingPage{}, err
	}
	ids := make([]string, len(runs.Items))
	for i, r := range runs.Items {
		ids[i] = r.ID
	}
	byRun, err := s.pendingUnder(ctx, ids)
	if err != nil {
		return WaitingPage{}, err
	}
	out := WaitingPage{Items: make([]WaitingRun, len(runs.Items)), NextCursor: runs.NextCursor}
	for i, r := range runs.Items {
		out.Items[i] = WaitingRun{Run: r, Pending: byRun[r.ID]}
	}
	return out, nil
}

// ExpireApprovals ends the waits whose timeout passed (the
// expire_approvals sweep), SweepBatch per transaction until none is left:
// a call whose on_timeout is deny is denied (the model is told nobody
// approved it in time), one whose on_timeout is fail fails its run. It
// answers how many it ended.
func (s *Service) ExpireApprovals(ctx context.Context) (int, error) {
	return sweepBatches(ctx, s, s.q.ApprovalsExpired, func(ctx context.Context, tx pgx.Tx, a db.RunApproval, ev *pending) error {
		if err := s.expireApproval(ctx, tx, a, ev); err != nil {
			return fmt.Errorf("expire approval of %s call %s: %w", a.RunID, a.CallID, err)
		}
		return nil
	})
}

// expireApproval ends the wait of approval a: the run is locked first, as
// a decision does, and the approval read again under it.
func (s *Service) expireApproval(ctx context.Context, tx pgx.Tx, a db.RunApproval, ev *pending) error {
	r, err := s.q.RunLock(ctx, tx, db.RunLockParams{WorkspaceID: a.WorkspaceID, ID: a.RunID})
	if err != nil {
		return err
	}
	a, err = s.q.ApprovalDecide(ctx, tx, db.ApprovalDecideParams{RunID: a.RunID, CallID: a.CallID, Status: ApprovalExpired})
	if dbx.IsNotFound(err) {
		return nil // decided meanwhile
	}
	if err != nil {
		return err
	}
	if a.OnTimeout != OnTimeoutFail {
		return s.l.decided(ctx, tx, r, a, DecisionDeny, ev)
	}
	out, err := appendEvents(ctx, tx, r.WorkspaceID, r.ThreadID, &r.ID, []NewEvent{{Type: EventApprovalDecided, Data: ApprovalDecidedData{
		CallID: a.CallID, Name: a.Name, Decision: DecisionDeny, TimedOut: true}}})
	if err != nil {
		return err
	}
	ev.add(r.ThreadID, out)
	_, err = s.l.finishRun(ctx, tx, r, StatusFailed, &Failure{Code: ErrCodeApprovalTimeout,
		Message: fmt.Sprintf("nobody decided on the call %s (%s) within %s", a.Name, a.CallID, a.ExpiresAt.Sub(a.RequestedAt).Round(time.Second))}, nil, 0, ev)
	return err
}

// closeApprovals closes the pending calls of run r, which ended, and
// sets its ancestors' status again.
func (l *lifecycle) closeApprovals(ctx context.Context, tx pgx.Tx, r db.Run, ev *pending) error {
	n, err := l.q.ApprovalCloseOfRun(ctx, tx, r.ID)
	if err != nil {
		return fmt.Errorf("close approvals of %s: %w", r.ID, err)
	}
	if n == 0 && r.Status != string(StatusWaiting) {
		return nil
	}
	return l.refreshAncestors(ctx, tx, r, ev)
}
