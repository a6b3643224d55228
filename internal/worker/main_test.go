package worker_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No test leaves a goroutine behind: workers, their attempts and lease
// renewals stop with their test, and the model's and the object store's HTTP
// connections are closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
