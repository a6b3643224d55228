package sweep_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No test leaves a goroutine behind: every sweep runner stops with its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
