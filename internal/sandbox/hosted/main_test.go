package hosted

import (
	"testing"

	"go.uber.org/goleak"
)

// No test leaves a goroutine behind: every driver call, stream and fake
// vendor ends with its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
