package memory_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	memorytool "github.com/svcdev/svc/internal/tool/memory"
)

// stand is a memory vendor stand-in under test.
type stand interface {
	Problems() []string
	Paths() []string
	Records(ns string) []fakeRecord
	FailNext(status int)
}

// vendorCase starts a vendor stand-in.
type vendorCase struct {
	typ   string
	start func(t *testing.T) (*httptest.Server, stand)
}

var vendorCases = []vendorCase{
	{"pinecone", func(t *testing.T) (*httptest.Server, stand) { f := startPinecone(t); return f.Server, f }},
	{"turbopuffer", func(t *testing.T) (*httptest.Server, stand) { f := startTurbopuffer(t); return f.Server, f }},
}

func TestRecordMemoriesWriteReadSearch(t *testing.T) {
	t.Parallel()
	for _, vc := range vendorCases {
		t.Run(vc.typ, func(t *testing.T) {
			t.Parallel()
			srv, fake := vc.start(t)
			b := setup(t, srv)
			p := b.memoryProvider(t, vc.typ, srv, vendorKey)
			m := b.recordMemory(t, p, "vectors")
			tools := b.tools(t, b.caller, m.ID)

			// A namespace never written: nothing found, nothing to read.
			none := ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "vectors", "query": "apples"}))
			require.Empty(t, none.Records)
			require.Contains(t, failed(t, call(t, tools[memorytool.ReadTool], "", map[string]any{"memory": "vectors", "id": "mrec_01jd5v6w1q3yb8j8y3tn9z2k7h"})), "has no record")

			apples := write(t, tools, "run_7", "vectors", "Apples grow best in cool climates; apples need pollinators.", map[string]any{"topic": "fruit", "tags": []string{"a", "b"}, "run_id": "forged"})
			pears := write(t, tools, "run_7", m.ID, "Pears ripen off the tree, unlike apples.", nil)
			write(t, tools, "", "vectors", "Tomatoes want full sun.", nil)

			// What the vendor holds: the record's id, its content in the
			// field the vendor indexes, its metadata as one JSON string.
			stored := fake.Records(*m.Namespace)
			require.Len(t, stored, 3)
			require.Equal(t, apples, stored[0].ID)
			require.Equal(t, "Apples grow best in cool climates; apples need pollinators.", stored[0].Fields["content"])
			require.JSONEq(t, `{"run_id":"run_7","tags":["a","b"],"topic":"fruit"}`, stored[0].Fields["metadata"].(string))

			got := ok[readAnswer](t, call(t, tools[memorytool.ReadTool], "", map[string]any{"memory": "vectors", "id": apples}))
			require.Equal(t, m.ID, got.Memory)
			require.Equal(t, apples, got.ID)
			require.Equal(t, "Apples grow best in cool climates; apples need pollinators.", got.Content)
			require.Equal(t, map[string]any{"topic": "fruit", "tags": []any{"a", "b"}, "run_id": "run_7"}, got.Metadata)
			require.Nil(t, got.Score)

			found := ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "vectors", "query": "apples pollinators", "limit": 2}))
			require.Len(t, found.Records, 2)
			require.Equal(t, apples, found.Records[0].ID)
			require.Equal(t, pears, found.Records[1].ID)
			require.Greater(t, *found.Records[0].Score, *found.Records[1].Score)
			require.Equal(t, "Pears ripen off the tree, unlike apples.", found.Records[1].Content)
			require.Equal(t, map[string]any{"run_id": "run_7"}, found.Records[1].Metadata)

			require.Contains(t, failed(t, call(t, tools[memorytool.ReadTool], "", map[string]any{"memory": "vectors", "id": "mrec_01jd5v6w1q3yb8j8y3tn9z2k7h"})), "has no record")
			require.Empty(t, fake.Problems(), "every request spoke the vendor's protocol")
			for _, path := range fake.Paths() {
				require.Contains(t, path, *m.Namespace, "every request names the memory's namespace")
			}
		})
	}
}

func TestRecordMemoryProviderStateIsAToolError(t *testing.T) {
	t.Parallel()
	for _, vc := range vendorCases {
		t.Run(vc.typ, func(t *testing.T) {
			t.Parallel()
			srv, fake := vc.start(t)
			b := setup(t, srv)
			p := b.memoryProvider(t, vc.typ, srv, vendorKey)
			m := b.recordMemory(t, p, "vectors")
			tools := b.tools(t, b.caller, m.ID)
			search := map[string]any{"memory": "vectors", "query": "apples"}

			// Disabled: no call reaches the vendor.
			disabled, etag := false, p.ETag()
			p, err := b.providers.Update(t.Context(), b.caller, catalog.KindMemory, provider.UpdateInput{ID: p.ID, IfMatch: &etag, Enabled: &disabled})
			require.NoError(t, err)
			require.Contains(t, failed(t, call(t, tools[memorytool.SearchTool], "", search)), "memory provider "+p.ID+" is disabled")
			require.Contains(t, failed(t, call(t, tools[memorytool.WriteTool], "", map[string]any{"memory": "vectors", "content": "x"})), "is disabled")
			require.Empty(t, fake.Paths())
			require.Contains(t, b.tools(t, b.caller, m.ID)[memorytool.ReadTool].Def.Description,
				`"vectors" (`+m.ID+`) [unusable for now: its memory provider is disabled]`)

			// Enabled again, with a key the vendor refuses: the key and the
			// vendor's answer stay out of the message.
			enabled := true
			etag = p.ETag()
			_, err = b.providers.Update(t.Context(), b.caller, catalog.KindMemory, provider.UpdateInput{
				ID: p.ID, IfMatch: &etag, Enabled: &enabled, Credential: provider.Set(map[string]any{"api_key": "wrong-key-fedcba9876543210"}),
			})
			require.NoError(t, err)
			msg := failed(t, call(t, tools[memorytool.SearchTool], "", search))
			require.Contains(t, msg, "refused the memory provider's credential (HTTP 401)")
			require.NotContains(t, msg, "wrong-key")
			require.NotContains(t, msg, "nvalid")

			// The stored credential no longer opens (its key left the ring).
			otherRing := filepath.Join(t.TempDir(), "other.json")
			require.NoError(t, keyring.Generate(otherRing))
			ring, err := keyring.Load(otherRing)
			require.NoError(t, err)
			other := memorytool.New(memorytool.Deps{Memories: memory.NewService(b.pool, b.reg, ring), Registry: b.reg, Policy: b.policy, Timeout: callTimeout})
			list, err := other.Tools(t.Context(), b.caller.WorkspaceID, []string{m.ID})
			require.NoError(t, err)
			raw, _ := json.Marshal(search)
			res, err := list[0].Call(t.Context(), raw)
			require.NoError(t, err)
			require.Contains(t, failed(t, res), "credential of its provider "+p.ID+" cannot be opened")
		})
	}
}

func TestRecordMemoryVendorFailuresAreToolErrors(t *testing.T) {
	t.Parallel()
	for _, vc := range vendorCases {
		t.Run(vc.typ, func(t *testing.T) {
			t.Parallel()
			srv, fake := vc.start(t)
			b := setup(t, srv)
			p := b.memoryProvider(t, vc.typ, srv, vendorKey)
			m := b.recordMemory(t, p, "vectors")
			tools := b.tools(t, b.caller, m.ID)
			writeArgs := map[string]any{"memory": "vectors", "content": "remember"}

			fake.FailNext(http.StatusServiceUnavailable)
			require.Contains(t, failed(t, call(t, tools[memorytool.WriteTool], "", writeArgs)), "answered HTTP 503, a server error")
			fake.FailNext(http.StatusTooManyRequests)
			require.Contains(t, failed(t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "vectors", "query": "x"})), "rate limiting")
			require.Empty(t, fake.Records(*m.Namespace))

			start := time.Now()
			fake.FailNext(0)
			msg := failed(t, call(t, tools[memorytool.WriteTool], "", writeArgs))
			require.Contains(t, msg, "within 2s")
			require.Less(t, time.Since(start), callTimeout+time.Second)

			write(t, tools, "", "vectors", "remember", nil)
			require.Len(t, fake.Records(*m.Namespace), 1)
		})
	}
}

func TestRecordMemoriesAreIsolatedByWorkspace(t *testing.T) {
	t.Parallel()
	srv, fake := vendorCases[0].start(t)
	b := setup(t, srv)
	p := b.memoryProvider(t, "pinecone", srv, vendorKey)
	m := b.recordMemory(t, p, "vectors")
	write(t, b.tools(t, b.caller, m.ID), "", "vectors", "the launch code is swordfish", nil)

	other := b.otherWorkspace(t)
	mine := b.builtin(t, other, "notes", "")
	tools := b.tools(t, other, mine.ID, m.ID)
	require.NotContains(t, tools[memorytool.SearchTool].Def.Description, "vectors")
	before := len(fake.Paths())
	require.Contains(t, failed(t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": m.ID, "query": "swordfish"})), "does not exist")
	require.Contains(t, failed(t, call(t, tools[memorytool.WriteTool], "", map[string]any{"memory": m.ID, "content": "x"})), "does not exist")
	require.Len(t, fake.Paths(), before, "no call reached the vendor for another workspace's memory")
}

func TestPineconeIndexWithoutTheContentFieldIsExplained(t *testing.T) {
	t.Parallel()
	f := startPinecone(t)
	// An index whose field_map names another field refuses svc's records as
	// Pinecone does, with 400 and its error object.
	mux := http.NewServeMux()
	mux.HandleFunc("POST /records/namespaces/{ns}/upsert", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusBadRequest, `{"error":{"code":"INVALID_ARGUMENT","message":"Missing field 'chunk_text'"},"status":400}`)
	})
	refusing := httptest.NewServer(mux)
	t.Cleanup(refusing.Close)
	b := setup(t, f.Server, refusing)
	p := b.memoryProvider(t, "pinecone", refusing, vendorKey)
	m := b.recordMemory(t, p, "vectors")
	msg := failed(t, call(t, b.tools(t, b.caller, m.ID)[memorytool.WriteTool], "", map[string]any{"memory": "vectors", "content": "x"}))
	require.Contains(t, msg, `field_map maps text to the field "content"`)
	require.NotContains(t, msg, "chunk_text")
	require.True(t, strings.HasPrefix(msg, "Pinecone refused"), msg)
}
