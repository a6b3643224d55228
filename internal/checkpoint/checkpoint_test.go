package checkpoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/objectstore/objectstoretest"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/testdb"
)

func runID() string { return "run_" + strings.TrimPrefix(id.New("x"), "x_") }

func mustKey(t testing.TB, ws, run, name string) string {
	t.Helper()
	k, err := checkpoint.Key(ws, run, name)
	require.NoError(t, err)
	return k
}

func TestKey(t *testing.T) {
	t.Parallel()
	ws, run := id.New(id.Workspace), runID()
	k, err := checkpoint.Key(ws, run, "000042.ckpt")
	require.NoError(t, err)
	require.Equal(t, "ws/"+ws+"/runs/"+run+"/checkpoints/000042.ckpt", k)
	require.NoError(t, checkpoint.CheckKey(ws, k))
	require.Error(t, checkpoint.CheckKey(id.New(id.Workspace), k), "another workspace's checkpoint")

	for _, bad := range []struct{ ws, run, name string }{
		{ws, "run_x", "a"},              // not a run id
		{ws, strings.ToUpper(run), "a"}, // not a lowercase run id
		{ws, run, "a/b"},                // not one segment
		{ws, run, ".."},                 // traversal
		{ws, run, ""},                   // no name
		{"", run, "a"},                  // no workspace
	} {
		_, err := checkpoint.Key(bad.ws, bad.run, bad.name)
		require.Error(t, err, "%+v", bad)
	}
	for _, key := range []string{
		"ws/" + ws + "/assets/as_01jd5v6w1q3yb8j8y3tn9z2k7h",
		"ws/" + ws + "/runs/" + run + "/displays/d1",
		"ws/" + ws + "/runs/" + run + "/checkpoints/a/b",
		"ws/" + ws + "/runs/" + run + "/checkpoints",
		"ws/" + ws + "/runs/" + run + "/checkpoints/../../assets/x",
		"/ws/" + ws + "/runs/" + run + "/checkpoints/a",
		"skills/x",
	} {
		require.Error(t, checkpoint.CheckKey(ws, key), key)
	}
}

type testBundle struct {
	pool  *pgxpool.Pool
	store objectstore.Store
	ws    string
}

func setup(t *testing.T, store objectstore.Store) *testBundle {
	t.Helper()
	return &testBundle{pool: testdb.New(t), store: store, ws: id.New(id.Workspace)}
}

func fileStore(t *testing.T) *objectstore.FileStore {
	t.Helper()
	s, err := objectstore.OpenFile(filepath.Join(t.TempDir(), "objects"))
	require.NoError(t, err)
	return s
}

func s3Store(t *testing.T) objectstore.Store {
	t.Helper()
	s, err := objectstore.OpenS3(objectstoretest.S3Config(t))
	require.NoError(t, err)
	return s
}

func (b *testBundle) put(t *testing.T, key string) {
	t.Helper()
	_, err := b.store.Put(t.Context(), key, strings.NewReader("state of "+key), -1, objectstore.PutOptions{})
	require.NoError(t, err)
}

func (b *testBundle) exists(t *testing.T, key string) bool {
	t.Helper()
	_, err := b.store.Stat(t.Context(), key)
	if errors.Is(err, objectstore.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// enqueue queues the cleanup of keys as a run would, in a transaction, and
// returns the deliveries written, as the engine would claim them.
func (b *testBundle) enqueue(t *testing.T, keys []string) []outbox.Claimed {
	t.Helper()
	err := dbx.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
		return checkpoint.EnqueueCleanup(ctx, tx, b.ws, keys)
	})
	require.NoError(t, err)
	return b.claimed(t)
}

// claimed reads every checkpoint_cleanup delivery from the outbox table.
func (b *testBundle) claimed(t *testing.T) []outbox.Claimed {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `
		SELECT id, kind, workspace_id, payload, created_at, now() FROM outbox
		WHERE kind = 'checkpoint_cleanup' ORDER BY id`)
	require.NoError(t, err)
	var out []outbox.Claimed
	for rows.Next() {
		c := outbox.Claimed{Attempt: 1}
		var ws *string
		require.NoError(t, rows.Scan(&c.ID, &c.Kind, &ws, &c.Payload, &c.CreatedAt, &c.ClaimedAt))
		require.NotNil(t, ws)
		c.WorkspaceID = *ws
		out = append(out, c)
	}
	require.NoError(t, rows.Err())
	return out
}

func keysOf(t *testing.T, d outbox.Claimed) []string {
	t.Helper()
	var p checkpoint.CleanupPayload
	require.NoError(t, json.Unmarshal(d.Payload, &p))
	return p.Keys
}

func withKeys(t *testing.T, d outbox.Claimed, keys ...string) outbox.Claimed {
	t.Helper()
	raw, err := json.Marshal(checkpoint.CleanupPayload{Keys: keys})
	require.NoError(t, err)
	d.Payload = raw
	return d
}

func requireDelivered(t *testing.T, out outbox.Outcome) {
	t.Helper()
	require.NoError(t, out.Err)
	require.False(t, out.Permanent)
	require.False(t, out.Cancel)
}

// TestCleanerDeletesReplacedCheckpoints runs on both stores: the replaced
// checkpoints go, the current one, another run's and the workspace's assets
// stay, and a repeated delivery is done too.
func TestCleanerDeletesReplacedCheckpoints(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(*testing.T) objectstore.Store{
		"file": func(t *testing.T) objectstore.Store { return fileStore(t) },
		"s3":   s3Store,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, open(t))
			run, other := runID(), runID()
			old1, old2 := mustKey(t, b.ws, run, "000001"), mustKey(t, b.ws, run, "000002")
			current := mustKey(t, b.ws, run, "000003")
			otherRun := mustKey(t, b.ws, other, "000001")
			asset, err := objectstore.Key(b.ws, "assets", id.New(id.Asset))
			require.NoError(t, err)
			for _, k := range []string{old1, old2, current, otherRun, asset} {
				b.put(t, k)
			}
			never := mustKey(t, b.ws, run, "000000") // replaced before it was ever written

			ds := b.enqueue(t, []string{old2, old1, never, old1})
			require.Len(t, ds, 1)
			d := ds[0]
			require.Equal(t, outbox.KindCheckpointCleanup, d.Kind)
			require.Equal(t, b.ws, d.WorkspaceID)
			require.ElementsMatch(t, []string{old1, old2, never}, keysOf(t, d), "duplicates dropped")

			cleaner := checkpoint.NewCleaner(b.store)
			requireDelivered(t, cleaner.Deliver(t.Context(), d))
			require.False(t, b.exists(t, old1))
			require.False(t, b.exists(t, old2))
			for _, k := range []string{current, otherRun, asset} {
				require.True(t, b.exists(t, k), k)
			}
			requireDelivered(t, cleaner.Deliver(t.Context(), d))
		})
	}
}

func TestEnqueueCleanupSplitsLongLists(t *testing.T) {
	t.Parallel()
	b := setup(t, fileStore(t))
	run := runID()
	var keys []string
	for i := range 2*checkpoint.MaxCleanupKeys + 1 {
		keys = append(keys, mustKey(t, b.ws, run, fmt.Sprintf("%06d", i)))
	}
	ds := b.enqueue(t, keys)
	require.Len(t, ds, 3)
	var got []string
	for _, d := range ds {
		require.LessOrEqual(t, len(keysOf(t, d)), checkpoint.MaxCleanupKeys)
		got = append(got, keysOf(t, d)...)
	}
	require.ElementsMatch(t, keys, got)

	require.NoError(t, dbx.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
		return checkpoint.EnqueueCleanup(ctx, tx, b.ws, nil)
	}))
	require.Len(t, b.claimed(t), 3, "no keys, no delivery")
}

func TestEnqueueCleanupRefusesOtherKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, fileStore(t))
	good := mustKey(t, b.ws, runID(), "1")
	asset, err := objectstore.Key(b.ws, "assets", id.New(id.Asset))
	require.NoError(t, err)
	foreign := mustKey(t, id.New(id.Workspace), runID(), "1")
	for _, bad := range []string{asset, foreign} {
		err := dbx.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
			return checkpoint.EnqueueCleanup(ctx, tx, b.ws, []string{good, bad})
		})
		require.ErrorContains(t, err, "is not a checkpoint key")
	}
	require.Empty(t, b.claimed(t))
}

// TestCleanerRefusesWholePayloadsWithOtherKeys: a corrupt row deletes
// nothing, not even its checkpoint keys.
func TestCleanerRefusesWholePayloadsWithOtherKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, fileStore(t))
	run := runID()
	ckpt := mustKey(t, b.ws, run, "1")
	asset, err := objectstore.Key(b.ws, "assets", id.New(id.Asset))
	require.NoError(t, err)
	otherWS := id.New(id.Workspace)
	foreign := mustKey(t, otherWS, runID(), "1")
	for _, k := range []string{ckpt, asset, foreign} {
		b.put(t, k)
	}
	d := b.enqueue(t, []string{ckpt})[0]
	cleaner := checkpoint.NewCleaner(b.store)

	cases := map[string]struct {
		d   outbox.Claimed
		msg string
	}{
		"an asset":                 {withKeys(t, d, ckpt, asset), "is not a checkpoint key"},
		"another workspace's":      {withKeys(t, d, ckpt, foreign), "is not a checkpoint key of workspace"},
		"traversal":                {withKeys(t, d, ckpt, "ws/"+b.ws+"/runs/"+run+"/checkpoints/../../../"+otherWS), "is not a checkpoint key"},
		"no keys":                  {withKeys(t, d), "names no checkpoint keys"},
		"not JSON":                 {func() outbox.Claimed { c := d; c.Payload = []byte(`"keys"`); return c }(), "not a checkpoint cleanup"},
		"the delivery's workspace": {func() outbox.Claimed { c := d; c.WorkspaceID = otherWS; return c }(), "is not a checkpoint key of workspace"},
		"no workspace":             {func() outbox.Claimed { c := d; c.WorkspaceID = ""; return c }(), "is not a checkpoint key of workspace"},
	}
	for name, c := range cases {
		out := cleaner.Deliver(t.Context(), c.d)
		require.True(t, out.Permanent, name)
		require.ErrorContains(t, out.Err, c.msg, name)
	}
	for _, k := range []string{ckpt, asset, foreign} {
		require.True(t, b.exists(t, k), k)
	}
	requireDelivered(t, cleaner.Deliver(t.Context(), d))
	require.False(t, b.exists(t, ckpt))
}

// TestCleanerRetriesStoreFailures: a key the store cannot delete fails the
// attempt (retried later); the next attempt deletes what is left.
func TestCleanerRetriesStoreFailures(t *testing.T) {
	t.Parallel()
	fs := fileStore(t)
	b := setup(t, fs)
	run := runID()
	first, stuck := mustKey(t, b.ws, run, "1"), mustKey(t, b.ws, run, "2")
	b.put(t, first)
	// A directory where the object should be: the file store cannot remove it.
	blocker := filepath.Join(fs.Dir(), filepath.FromSlash(stuck))
	require.NoError(t, os.MkdirAll(filepath.Join(blocker, "x"), 0o750))
	d := b.enqueue(t, []string{first, stuck})[0]
	cleaner := checkpoint.NewCleaner(b.store)

	out := cleaner.Deliver(t.Context(), d)
	require.Error(t, out.Err)
	require.False(t, out.Permanent)
	require.ErrorContains(t, out.Err, "delete checkpoint 2 of 2")
	require.False(t, b.exists(t, first))

	require.NoError(t, os.RemoveAll(blocker))
	requireDelivered(t, cleaner.Deliver(t.Context(), d))
}

func TestCleanerRetriesWhenS3RefusesTheCredentials(t *testing.T) {
	t.Parallel()
	cfg := objectstoretest.S3Config(t)
	good, err := objectstore.OpenS3(cfg)
	require.NoError(t, err)
	b := setup(t, good)
	key := mustKey(t, b.ws, runID(), "1")
	b.put(t, key)
	d := b.enqueue(t, []string{key})[0]

	wrong := cfg
	wrong.SecretAccessKey = "not-the-secret-key"
	bad, err := objectstore.OpenS3(wrong)
	require.NoError(t, err)
	out := checkpoint.NewCleaner(bad).Deliver(t.Context(), d)
	require.Error(t, out.Err)
	require.False(t, out.Permanent)
	require.NotContains(t, out.Err.Error(), "not-the-secret-key")
	require.True(t, b.exists(t, key))

	requireDelivered(t, checkpoint.NewCleaner(good).Deliver(t.Context(), d))
	require.False(t, b.exists(t, key))
}

func TestCleanerReturnsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	b := setup(t, &blockingStore{Store: fileStore(t), entered: make(chan struct{})})
	d := b.enqueue(t, []string{mustKey(t, b.ws, runID(), "1")})[0]
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan outbox.Outcome, 1)
	go func() { done <- checkpoint.NewCleaner(b.store).Deliver(ctx, d) }()
	<-b.store.(*blockingStore).entered
	cancel()
	out := <-done
	require.ErrorIs(t, out.Err, context.Canceled)
	require.False(t, out.Permanent)
}

// blockingStore's Delete waits for its context to end, as a store that does
// not answer would.
type blockingStore struct {
	objectstore.Store
	entered chan struct{}
}

func (s *blockingStore) Delete(ctx context.Context, _ string) error {
	close(s.entered)
	<-ctx.Done()
	return ctx.Err()
}

// BenchmarkCleaner measures one delivery of MaxCleanupKeys existing
// checkpoints on each store (docs/performance.md).
func BenchmarkCleaner(b *testing.B) {
	for name, open := range map[string]func(testing.TB) objectstore.Store{
		"file": func(tb testing.TB) objectstore.Store {
			s, err := objectstore.OpenFile(filepath.Join(tb.TempDir(), "objects"))
			require.NoError(tb, err)
			return s
		},
		"s3": func(tb testing.TB) objectstore.Store {
			s, err := objectstore.OpenS3(objectstoretest.S3Config(tb))
			require.NoError(tb, err)
			return s
		},
	} {
		b.Run(name, func(b *testing.B) {
			store := open(b)
			ws, run := id.New(id.Workspace), runID()
			keys := make([]string, checkpoint.MaxCleanupKeys)
			for i := range keys {
				keys[i] = mustKey(b, ws, run, fmt.Sprintf("%06d", i))
			}
			raw, err := json.Marshal(checkpoint.CleanupPayload{Keys: keys})
			require.NoError(b, err)
			d := outbox.Claimed{ID: id.New(id.Delivery), Kind: outbox.KindCheckpointCleanup, WorkspaceID: ws, Payload: raw, Attempt: 1}
			cleaner := checkpoint.NewCleaner(store)
			for b.Loop() {
				b.StopTimer()
				for _, k := range keys {
					_, err := store.Put(b.Context(), k, strings.NewReader("checkpoint"), -1, objectstore.PutOptions{})
					require.NoError(b, err)
				}
				b.StartTimer()
				out := cleaner.Deliver(b.Context(), d)
				require.NoError(b, out.Err)
			}
		})
	}
}
