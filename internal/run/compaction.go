package run

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svcdev/svc/internal/dbx"
)

// EventContextCompacted reports that a run replaced the thread's older
// messages by a summary in what it sends to the model
// (docs/decisions/0051-context-fitting.md).
const EventContextCompacted = "context.compacted"

// ContextCompactedData is the data of a context.compacted event: the
// summary and the thread positions it replaced (KeptPosition, the run's
// input, stays sent), with the token estimates around it.
type ContextCompactedData struct {
	Strategy           string `json:"strategy"`
	Summary            string `json:"summary"`
	FromPosition       int    `json:"from_position"`
	ThroughPosition    int    `json:"through_position"`
	KeptPosition       *int   `json:"kept_position"`
	ReplacedMessages   int    `json:"replaced_messages"`
	SummarizedMessages int    `json:"summarized_messages"`
	TokensBefore       int    `json:"tokens_before"`
	TokensAfter        int    `json:"tokens_after"`
	SummaryTokens      int    `json:"summary_tokens"`
}

// LatestCompaction answers the data of the thread's newest
// context.compacted event; false when it has none.
func (s *Service) LatestCompaction(ctx context.Context, threadID string) (ContextCompactedData, bool, error) {
	raw, err := s.q.ThreadLatestCompaction(ctx, s.pool, threadID)
	if dbx.IsNotFound(err) {
		return ContextCompactedData{}, false, nil
	}
	if err != nil {
		return ContextCompactedData{}, false, fmt.Errorf("read the thread's latest summary: %w", err)
	}
	var d ContextCompactedData
	if err := json.Unmarshal(raw, &d); err != nil {
		return ContextCompactedData{}, false, fmt.Errorf("decode the thread's latest summary: %w", err)
	}
	return d, true, nil
}
