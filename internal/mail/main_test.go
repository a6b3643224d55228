package mail_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No test leaves a goroutine behind: every SMTP connection is closed however
// its exchange ended.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
