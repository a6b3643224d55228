package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/tool"
)

// recordPrefix starts the ids of the records the tools write (`mrec_` and a
// lowercase ULID): 31 characters, within every vendor's id limits.
const recordPrefix = "mrec"

// metadataRunID is the metadata member that names the run that wrote a record.
const metadataRunID = "run_id"

// binding serves the calls of one run's memory tools.
type binding struct {
	ts          *Toolset
	set         memorySet
	workspaceID string
}

type searchArgs struct {
	Memory string `json:"memory"`
	Query  string `json:"query"`
	Limit  *int   `json:"limit"`
}

type readArgs struct {
	Memory string `json:"memory"`
	ID     string `json:"id"`
}

type writeArgs struct {
	Memory   string          `json:"memory"`
	Content  string          `json:"content"`
	Metadata json.RawMessage `json:"metadata"`
}

// searchResult, readResult and writeResult are the successful answers.
type searchResult struct {
	Memory  string   `json:"memory"`
	Records []Record `json:"records"`
}

type readResult struct {
	Memory string `json:"memory"`
	Record
}

type writeResult struct {
	Memory string `json:"memory"`
	ID     string `json:"id"`
}

func (b *binding) search(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var args searchArgs
	if res, ok := tool.Decode(raw, &args); !ok {
		return res, nil
	}
	query := strings.TrimSpace(args.Query)
	limit := DefaultLimit
	if args.Limit != nil {
		limit = *args.Limit
	}
	switch {
	case query == "":
		return tool.Errorf("query is empty; say what to look for"), nil
	case len(query) > MaxQueryBytes:
		return tool.Errorf("query is %d bytes; at most %d are accepted", len(query), MaxQueryBytes), nil
	case strings.ContainsRune(query, 0):
		return tool.Errorf("query holds a NUL character, which memories cannot search for"), nil
	case limit < 1 || limit > MaxLimit:
		return tool.Errorf("limit is %d; it must be between 1 and %d", limit, MaxLimit), nil
	}
	return b.with(ctx, args.Memory, func(ctx context.Context, m memoryInfo, s store) (tool.Result, error) {
		recs, err := s.search(ctx, query, limit)
		if err != nil {
			return tool.Result{}, err
		}
		return tool.JSON(searchResult{Memory: m.ID, Records: recs})
	})
}

func (b *binding) read(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var args readArgs
	if res, ok := tool.Decode(raw, &args); !ok {
		return res, nil
	}
	recordID := strings.TrimSpace(args.ID)
	if !id.HasPrefix(recordID, recordPrefix) {
		return tool.Errorf("%q is not a record id; record ids look like %s_01jd5v6w1q3yb8j8y3tn9z2k7h", recordID, recordPrefix), nil
	}
	return b.with(ctx, args.Memory, func(ctx context.Context, m memoryInfo, s store) (tool.Result, error) {
		rec, found, err := s.read(ctx, recordID)
		if err != nil {
			return tool.Result{}, err
		}
		if !found {
			return tool.Errorf("memory %s has no record %s", m.ID, recordID), nil
		}
		return tool.JSON(readResult{Memory: m.ID, Record: rec})
	})
}

func (b *binding) write(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var args writeArgs
	if res, ok := tool.Decode(raw, &args); !ok {
		return res, nil
	}
	switch {
	case strings.TrimSpace(args.Content) == "":
		return tool.Errorf("content is empty; write what to remember"), nil
	case len(args.Content) > MaxContentBytes:
		return tool.Errorf("content is %d bytes; at most %d are accepted (split it into several records)", len(args.Content), MaxContentBytes), nil
	case strings.ContainsRune(args.Content, 0):
		return tool.Errorf("content holds a NUL character, which memories cannot store"), nil
	}
	meta, msg := metadataFor(args.Metadata, callOptionsFrom(ctx).RunID)
	if msg != "" {
		return tool.Errorf("%s", msg), nil
	}
	rec := Record{ID: id.New(recordPrefix), Content: args.Content, Metadata: meta}
	return b.with(ctx, args.Memory, func(ctx context.Context, m memoryInfo, s store) (tool.Result, error) {
		if err := s.write(ctx, rec); err != nil {
			return tool.Result{}, err
		}
		return tool.JSON(writeResult{Memory: m.ID, ID: rec.ID})
	})
}

// metadataFor checks the model's metadata (absent or null: {}) and returns
// it as compact JSON with run_id set to runID (removed when runID is empty:
// only svc says which run wrote a record). The message explains a refusal.
func metadataFor(raw json.RawMessage, runID string) (json.RawMessage, string) {
	obj := map[string]json.RawMessage{}
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil, "metadata must be a JSON object"
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return nil, "metadata must be a JSON object"
		}
		if compact.Len() > MaxMetadataBytes {
			return nil, fmt.Sprintf("metadata is %d bytes as JSON; at most %d are accepted", compact.Len(), MaxMetadataBytes)
		}
		if bytes.Contains(compact.Bytes(), []byte(`\u0000`)) {
			return nil, "metadata holds a NUL character, which memories cannot store"
		}
	}
	delete(obj, metadataRunID)
	if runID != "" {
		v, _ := json.Marshal(runID)
		obj[metadataRunID] = v
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, "metadata must be a JSON object"
	}
	return b, ""
}

// with resolves the memory the call names, opens its store within the
// toolset's time-out and runs fn; a refusal from any step is the model's
// tool error.
func (b *binding) with(ctx context.Context, memoryArg string, fn func(context.Context, memoryInfo, store) (tool.Result, error)) (tool.Result, error) {
	m, msg := b.set.resolve(strings.TrimSpace(memoryArg))
	if msg != "" {
		return tool.Errorf("%s", msg), nil
	}
	callCtx, cancel := context.WithTimeout(ctx, b.ts.timeout)
	defer cancel()
	res, err := b.run(callCtx, m, fn)
	var r *refusal
	switch {
	case errors.As(err, &r):
		return tool.Errorf("%s", r.msg), nil
	case err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		// The toolset's own time-out, not the run's end.
		return tool.Errorf("memory %s did not answer within %s; try again later", m.ID, b.ts.timeout), nil
	}
	return res, err
}

func (b *binding) run(ctx context.Context, m memoryInfo, fn func(context.Context, memoryInfo, store) (tool.Result, error)) (tool.Result, error) {
	s, err := b.ts.open(ctx, b.workspaceID, m)
	if err != nil {
		return tool.Result{}, err
	}
	return fn(ctx, m, s)
}
