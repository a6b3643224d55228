package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

// Figures of docs/performance.md ("Slow request bodies").
const (
	benchSlowClients = 200
	// benchSlowGiveUp is when a slow client stops waiting for an answer; a
	// connection still open then counts as held for this long.
	benchSlowGiveUp = 60 * time.Second
)

// BenchmarkSlowBodies opens 200 connections without credentials on one `svc
// run --role control` process (a child, as in BenchmarkThreadStreams; set
// BENCH_SVC_BIN to measure another build). Each sends its request head and
// all of its body but the last byte at once, then stalls. It reports how
// long the server holds the connections (until it answers or closes them)
// and how much the process's resident set grows.
//
//   - "KeyedOperation": POST /api/v1/agents with a 1 MiB body (the largest
//     JSON body) and no API key;
//
//   - "InvitationAcceptance": POST /api/v1/invitations/accept, which takes no
//     key, with a 16,000-byte body (under every body limit).
//
//     make bench/bodies
func BenchmarkSlowBodies(b *testing.B) {
	b.Run("KeyedOperation", func(b *testing.B) { benchSlowBodies(b, "/api/v1/agents", 1<<20) })
	b.Run("InvitationAcceptance", func(b *testing.B) { benchSlowBodies(b, "/api/v1/invitations/accept", 16000) })
}

func benchSlowBodies(b *testing.B, path string, length int) {
	for range b.N {
		srv := startSVC(b)
		u, err := url.Parse(srv.url)
		if err != nil {
			b.Fatal(err)
		}
		idle := srv.rss(b)
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: svc.bench\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, length)
		body := append([]byte(`{"name":"`), bytes.Repeat([]byte("x"), length-10)...)

		held := make([]time.Duration, benchSlowClients)
		statuses := make([]string, benchSlowClients)
		var sent, wg sync.WaitGroup
		for i := range benchSlowClients {
			sent.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				held[i], statuses[i] = slowClient(u.Host, head, body, sent.Done)
			}()
		}
		sent.Wait()
		time.Sleep(time.Second)
		loaded := srv.rss(b)
		wg.Wait()
		after := srv.rss(b)
		srv.stop(b)

		slices.Sort(held)
		counts := map[string]int{}
		for _, s := range statuses {
			counts[s]++
		}
		b.Logf("answers: %v", counts)
		b.ReportMetric(held[len(held)/2].Seconds(), "held-p50-s")
		b.ReportMetric(held[len(held)-1].Seconds(), "held-max-s")
		b.ReportMetric(float64(loaded.rss-idle.rss)/1024, "RSS-growth-MiB")
		b.ReportMetric(float64(after.hwm-idle.rss)/1024, "peak-RSS-growth-MiB")
	}
}

// slowClient sends head and all of body but its last byte, calls sent, and
// waits for the server to answer or close the connection, at most
// benchSlowGiveUp. It returns how long the connection was held and the
// answer's status line ("closed" when there was none, "held" when the
// client gave up).
func slowClient(addr, head string, body []byte, sent func()) (time.Duration, string) {
	began := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		sent()
		return 0, "dial: " + err.Error()
	}
	defer c.Close()
	go func() {
		defer sent()
		// The server may answer and close before the body is sent: the
		// write then fails, which is the point.
		_, _ = c.Write([]byte(head))
		_, _ = c.Write(body)
	}()
	_ = c.SetReadDeadline(began.Add(benchSlowGiveUp))
	line := make([]byte, 12)
	n, err := io.ReadFull(c, line)
	switch {
	case n >= 12:
		return time.Since(began), string(line[9:12])
	case err != nil && isTimeout(err):
		return benchSlowGiveUp, "held"
	}
	return time.Since(began), "closed"
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
