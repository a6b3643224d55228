package llm

import (
	"strings"
	"testing"
	"time"
)

func TestClean(t *testing.T) {
	long := strings.Repeat("é", 300)
	cases := []struct{ in, key, want string }{
		{"bad key sk-live-abcdef123456 here", "", "bad key [redacted] here"},
		{"key MYKEY-0123456789 echoed, prefix MYKEY-01*** too", "MYKEY-0123456789", "key [redacted] echoed, prefix [redacted]*** too"},
		{"Authorization: Bearer abc.def-123456", "", "Authorization: [redacted]"},
		{"line\nbreak\tand\x00nul", "", "line break and nul"},
	}
	for _, c := range cases {
		if got := clean(c.in, c.key); got != c.want {
			t.Errorf("clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	got := clean(long)
	if !strings.HasSuffix(got, "...") || len(got) > maxMessage+3 || !strings.HasPrefix(got, "éé") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("clean(long) = %q (%d bytes)", got, len(got))
	}
}

func TestBackoffIsBoundedAndJittered(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 10, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	seen := map[time.Duration]bool{}
	for n := 1; n <= 8; n++ {
		want := min(100*time.Millisecond<<(n-1), time.Second)
		for range 50 {
			d := p.backoff(n)
			if d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, d, want/2, want)
			}
			seen[d] = true
		}
	}
	if len(seen) < 10 {
		t.Fatalf("only %d distinct delays: no jitter", len(seen))
	}
}

func TestRetryAfterHeader(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "2": 2 * time.Second, "0.5": 500 * time.Millisecond, "-1": 0, "soon": 0} {
		if got := retryAfter(in); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", in, got, want)
		}
	}
	date := time.Now().Add(30 * time.Second).UTC().Format(http1123)
	if got := retryAfter(date); got < 20*time.Second || got > 31*time.Second {
		t.Errorf("retryAfter(%q) = %v", date, got)
	}
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"
