package run

import (
	"context"
	"fmt"
	"time"

	"github.com/svcdev/svc/gen/db"
)

// TimeLeft answers how much of run runID's time limit (limit from its
// start) is left by the database's clock, the clock its start was recorded
// on: a worker whose own clock is off neither cuts the run short nor lets
// it overrun, and every attempt, on any worker, counts from the same start.
// It is negative once the time is up.
func (s *Service) TimeLeft(ctx context.Context, runID string, limit time.Duration) (time.Duration, error) {
	secs, err := s.q.RunTimeLeft(ctx, s.pool, db.RunTimeLeftParams{ID: runID, TimeoutSeconds: limit.Seconds()})
	if err != nil {
		return 0, fmt.Errorf("read the time left to run %s: %w", runID, err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}
