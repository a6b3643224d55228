package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/sandbox"
)

func TestRunWithStdinFeedsTheCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	input := "first line\nsecond line, no newline"
	res, err := inst.Run(t.Context(), sandbox.Command{Argv: []string{"cat"}, Stdin: []byte(input)})
	require.NoError(t, err)
	require.Equal(t, input, string(res.Stdout))
	require.Zero(t, res.ExitCode)
	require.False(t, res.TimedOut)

	// The exec attaches standard input and is started with the upgrade.
	var cfg wireExec
	require.NoError(t, json.Unmarshal(b.engine.Body("POST /containers/"+inst.ContainerID()+"/exec"), &cfg))
	require.True(t, cfg.AttachStdin && cfg.AttachStdout && cfg.AttachStderr)
	var execID string
	for _, r := range b.engine.Requests() {
		if p, ok := strings.CutPrefix(r, "POST /exec/"); ok {
			execID = strings.TrimSuffix(p, "/start")
		}
	}
	h := b.engine.Header("POST /exec/" + execID + "/start")
	require.Equal(t, "Upgrade", h.Get("Connection"))
	require.Equal(t, "tcp", h.Get("Upgrade"))

	// Without Stdin, nothing changes: no standard input, no upgrade.
	res, err = inst.Run(t.Context(), sandbox.Command{Argv: []string{"sh", "-c", "cat; echo done"}})
	require.NoError(t, err)
	require.Equal(t, "done\n", string(res.Stdout))
	cfg = wireExec{}
	require.NoError(t, json.Unmarshal(b.engine.Body("POST /containers/"+inst.ContainerID()+"/exec"), &cfg))
	require.False(t, cfg.AttachStdin)
	for _, r := range b.engine.Requests() {
		if p, ok := strings.CutPrefix(r, "POST /exec/"); ok {
			execID = strings.TrimSuffix(p, "/start")
		}
	}
	require.Empty(t, b.engine.Header("POST /exec/"+execID+"/start").Get("Upgrade"))
}

func TestRunWithStdinOfFiveMiBCountsItAll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	input := bytes.Repeat([]byte("0123456789abcdef"), 5<<20/16)
	res, err := inst.Run(t.Context(), sandbox.Command{Argv: []string{"wc", "-c"}, Stdin: input})
	require.NoError(t, err)
	require.Equal(t, "5242880", strings.TrimSpace(string(res.Stdout)))
	require.Zero(t, res.ExitCode)
}

func TestRunWithStdinKeepsTheOutputLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	input := bytes.Repeat([]byte("x"), 300_000)
	res, err := inst.Run(t.Context(), sandbox.Command{
		Argv:        []string{"sh", "-c", "tee /dev/stderr"},
		Stdin:       input,
		OutputLimit: 1000,
	})
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("x", 1000), string(res.Stdout))
	require.Equal(t, strings.Repeat("x", 1000), string(res.Stderr))
	require.True(t, res.StdoutTruncated && res.StderrTruncated)
	require.Zero(t, res.ExitCode)
}

func TestRunWithStdinTheCommandWritesBeforeItReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	// Two MB of output before the first byte of input is read: neither side
	// may wait for the other.
	res, err := inst.Run(t.Context(), sandbox.Command{
		Argv:  []string{"sh", "-c", "head -c 2000000 /dev/zero >&2; wc -c"},
		Stdin: bytes.Repeat([]byte("y"), 1<<20),
	})
	require.NoError(t, err)
	require.Equal(t, "1048576", strings.TrimSpace(string(res.Stdout)))
	require.Len(t, res.Stderr, sandbox.DefaultOutputLimit)
	require.True(t, res.StderrTruncated)
}

func TestRunWithStdinTheCommandNeverReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	input := bytes.Repeat([]byte("z"), 1<<20) // more than the socket and pipe buffers hold
	for _, argv := range [][]string{{"true"}, {"sleep", "0.1"}} {
		res, err := inst.Run(t.Context(), sandbox.Command{Argv: argv, Stdin: input, Timeout: 20 * time.Second})
		require.NoError(t, err, argv)
		require.Zero(t, res.ExitCode, argv)
		require.False(t, res.TimedOut, argv)
		require.Empty(t, res.Stdout, argv)
	}
	res, err := inst.Run(t.Context(), sandbox.Command{Argv: []string{"sh", "-c", "echo early; exit 5"}, Stdin: input})
	require.NoError(t, err)
	require.Equal(t, "early\n", string(res.Stdout))
	require.Equal(t, 5, res.ExitCode)
}

func TestRunWithStdinTimesOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	start := time.Now()
	res, err := inst.Run(t.Context(), sandbox.Command{
		Argv:    []string{"sleep", "30"},
		Stdin:   bytes.Repeat([]byte("w"), 1<<20), // the write is still blocked at the time-out
		Timeout: 500 * time.Millisecond,
	})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)
	require.Less(t, time.Since(start), 15*time.Second)
}

func TestRunWithStdinCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"sleep", "30"}, Stdin: []byte("ignored")})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)
}

func TestRunWithEmptyStdinIsEOFAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	start := time.Now()
	res, err := inst.Run(t.Context(), sandbox.Command{
		Argv:    []string{"sh", "-c", `cat; read line; echo "read=$?"`},
		Stdin:   []byte{},
		Timeout: 10 * time.Second,
	})
	require.NoError(t, err)
	require.False(t, res.TimedOut)
	require.Equal(t, "read=1\n", string(res.Stdout))
	require.Zero(t, res.ExitCode)
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestRunWithStdinOnAnEngineThatAnswers200(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.engine.mu.Lock()
	b.engine.noUpgrade = true
	b.engine.mu.Unlock()
	inst, _ := b.open(t)
	res, err := inst.Run(t.Context(), sandbox.Command{Argv: []string{"sh", "-c", "wc -c; echo err >&2; exit 2"}, Stdin: bytes.Repeat([]byte("q"), 100_000)})
	require.NoError(t, err)
	require.Equal(t, "100000", strings.TrimSpace(string(res.Stdout)))
	require.Equal(t, "err\n", string(res.Stderr))
	require.Equal(t, 2, res.ExitCode)
}
