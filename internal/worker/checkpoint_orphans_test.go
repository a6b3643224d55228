package worker_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/objectstore/objectstoretest"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/tool"
	"github.com/svcdev/svc/internal/worker"
)

// faultStore is a worker's view of the object store that misbehaves once:
// the nth checkpoint it is asked to write (the first when nth is 0) runs
// hook (before or after the write, by the case), and deletes fail when
// failDeletes is set.
type faultStore struct {
	objectstore.Store
	nth         int32
	writes      atomic.Int32
	before      func(ctx context.Context, key string)
	after       func(ctx context.Context, key string)
	failDeletes bool
}

func (s *faultStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts objectstore.PutOptions) (objectstore.Info, error) {
	first := false
	if strings.Contains(key, "/checkpoints/") {
		first = s.writes.Add(1) == max(s.nth, 1)
	}
	if first && s.before != nil {
		s.before(ctx, key)
	}
	info, err := s.Store.Put(ctx, key, r, size, opts)
	if first && err == nil && s.after != nil {
		s.after(ctx, key)
	}
	return info, err
}

func (s *faultStore) Delete(ctx context.Context, key string) error {
	if s.failDeletes {
		return errors.New("the object store is out of reach")
	}
	return s.Store.Delete(ctx, key)
}

// listing lists the keys of a store under a prefix, behind its back.
type listing func(t *testing.T, prefix string) []string

func fileStoreListing(t *testing.T) (objectstore.Store, listing) {
	dir := t.TempDir()
	s, err := objectstore.OpenFile(dir)
	require.NoError(t, err)
	return s, func(t *testing.T, prefix string) []string {
		var out []string
		root := filepath.Join(dir, filepath.FromSlash(prefix))
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !d.IsDir() {
				rel, err := filepath.Rel(dir, p)
				if err != nil {
					return err
				}
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		if !errors.Is(err, os.ErrNotExist) {
			require.NoError(t, err)
		}
		return out
	}
}

func s3StoreListing(t *testing.T) (objectstore.Store, listing) {
	cfg := objectstoretest.S3Config(t)
	s, err := objectstore.OpenS3(cfg)
	require.NoError(t, err)
	c := objectstoretest.Client(t, cfg)
	return s, func(t *testing.T, prefix string) []string {
		var out []string
		for obj := range c.ListObjects(context.Background(), cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			require.NoError(t, obj.Err)
			out = append(out, obj.Key)
		}
		return out
	}
}

// orphanEnv runs a worker whose store is a faultStore over the store under
// test, the lease sweep on demand, and an outbox engine deleting replaced
// checkpoints from the store under test.
type orphanEnv struct {
	*bundle
	runs  *run.Service
	store objectstore.Store
	list  listing
	log   *slog.Logger
}

func newOrphanEnv(t *testing.T, store objectstore.Store, list listing, script []llmtest.Turn) *orphanEnv {
	b := setup(t, script, 3)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The sweep's deletion of an expired attempt's checkpoints waits a
	// lease (a second here) for a worker that may still be writing.
	runs := run.NewService(b.pool, agent.NewService(b.pool, b.reg, refcheck.None{}), skill.NewService(b.pool, refcheck.None{}), b.reg,
		run.Options{MaxAttempts: 3, Lease: time.Second})
	engine := outbox.NewEngine(b.pool, config.Default().Outbox, "test", log, nil)
	engine.Register(outbox.KindCheckpointCleanup, checkpoint.NewCleaner(store))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = engine.Deliver(ctx)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &orphanEnv{bundle: b, runs: runs, store: store, list: list, log: log}
}

// startWorker runs worker name over objects until the test ends.
func (e *orphanEnv) startWorker(t *testing.T, name string, objects objectstore.Store) {
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: e.runs, Objects: objects,
		HTTPClient: e.policy.HTTPClient(0), Toolsets: []tool.Toolset{lookupTool(e.calls)}, Log: e.log}, e.pool, e.reg, e.ring))
	w := worker.New(e.pool, e.runs, exec, worker.Options{ID: name, Slots: 1, Lease: 30 * time.Second, Poll: 50 * time.Millisecond}, e.log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// expireLease takes run runID's lease away as the sweep does once a lease
// lapsed.
func (e *orphanEnv) expireLease(t *testing.T, runID string) {
	_, err := e.pool.Exec(context.Background(), `UPDATE run SET lease_expires_at = now() - interval '1 second' WHERE id = $1 AND lease_expires_at IS NOT NULL`, runID)
	require.NoError(t, err)
	_, err = e.runs.ExpireLeases(context.Background())
	require.NoError(t, err)
}

// settledObjects waits for run runID to end and the outbox to deliver every
// checkpoint cleanup, and answers the run and the objects under its prefix.
func (e *orphanEnv) settledObjects(t *testing.T, runID string) (run.Run, []string) {
	r := e.waitRun(t, runID, 30*time.Second)
	require.Eventually(t, func() bool {
		var pending int
		require.NoError(t, e.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM outbox WHERE kind = 'checkpoint_cleanup' AND status = 'pending'`).Scan(&pending))
		return pending == 0
	}, 20*time.Second, 50*time.Millisecond, "the checkpoint cleanups were not delivered")
	var dead int
	require.NoError(t, e.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM outbox WHERE kind = 'checkpoint_cleanup' AND status <> 'delivered'`).Scan(&dead))
	require.Zero(t, dead, "a checkpoint cleanup was refused")
	var key *string
	require.NoError(t, e.pool.QueryRow(context.Background(), `SELECT checkpoint_key FROM run WHERE id = $1`, runID).Scan(&key))
	objs := e.list(t, "ws/"+r.WorkspaceID+"/runs/"+runID+"/")
	slices.Sort(objs)
	if key != nil {
		require.Equal(t, []string{*key}, objs, "the store holds exactly the run's latest checkpoint")
	} else {
		require.Empty(t, objs, "the run kept no checkpoint, and the store holds none")
	}
	return r, objs
}

// startDoomed starts a run on a worker over store that never comes back
// from writing its nth checkpoint, as a worker that dies between the write
// and the commit, and answers the run once that write is done.
func (e *orphanEnv) startDoomed(t *testing.T, store objectstore.Store, nth int32, input string) run.Run {
	written, dead := make(chan struct{}), make(chan struct{})
	fs := &faultStore{Store: store, nth: nth, after: func(context.Context, string) {
		close(written)
		<-dead
	}}
	e.startWorker(t, "doomed", fs)
	t.Cleanup(func() { close(dead) })
	r, err := e.runs.Start(t.Context(), e.caller, run.StartInput{AgentID: e.agentID, Input: input})
	require.NoError(t, err)
	select {
	case <-written:
	case <-time.After(20 * time.Second):
		t.Fatalf("the doomed worker did not write checkpoint %d", nth)
	}
	return r
}

// cleanups counts the checkpoint_cleanup deliveries of workspace
// workspaceID.
func (e *orphanEnv) cleanups(t *testing.T, workspaceID string) int {
	var n int
	require.NoError(t, e.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM outbox WHERE kind = 'checkpoint_cleanup' AND workspace_id = $1`, workspaceID).Scan(&n))
	return n
}

// TestNoOrphanedCheckpoints: whatever makes a step's commit fail, once the
// run ended and the outbox delivered, the object store holds the run's
// latest checkpoint and nothing else of it (none if it kept none), on the
// file store and on a real S3 server.
func TestNoOrphanedCheckpoints(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) (objectstore.Store, listing){"file": fileStoreListing, "s3": s3StoreListing}
	for storeName, open := range stores {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()

			// The lease is lost (the sweep ended the attempt) while the
			// worker writes its first checkpoint, and the worker cannot
			// delete the object its refused commit leaves: the sweep's
			// cleanup, due a lease later, does.
			t.Run("lease lost and the worker's delete fails", func(t *testing.T) {
				t.Parallel()
				store, list := open(t)
				e := newOrphanEnv(t, store, list, toolScript)
				var runID string
				ready := make(chan struct{})
				fs := &faultStore{Store: store, failDeletes: true, before: func(context.Context, string) {
					<-ready
					e.expireLease(t, runID)
				}}
				e.startWorker(t, "w1", fs)
				r, err := e.runs.Start(t.Context(), e.caller, run.StartInput{AgentID: e.agentID, Input: "How long are banana and fig?"})
				require.NoError(t, err)
				runID = r.ID
				close(ready)
				got, objs := e.settledObjects(t, r.ID)
				require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
				require.Len(t, objs, 1)
				require.Contains(t, objs[0], "/a0002-slot0.json", "the second attempt's last checkpoint")
			})

			// Every commit fails with a database error: each of the run's
			// attempts ends (charged) after writing a checkpoint nothing
			// recorded, and the run fails with its attempts used up.
			t.Run("database error", func(t *testing.T) {
				t.Parallel()
				store, list := open(t)
				e := newOrphanEnv(t, store, list, toolScript)
				_, err := e.pool.Exec(t.Context(), `
					CREATE FUNCTION refuse_assistant() RETURNS trigger LANGUAGE plpgsql AS $$
					BEGIN RAISE EXCEPTION 'disk full'; END $$;
					CREATE TRIGGER refuse_assistant BEFORE INSERT ON thread_message
					FOR EACH ROW WHEN (NEW.role = 'assistant') EXECUTE FUNCTION refuse_assistant();`)
				require.NoError(t, err)
				e.startWorker(t, "w1", store)
				r, err := e.runs.Start(t.Context(), e.caller, run.StartInput{AgentID: e.agentID, Input: "How long are banana and fig?"})
				require.NoError(t, err)
				got, _ := e.settledObjects(t, r.ID)
				require.Equal(t, run.StatusFailed, got.Status)
				require.Equal(t, run.ErrCodeAttemptsExhausted, got.Error.Code)
			})

			// The worker dies between writing a checkpoint and recording
			// it (here: it never comes back from the write); its lease
			// lapses, the sweep ends its attempt, and another worker
			// finishes the run.
			t.Run("worker killed after the write", func(t *testing.T) {
				t.Parallel()
				store, list := open(t)
				e := newOrphanEnv(t, store, list, toolScript)
				r := e.startDoomed(t, store, 1, "How long are banana and fig?")
				e.expireLease(t, r.ID)
				e.startWorker(t, "w2", store)
				got, objs := e.settledObjects(t, r.ID)
				require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
				require.Len(t, objs, 1)
				require.Contains(t, objs[0], "/a0002-slot0.json")
			})

			// A run of five steps in one attempt writes its checkpoints
			// under two names, each over the one of two steps before: its
			// steps queue no deletion, its end queues one (the other
			// name's), and the store keeps the last step's.
			t.Run("five steps", func(t *testing.T) {
				t.Parallel()
				store, list := open(t)
				e := newOrphanEnv(t, store, list, stepScript(5))
				e.startWorker(t, "w1", store)
				r, err := e.runs.Start(t.Context(), e.caller, run.StartInput{AgentID: e.agentID, Input: "Look five words up."})
				require.NoError(t, err)
				got, objs := e.settledObjects(t, r.ID)
				require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
				require.Equal(t, int32(5), got.Step)
				require.Len(t, objs, 1)
				require.Contains(t, objs[0], "/a0001-slot1.json", "the fifth step's checkpoint")
				require.Equal(t, 1, e.cleanups(t, r.WorkspaceID), "one deletion for the run, queued by its attempt's end")
			})

			// The worker dies after writing its fourth checkpoint, when it
			// has written both of its names and recorded three steps: the
			// sweep's cleanup takes what the first attempt left but the
			// run's checkpoint, the second attempt's first step replaces
			// that, and its end deletes its other name.
			t.Run("worker killed after both names were written", func(t *testing.T) {
				t.Parallel()
				store, list := open(t)
				e := newOrphanEnv(t, store, list, stepScript(5))
				r := e.startDoomed(t, store, 4, "Look five words up.")
				var step int32
				require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT step FROM run WHERE id = $1`, r.ID).Scan(&step))
				require.Equal(t, int32(3), step, "the fourth step is written, not recorded")
				e.expireLease(t, r.ID)
				e.startWorker(t, "w2", store)
				got, objs := e.settledObjects(t, r.ID)
				require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
				require.Len(t, objs, 1)
				require.Contains(t, objs[0], "/a0002-slot1.json", "the second attempt's fifth step")
			})

			// The run is cancelled between the write of a checkpoint and
			// its commit, which the cancel cuts short: whether it took
			// place is unknown to the worker, and the run ends cancelled.
			t.Run("cancelled between the write and the commit", func(t *testing.T) {
				t.Parallel()
				store, list := open(t)
				e := newOrphanEnv(t, store, list, toolScript)
				var runID string
				ready := make(chan struct{})
				fs := &faultStore{Store: store, after: func(ctx context.Context, _ string) {
					<-ready
					_, err := e.runs.Cancel(context.Background(), e.caller, runID)
					require.NoError(t, err)
					<-ctx.Done()
				}}
				e.startWorker(t, "w1", fs)
				r, err := e.runs.Start(t.Context(), e.caller, run.StartInput{AgentID: e.agentID, Input: "How long are banana and fig?"})
				require.NoError(t, err)
				runID = r.ID
				close(ready)
				got, _ := e.settledObjects(t, r.ID)
				require.Equal(t, run.StatusCancelled, got.Status)
			})
		})
	}
}
