package revision_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

// note is the configuration of the tests' revisioned kind: the machinery
// is the same for every kind, so the tests use one of their own.
type note struct {
	Text string   `json:"text"`
	Tags []string `json:"tags"`
}

// notes is the Content of notes: text is required, tags are a sorted set.
// Its reference check and precheck answer what the test sets.
type notes struct {
	mu          sync.Mutex
	refErr      error
	precheckErr error
	checked     int
}

var _ revision.Content[note] = (*notes)(nil)

func (n *notes) Normalize(raw json.RawMessage) (note, error) {
	var v note
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return note{}, apperr.InvalidField("config", "is not a note")
	}
	if v.Text == "" {
		return note{}, apperr.InvalidField("config.text", "is required")
	}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	slices.Sort(v.Tags)
	return v, nil
}

func (n *notes) CheckReferences(context.Context, pgx.Tx, *auth.Caller, string, note) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.checked++
	return n.refErr
}

func (n *notes) Precheck(context.Context, *auth.Caller, note) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.precheckErr
}

func (n *notes) checks() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.checked
}

func (n *notes) set(refErr, precheckErr error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.refErr, n.precheckErr = refErr, precheckErr
}

type testBundle struct {
	pool    *pgxpool.Pool
	svc     *revision.Service[note]
	content *notes
	admin   testfactory.Admin
	editor  *auth.Caller
	viewer  *auth.Caller
	// stranger is an editor of another workspace of the organization.
	stranger *auth.Caller
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	content := &notes{}
	stranger := admin.Caller(auth.RoleEditor)
	stranger.WorkspaceID = testfactory.Workspace(t, pool, admin.OrganizationID, admin.PrincipalID, nil).ID
	return &testBundle{
		pool: pool, svc: revision.NewService[note](pool, revision.KindSkill, content), content: content, admin: admin,
		editor: admin.Caller(auth.RoleEditor), viewer: admin.Caller(auth.RoleViewer), stranger: stranger,
	}
}

func (b *testBundle) create(t *testing.T, c *auth.Caller, name, cfg string) revision.Head {
	t.Helper()
	h, err := b.svc.Create(t.Context(), c, revision.CreateInput{Name: name, Config: json.RawMessage(cfg)})
	require.NoError(t, err)
	return h
}

func (b *testBundle) publish(t *testing.T, headID, cfg string, makeDefault *bool) revision.Published[note] {
	t.Helper()
	p, err := b.svc.Publish(t.Context(), b.editor, revision.PublishInput{HeadID: headID, Config: json.RawMessage(cfg), MakeDefault: makeDefault})
	require.NoError(t, err)
	return p
}

func (b *testBundle) get(t *testing.T, headID string) revision.Head {
	t.Helper()
	h, err := b.svc.Get(t.Context(), b.editor, headID)
	require.NoError(t, err)
	return h
}

// auditActions are the audit events recorded about a subject, oldest first.
func (b *testBundle) auditActions(t *testing.T, subjectID string) []string {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `SELECT action FROM audit_event WHERE subject_id = $1 ORDER BY created_at, id`, subjectID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// published counts the skill.revision_published deliveries queued for subscribers.
func (b *testBundle) published(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox WHERE event_type = 'skill.revision_published'`).Scan(&n))
	return n
}

// requireRefused checks err's kind and, when field is set, that a detail names it.
func requireRefused(t *testing.T, err error, kind apperr.Kind, field string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, kind, apperr.KindOf(err), "%v", err)
	if field == "" {
		return
	}
	e, _ := apperr.As(err)
	var fields []string
	for _, d := range e.Details {
		fields = append(fields, d.Field)
	}
	require.Contains(t, fields, field)
}

func ptr[T any](v T) *T { return &v }

func TestService(t *testing.T) {
	t.Parallel()

	t.Run("CreateMakesRevisionOneTheDefault", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		h, err := b.svc.Create(t.Context(), b.editor, revision.CreateInput{Name: "triage", Description: ptr("Sorts things."),
			Labels: map[string]string{"team": "a"}, Config: json.RawMessage(`{"tags":["b","a"],"text":"hi"}`)})
		require.NoError(t, err)
		require.Equal(t, revision.KindSkill, h.Kind)
		require.Regexp(t, `^sk_`, h.ID)
		require.Equal(t, "Sorts things.", h.Description)
		require.Equal(t, map[string]string{"team": "a"}, h.Labels)
		require.EqualValues(t, 1, h.LatestRevisionNumber)
		require.EqualValues(t, 1, h.Version)
		require.Equal(t, `"`+h.ID+`:1"`, h.ETag())
		require.False(t, h.Archived())

		rev, err := b.svc.GetRevision(t.Context(), b.viewer, h.ID, h.DefaultRevisionID)
		require.NoError(t, err)
		require.EqualValues(t, 1, rev.Number)
		require.Equal(t, note{Text: "hi", Tags: []string{"a", "b"}}, rev.Config, "stored normalized")
		require.Equal(t, revision.ContentHash([]byte(`{"tags":["a","b"],"text":"hi"}`)), rev.ContentHash)
		require.Equal(t, []string{"skill.created"}, b.auditActions(t, h.ID))
	})

	t.Run("CreateRefusesWithoutWritingAnything", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		errRef := refcheck.NotFound("config.ref", "no such thing")
		errSlow := apperr.New(apperr.KindConflict, "the package is broken")
		for _, tc := range []struct {
			name        string
			caller      *auth.Caller
			in          revision.CreateInput
			refErr      error
			precheckErr error
			kind        apperr.Kind
			field       string
		}{
			{name: "viewer", caller: b.viewer, in: revision.CreateInput{Name: "n", Config: json.RawMessage(`{"text":"x"}`)},
				kind: apperr.KindPermissionDenied},
			{name: "empty name", in: revision.CreateInput{Name: "", Config: json.RawMessage(`{"text":"x"}`)},
				kind: apperr.KindInvalidArgument, field: "name"},
			{name: "no config", in: revision.CreateInput{Name: "n"}, kind: apperr.KindInvalidArgument, field: "config"},
			{name: "null config", in: revision.CreateInput{Name: "n", Config: json.RawMessage(`null`)},
				kind: apperr.KindInvalidArgument, field: "config"},
			{name: "config the kind refuses", in: revision.CreateInput{Name: "n", Config: json.RawMessage(`{"tags":[]}`)},
				kind: apperr.KindInvalidArgument, field: "config.text"},
			{name: "bad label", in: revision.CreateInput{Name: "n", Labels: map[string]string{"Bad Key": "v"}, Config: json.RawMessage(`{"text":"x"}`)},
				kind: apperr.KindInvalidArgument},
			{name: "missing reference", in: revision.CreateInput{Name: "n", Config: json.RawMessage(`{"text":"x"}`)},
				refErr: errRef, kind: apperr.KindNotFound, field: "config.ref"},
			{name: "failed precheck", in: revision.CreateInput{Name: "n", Config: json.RawMessage(`{"text":"x"}`)},
				precheckErr: errSlow, kind: apperr.KindConflict},
		} {
			b.content.set(tc.refErr, tc.precheckErr)
			c := tc.caller
			if c == nil {
				c = b.editor
			}
			_, err := b.svc.Create(t.Context(), c, tc.in)
			requireRefused(t, err, tc.kind, tc.field)
		}
		page, err := b.svc.List(t.Context(), b.viewer, revision.ListInput{})
		require.NoError(t, err)
		require.Empty(t, page.Items)
		require.Zero(t, b.published(t))
	})

	t.Run("PublishOfTheDefaultsContentCreatesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		testfactory.Subscription(t, b.pool, b.admin.Owner(), &testfactory.SubscriptionOpts{EventTypes: []string{"skill.revision_published"}})
		h := b.create(t, b.editor, "n", `{"text":"hi","tags":["a","b"]}`)
		checked := b.content.checks()
		// References are not checked again: nothing new uses them.
		b.content.set(errors.New("must not be asked"), nil)

		for _, makeDefault := range []*bool{nil, ptr(false)} {
			p := b.publish(t, h.ID, `{"tags":["b","a"],  "text":"hi"}`, makeDefault)
			require.False(t, p.Created)
			require.Equal(t, h.DefaultRevisionID, p.Revision.ID)
		}
		require.Equal(t, checked, b.content.checks())
		after := b.get(t, h.ID)
		require.Equal(t, h.Version, after.Version)
		require.Equal(t, h.LatestRevisionNumber, after.LatestRevisionNumber)
		require.Equal(t, []string{"skill.created"}, b.auditActions(t, h.ID))
		require.Equal(t, 1, b.published(t), "only revision 1 was published")
	})

	t.Run("PublishAddsTheNextRevision", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		testfactory.Subscription(t, b.pool, b.admin.Owner(), &testfactory.SubscriptionOpts{EventTypes: []string{"skill.revision_published"}})
		h := b.create(t, b.editor, "n", `{"text":"one"}`)

		two := b.publish(t, h.ID, `{"text":"two"}`, nil)
		require.True(t, two.Created)
		require.EqualValues(t, 2, two.Revision.Number)
		head := b.get(t, h.ID)
		require.Equal(t, two.Revision.ID, head.DefaultRevisionID)
		require.EqualValues(t, 2, head.LatestRevisionNumber)
		require.EqualValues(t, 2, head.Version)

		// Not the default: the head's latest number moves, its default stays.
		three := b.publish(t, h.ID, `{"text":"three"}`, ptr(false))
		require.EqualValues(t, 3, three.Revision.Number)
		head = b.get(t, h.ID)
		require.Equal(t, two.Revision.ID, head.DefaultRevisionID)
		require.EqualValues(t, 3, head.LatestRevisionNumber)
		require.EqualValues(t, 3, head.Version)

		// Identity is judged against the default only: revision 3's content
		// again is a new revision.
		four := b.publish(t, h.ID, `{"text":"three"}`, nil)
		require.True(t, four.Created)
		require.EqualValues(t, 4, four.Revision.Number)
		require.Equal(t, three.Revision.ContentHash, four.Revision.ContentHash)

		require.Equal(t, []string{"skill.created", "skill.revision_published", "skill.revision_published", "skill.revision_published"},
			b.auditActions(t, h.ID))
		require.Equal(t, 4, b.published(t))
	})

	t.Run("PublishIsRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		h := b.create(t, b.editor, "n", `{"text":"one"}`)
		theirs := b.create(t, b.stranger, "theirs", `{"text":"one"}`)

		// Another workspace's head is absent, whatever the body holds.
		for _, cfg := range []string{`{"text":"two"}`, `{}`} {
			_, err := b.svc.Publish(t.Context(), b.editor, revision.PublishInput{HeadID: theirs.ID, Config: json.RawMessage(cfg)})
			requireRefused(t, err, apperr.KindNotFound, "")
		}
		_, err := b.svc.Publish(t.Context(), b.editor, revision.PublishInput{HeadID: h.ID, Config: json.RawMessage(`{}`)})
		requireRefused(t, err, apperr.KindInvalidArgument, "config.text")
		_, err = b.svc.Publish(t.Context(), b.viewer, revision.PublishInput{HeadID: h.ID, Config: json.RawMessage(`{"text":"two"}`)})
		requireRefused(t, err, apperr.KindPermissionDenied, "")

		b.content.set(refcheck.Disabled("config.ref", "it is disabled"), nil)
		_, err = b.svc.Publish(t.Context(), b.editor, revision.PublishInput{HeadID: h.ID, Config: json.RawMessage(`{"text":"two"}`)})
		requireRefused(t, err, apperr.KindDisabled, "config.ref")
		b.content.set(nil, nil)

		_, err = b.svc.Archive(t.Context(), b.editor, h.ID, ptr("*"))
		require.NoError(t, err)
		_, err = b.svc.Publish(t.Context(), b.editor, revision.PublishInput{HeadID: h.ID, Config: json.RawMessage(`{"text":"two"}`)})
		requireRefused(t, err, apperr.KindConflict, "")

		require.EqualValues(t, 1, b.get(t, h.ID).LatestRevisionNumber, "no refused publish wrote a revision")
		_, err = b.svc.Unarchive(t.Context(), b.editor, h.ID, ptr("*"))
		require.NoError(t, err)
		require.True(t, b.publish(t, h.ID, `{"text":"two"}`, nil).Created)
	})

	t.Run("ListRevisionsPagesHighestFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		h := b.create(t, b.editor, "n", `{"text":"1"}`)
		b.publish(t, h.ID, `{"text":"2"}`, nil)
		b.publish(t, h.ID, `{"text":"3"}`, nil)

		var numbers []int32
		var cursor *string
		for pages := 0; ; pages++ {
			require.Less(t, pages, 3)
			page, err := b.svc.ListRevisions(t.Context(), b.viewer, h.ID, ptr(2), cursor)
			require.NoError(t, err)
			for _, r := range page.Items {
				numbers = append(numbers, r.Number)
			}
			if page.NextCursor == nil {
				break
			}
			cursor = page.NextCursor
		}
		require.Equal(t, []int32{3, 2, 1}, numbers)

		_, err := b.svc.ListRevisions(t.Context(), b.viewer, h.ID, nil, ptr("not-a-cursor!"))
		requireRefused(t, err, apperr.KindInvalidArgument, "cursor")
		theirs := b.create(t, b.stranger, "theirs", `{"text":"1"}`)
		_, err = b.svc.ListRevisions(t.Context(), b.viewer, theirs.ID, nil, nil)
		requireRefused(t, err, apperr.KindNotFound, "")
		_, err = b.svc.GetRevision(t.Context(), b.viewer, h.ID, theirs.DefaultRevisionID)
		requireRefused(t, err, apperr.KindNotFound, "")
	})

	t.Run("RunnableIsTheDefaultOrThePin", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		ws := b.editor.WorkspaceID
		h := b.create(t, b.editor, "n", `{"text":"1"}`)
		two := b.publish(t, h.ID, `{"text":"2"}`, ptr(false))
		other := b.create(t, b.editor, "other", `{"text":"1"}`)

		r, err := b.svc.Runnable(ctx, b.pool, ws, h.ID, nil)
		require.NoError(t, err)
		require.Equal(t, "1", r.Config.Text)
		r, err = b.svc.Runnable(ctx, b.pool, ws, h.ID, &two.Revision.ID)
		require.NoError(t, err)
		require.Equal(t, "2", r.Config.Text)

		_, err = b.svc.Runnable(ctx, b.pool, ws, h.ID, &other.DefaultRevisionID)
		requireRefused(t, err, apperr.KindNotFound, "revision_id")
		_, err = b.svc.Runnable(ctx, b.pool, b.stranger.WorkspaceID, h.ID, nil)
		requireRefused(t, err, apperr.KindNotFound, "")
		_, err = b.svc.Archive(ctx, b.editor, h.ID, ptr("*"))
		require.NoError(t, err)
		_, err = b.svc.Runnable(ctx, b.pool, ws, h.ID, nil)
		requireRefused(t, err, apperr.KindConflict, "")
	})

	t.Run("UpdateChangesOnlyWhatDiffers", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		h := b.create(t, b.editor, "n", `{"text":"1"}`)
		two := b.publish(t, h.ID, `{"text":"2"}`, nil) // version 2
		other := b.create(t, b.editor, "other", `{"text":"1"}`)

		_, err := b.svc.Update(ctx, b.editor, revision.UpdateInput{ID: h.ID, Name: ptr("m")})
		requireRefused(t, err, apperr.KindPreconditionRequired, "")
		_, err = b.svc.Update(ctx, b.editor, revision.UpdateInput{ID: h.ID, IfMatch: ptr(h.ETag()), Name: ptr("m")})
		requireRefused(t, err, apperr.KindPreconditionFailed, "")
		_, err = b.svc.Update(ctx, b.editor, revision.UpdateInput{ID: h.ID, IfMatch: ptr("*"), Name: ptr("")})
		requireRefused(t, err, apperr.KindInvalidArgument, "name")
		_, err = b.svc.Update(ctx, b.editor, revision.UpdateInput{ID: h.ID, IfMatch: ptr("*"), DefaultRevisionID: &other.DefaultRevisionID})
		requireRefused(t, err, apperr.KindNotFound, "default_revision_id")
		_, err = b.svc.Update(ctx, b.stranger, revision.UpdateInput{ID: h.ID, IfMatch: ptr("*"), Name: ptr("m")})
		requireRefused(t, err, apperr.KindNotFound, "")

		same, err := b.svc.Update(ctx, b.editor, revision.UpdateInput{ID: h.ID, IfMatch: ptr(`"` + h.ID + `:2"`), Name: ptr("n"),
			Labels: map[string]string{}, DefaultRevisionID: &two.Revision.ID})
		require.NoError(t, err)
		require.EqualValues(t, 2, same.Version, "a change to nothing keeps the version")

		got, err := b.svc.Update(ctx, b.editor, revision.UpdateInput{ID: h.ID, IfMatch: ptr(`"` + h.ID + `:2"`), Name: ptr("renamed"),
			Labels: map[string]string{"env": "prod"}, DefaultRevisionID: &h.DefaultRevisionID})
		require.NoError(t, err)
		require.EqualValues(t, 3, got.Version)
		require.Equal(t, "renamed", got.Name)
		require.Equal(t, map[string]string{"env": "prod"}, got.Labels)
		require.Equal(t, h.DefaultRevisionID, got.DefaultRevisionID, "back to revision 1")
		require.Equal(t, []string{"skill.created", "skill.revision_published", "skill.updated"}, b.auditActions(t, h.ID))
	})

	t.Run("ArchiveIsIdempotentUnarchiveIsNot", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		h := b.create(t, b.editor, "n", `{"text":"1"}`)

		_, err := b.svc.Unarchive(ctx, b.editor, h.ID, ptr("*"))
		requireRefused(t, err, apperr.KindConflict, "")
		a, err := b.svc.Archive(ctx, b.editor, h.ID, ptr(h.ETag()))
		require.NoError(t, err)
		require.True(t, a.Archived())
		require.EqualValues(t, 2, a.Version)
		again, err := b.svc.Archive(ctx, b.editor, h.ID, ptr(a.ETag()))
		require.NoError(t, err)
		require.EqualValues(t, 2, again.Version, "archiving an archived head changes nothing")
		u, err := b.svc.Unarchive(ctx, b.editor, h.ID, ptr(a.ETag()))
		require.NoError(t, err)
		require.False(t, u.Archived())
		require.Equal(t, []string{"skill.created", "skill.archived", "skill.unarchived"}, b.auditActions(t, h.ID))
	})

	t.Run("ListFilters", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		alpha, err := b.svc.Create(ctx, b.editor, revision.CreateInput{Name: "alpha", Description: ptr("Reads mail."),
			Labels: map[string]string{"team": "a"}, Config: json.RawMessage(`{"text":"1"}`)})
		require.NoError(t, err)
		_, err = b.svc.Create(ctx, b.editor, revision.CreateInput{Name: "beta",
			Labels: map[string]string{"team": "b"}, Config: json.RawMessage(`{"text":"1"}`)})
		require.NoError(t, err)
		gamma := b.create(t, b.editor, "gamma", `{"text":"1"}`)
		_, err = b.svc.Archive(ctx, b.editor, gamma.ID, ptr("*"))
		require.NoError(t, err)
		b.create(t, b.stranger, "alpha", `{"text":"1"}`)

		names := func(in revision.ListInput) []string {
			t.Helper()
			page, err := b.svc.List(ctx, b.viewer, in)
			require.NoError(t, err)
			var out []string
			for _, h := range page.Items {
				out = append(out, h.Name)
			}
			return out
		}
		require.Equal(t, []string{"gamma", "beta", "alpha"}, names(revision.ListInput{}), "newest first, this workspace only")
		require.Equal(t, []string{"alpha"}, names(revision.ListInput{Labels: []string{"team:a"}}))
		require.Empty(t, names(revision.ListInput{Labels: []string{"team:a", "team:b"}}))
		require.Equal(t, []string{"alpha"}, names(revision.ListInput{Q: ptr("MAIL")}))
		require.Equal(t, []string{"gamma"}, names(revision.ListInput{Archived: ptr(true)}))
		require.Equal(t, []string{"beta", "alpha"}, names(revision.ListInput{Archived: ptr(false)}))

		first, err := b.svc.List(ctx, b.viewer, revision.ListInput{Limit: ptr(2)})
		require.NoError(t, err)
		require.NotNil(t, first.NextCursor)
		rest, err := b.svc.List(ctx, b.viewer, revision.ListInput{Limit: ptr(2), Cursor: first.NextCursor})
		require.NoError(t, err)
		require.Len(t, rest.Items, 1)
		require.Equal(t, alpha.ID, rest.Items[0].ID)
		require.Nil(t, rest.NextCursor)

		_, err = b.svc.List(ctx, b.viewer, revision.ListInput{Labels: []string{"no-colon"}})
		requireRefused(t, err, apperr.KindInvalidArgument, "")
	})
}
