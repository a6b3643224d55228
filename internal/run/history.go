package run

import (
	"context"
	"encoding/json"
	"fmt"
)

// History is the whole conversation of thread threadID, oldest first: what
// a run that has no checkpoint yet starts from (its input is the last
// message).
func (s *Service) History(ctx context.Context, threadID string) ([]Message, error) {
	rows, err := s.q.MessageHistory(ctx, s.pool, threadID)
	if err != nil {
		return nil, fmt.Errorf("read the thread's messages: %w", err)
	}
	out := make([]Message, len(rows))
	for i, r := range rows {
		out[i] = Message{Position: r.Position, RunID: r.RunID, Role: r.Role, Content: r.Content, ToolCallID: r.ToolCallID,
			IsError: r.IsError, CreatedAt: r.CreatedAt}
		if err := json.Unmarshal(r.ToolCalls, &out[i].ToolCalls); err != nil {
			return nil, fmt.Errorf("decode the thread's message %d: %w", r.Position, err)
		}
	}
	return out, nil
}
