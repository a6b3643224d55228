package asset_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/asset"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/objectstore/objectstoretest"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

type testBundle struct {
	pool   *pgxpool.Pool
	store  objectstore.Store
	svc    *asset.Service
	caller *auth.Caller
}

func setup(t *testing.T, store objectstore.Store) *testBundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	if store == nil {
		store = fileStore(t)
	}
	return &testBundle{
		pool: pool, store: store, svc: asset.NewService(pool, store, 16<<20, slog.New(slog.DiscardHandler)),
		caller: &auth.Caller{PrincipalID: admin.PrincipalID, WorkspaceID: admin.WorkspaceID, OrganizationID: admin.OrganizationID, Role: auth.RoleAdmin},
	}
}

func fileStore(t *testing.T) objectstore.Store {
	t.Helper()
	s, err := objectstore.OpenFile(filepath.Join(t.TempDir(), "objects"))
	require.NoError(t, err)
	return s
}

func (b *testBundle) counts(t *testing.T) (assets, uploads int) {
	t.Helper()
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM asset), (SELECT count(*) FROM asset_upload)`).Scan(&assets, &uploads))
	return assets, uploads
}

func (b *testBundle) create(t *testing.T, name string, data []byte, size int64) (asset.Asset, error) {
	t.Helper()
	return b.svc.Create(t.Context(), b.caller, asset.CreateInput{Name: name, ContentType: "application/octet-stream", Size: size, Body: bytes.NewReader(data)})
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	p := make([]byte, n)
	_, err := rand.Read(p)
	require.NoError(t, err)
	return p
}

func readAll(t *testing.T, r io.ReadCloser, err error) []byte {
	t.Helper()
	require.NoError(t, err)
	defer r.Close()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return b
}

// TestServiceOnBothStores runs the life of an asset on the file store and on
// S3, with an upload larger than one S3 part and of unknown size.
func TestServiceOnBothStores(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) objectstore.Store{
		"File": fileStore,
		"S3": func(t *testing.T) objectstore.Store {
			cfg := objectstoretest.S3Config(t)
			cfg.Prefix = "svc"
			s, err := objectstore.OpenS3(cfg)
			require.NoError(t, err)
			return s
		},
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, newStore(t))
			data := randomBytes(t, 9<<20+17)
			a, err := b.create(t, "big.bin", data, -1)
			require.NoError(t, err)
			require.Equal(t, int64(len(data)), a.Size)

			got, err := b.svc.Get(t.Context(), b.caller, a.ID)
			require.NoError(t, err)
			require.Equal(t, a, got)
			r, err := b.svc.Open(t.Context(), got, 0, -1)
			require.True(t, bytes.Equal(data, readAll(t, r, err)))
			r, err = b.svc.Open(t.Context(), got, 8<<20, 100)
			require.Equal(t, data[8<<20:8<<20+100], readAll(t, r, err))

			require.NoError(t, b.svc.Retire(t.Context(), b.caller, a.ID, ptr(a.ETag())))
			got, err = b.svc.Get(t.Context(), b.caller, a.ID)
			require.NoError(t, err)
			require.True(t, got.Retired())
			r, err = b.svc.Open(t.Context(), got, 0, 10)
			require.Equal(t, data[:10], readAll(t, r, err), "retired content stays readable")
		})
	}
}

// TestRequireUsable: the check other packages make before referring to an
// asset, with the field they name.
func TestRequireUsable(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	a, err := b.create(t, "ref.txt", []byte("x"), 1)
	require.NoError(t, err)

	got, err := b.svc.RequireUsable(t.Context(), nil, b.caller, "input.asset_id", a.ID)
	require.NoError(t, err)
	require.Equal(t, a.ID, got.ID)

	other := *b.caller
	other.WorkspaceID = "ws_01jd5v6w1q3yb8j8y3tn9z2k7h"
	for _, c := range []struct {
		caller *auth.Caller
		id     string
	}{{&other, a.ID}, {b.caller, "as_01jd5v6w1q3yb8j8y3tn9z2k7h"}} {
		_, err = b.svc.RequireUsable(t.Context(), nil, c.caller, "input.asset_id", c.id)
		requireField(t, err, apperr.KindNotFound, "input.asset_id")
	}

	// A reference being written holds the asset FOR SHARE: a retire waits
	// for it, so it is either seen or comes after.
	tx, err := b.pool.Begin(t.Context())
	require.NoError(t, err)
	_, err = b.svc.RequireUsable(t.Context(), tx, b.caller, "asset_id", a.ID)
	require.NoError(t, err)
	retired := make(chan error, 1)
	go func() { retired <- b.svc.Retire(context.Background(), b.caller, a.ID, ptr("*")) }()
	select {
	case err := <-retired:
		t.Fatalf("retire did not wait for the referencing transaction: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, tx.Commit(t.Context()))
	require.NoError(t, <-retired)

	_, err = b.svc.RequireUsable(t.Context(), nil, b.caller, "asset_id", a.ID)
	requireField(t, err, apperr.KindConflict, "asset_id")

	viewer := *b.caller
	viewer.Role = auth.RoleViewer
	_, err = b.svc.Create(t.Context(), &viewer, asset.CreateInput{Name: "v", Size: 1, Body: strings.NewReader("x")})
	require.Equal(t, apperr.KindPermissionDenied, apperr.KindOf(err))
}

// TestPurgeStaleUploads: what a dead process left (an upload row and maybe
// its object) is deleted, objects first; young uploads are left alone.
func TestPurgeStaleUploads(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var keys []string
	for i, age := range []string{"7 hours", "7 hours", "1 minute"} {
		id := "as_0000000000000000000000000" + string(rune('a'+i))
		key, err := objectstore.Key(b.caller.WorkspaceID, "assets", id)
		require.NoError(t, err)
		keys = append(keys, key)
		// Uploads started hours ago are written directly: the service starts each at its request.
		_, err = b.pool.Exec(t.Context(), `INSERT INTO asset_upload (id, workspace_id, object_key, created_by_id, started_at) VALUES ($1, $2, $3, $4, now() - $5::interval)`,
			id, b.caller.WorkspaceID, key, b.caller.PrincipalID, age)
		require.NoError(t, err)
		if i != 1 { // the second died before its object was complete
			_, err = b.store.Put(t.Context(), key, strings.NewReader("orphan"), 6, objectstore.PutOptions{})
			require.NoError(t, err)
		}
	}
	n, err := b.svc.PurgeStaleUploads(t.Context(), asset.StaleUploadAge)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	_, err = b.store.Stat(t.Context(), keys[0])
	require.ErrorIs(t, err, objectstore.ErrNotFound)
	_, err = b.store.Stat(t.Context(), keys[2])
	require.NoError(t, err, "a young upload's object stays")
	_, uploads := b.counts(t)
	require.Equal(t, 1, uploads)

	n, err = b.svc.PurgeStaleUploads(t.Context(), asset.StaleUploadAge)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestCreateAfterItsUploadWasPurged: an upload that outlived StaleUploadAge
// (its row purged while it ran) fails when it finishes and leaves nothing.
func TestCreateAfterItsUploadWasPurged(t *testing.T) {
	t.Parallel()
	inner := fileStore(t)
	store := &hookStore{Store: inner}
	b := setup(t, store)
	store.afterPut = func(ctx context.Context) {
		n, err := b.svc.PurgeStaleUploads(ctx, 0)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	_, err := b.create(t, "slow.bin", []byte("content"), 7)
	require.Equal(t, apperr.KindUnavailable, apperr.KindOf(err))
	assets, uploads := b.counts(t)
	require.Zero(t, assets)
	require.Zero(t, uploads)
	require.Zero(t, store.objects(t), "no object left")
}

// TestCreateWhenTheStoreFails: the store's failure is 503; what was written is
// deleted, and when even that fails, the upload row stays for the sweep.
func TestCreateWhenTheStoreFails(t *testing.T) {
	t.Parallel()
	store := &hookStore{Store: fileStore(t), putErr: errors.New("disk on fire")}
	b := setup(t, store)
	_, err := b.create(t, "f", []byte("abc"), 3)
	require.Equal(t, apperr.KindUnavailable, apperr.KindOf(err))
	assets, uploads := b.counts(t)
	require.Zero(t, assets)
	require.Zero(t, uploads)

	// The upload failed (too large) and the store cannot delete what it may
	// hold: the upload row keeps account of the key until the sweep can.
	store.putErr = nil
	store.deleteErr = errors.New("store unreachable")
	b.svc = asset.NewService(b.pool, store, 2, slog.New(slog.DiscardHandler))
	_, err = b.create(t, "f", []byte("abc"), -1)
	require.Equal(t, apperr.KindPayloadTooLarge, apperr.KindOf(err))
	_, uploads = b.counts(t)
	require.Equal(t, 1, uploads, "the upload row stays while its object may exist")

	store.deleteErr = nil
	n, err := b.svc.PurgeStaleUploads(t.Context(), 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, uploads = b.counts(t)
	require.Zero(t, uploads)
	require.Zero(t, store.objects(t))
}

// TestCreateRefusesBeforeStoring: the limit, a bad name or media type are
// refused before anything is written.
func TestCreateRefusesBeforeStoring(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, in := range []asset.CreateInput{
		{Name: "big", Size: 16<<20 + 1, Body: strings.NewReader("")},
		{Name: "", Size: 1, Body: strings.NewReader("x")},
		{Name: "ok", ContentType: "no type", Size: 1, Body: strings.NewReader("x")},
	} {
		_, err := b.svc.Create(t.Context(), b.caller, in)
		require.Error(t, err)
		assets, uploads := b.counts(t)
		require.Zero(t, assets+uploads)
	}
}

// hookStore wraps a store to inject failures and interleavings.
type hookStore struct {
	objectstore.Store
	mu        sync.Mutex
	putErr    error
	deleteErr error
	afterPut  func(ctx context.Context)
}

func (h *hookStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts objectstore.PutOptions) (objectstore.Info, error) {
	h.mu.Lock()
	putErr, after := h.putErr, h.afterPut
	h.mu.Unlock()
	if putErr != nil {
		_, _ = io.Copy(io.Discard, r)
		return objectstore.Info{}, putErr
	}
	info, err := h.Store.Put(ctx, key, r, size, opts)
	if err == nil && after != nil {
		after(ctx)
	}
	return info, err
}

func (h *hookStore) Delete(ctx context.Context, key string) error {
	h.mu.Lock()
	err := h.deleteErr
	h.mu.Unlock()
	if err != nil {
		return err
	}
	return h.Store.Delete(ctx, key)
}

// objects counts the files of the wrapped file store.
func (h *hookStore) objects(t *testing.T) int {
	t.Helper()
	n := 0
	require.NoError(t, filepath.WalkDir(h.Store.(*objectstore.FileStore).Dir(), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	}))
	return n
}

func requireField(t *testing.T, err error, kind apperr.Kind, field string) {
	t.Helper()
	ae, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, kind, ae.Kind, "%v", err)
	require.Len(t, ae.Details, 1)
	require.Equal(t, field, ae.Details[0].Field)
}

func ptr[T any](v T) *T { return &v }
