package docker

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/sandbox"
)

func TestRunReturnsOutputAndExitCode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	res, err := inst.Run(t.Context(), sandbox.Command{
		Argv: []string{"sh", "-c", `printf 'out %s' "$GREETING"; printf err >&2; exit 3`},
		Env:  map[string]string{"GREETING": "hi there"},
	})
	require.NoError(t, err)
	require.Equal(t, "out hi there", string(res.Stdout))
	require.Equal(t, "err", string(res.Stderr))
	require.Equal(t, 3, res.ExitCode)
	require.False(t, res.TimedOut || res.StdoutTruncated || res.StderrTruncated)

	// What the engine was asked: the exec's environment, directory and argv.
	var cfg wireExec
	require.NoError(t, json.Unmarshal(b.engine.Body("POST /containers/"+inst.ContainerID()+"/exec"), &cfg))
	require.Equal(t, DefaultWorkdir, cfg.WorkingDir)
	require.Equal(t, "GREETING=hi there", cfg.Env[0])
	require.True(t, strings.HasPrefix(cfg.Env[1], MarkerVar+"="))
	require.True(t, cfg.AttachStdout && cfg.AttachStderr)

	res, err = inst.Run(t.Context(), sandbox.Command{Argv: []string{"true"}})
	require.NoError(t, err)
	require.Zero(t, res.ExitCode)
	require.Empty(t, res.Stdout)
}

func TestRunOfAMissingProgramIsAFailedCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	res, err := inst.Run(t.Context(), sandbox.Command{Argv: []string{"no-such-program-svc"}})
	require.NoError(t, err, "the engine runs it and reports the failure as the command's")
	require.Equal(t, 127, res.ExitCode)
	require.Contains(t, string(res.Stdout), "executable file not found")
}

func TestRunInASubdirectory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	ctx := t.Context()
	require.NoError(t, inst.WriteFile(ctx, "sub/dir/x.txt", []byte("x")))
	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"ls"}, Dir: "sub/dir"})
	require.NoError(t, err)
	require.Equal(t, "x.txt\n", string(res.Stdout))
	var cfg wireExec
	require.NoError(t, json.Unmarshal(b.engine.Body("POST /containers/"+inst.ContainerID()+"/exec"), &cfg))
	require.Equal(t, DefaultWorkdir+"/sub/dir", cfg.WorkingDir)

	for _, dir := range []string{"..", "../etc", "/etc", "a/../../x", "a\x00b"} {
		_, err := inst.Run(ctx, sandbox.Command{Argv: []string{"true"}, Dir: dir})
		require.ErrorIs(t, err, sandbox.ErrPath, dir)
	}
}

func TestRunRefusesBadCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	ctx := t.Context()
	for name, c := range map[string]sandbox.Command{
		"Empty":     {},
		"EmptyProg": {Argv: []string{""}},
		"NulArg":    {Argv: []string{"echo", "a\x00b"}},
		"EqualsKey": {Argv: []string{"true"}, Env: map[string]string{"A=B": "c"}},
		"Marker":    {Argv: []string{"true"}, Env: map[string]string{MarkerVar: "x"}},
	} {
		_, err := inst.Run(ctx, c)
		require.ErrorIs(t, err, ErrInvalidCommand, name)
	}
}

func TestRunKeepsOnlyTheOutputLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	res, err := inst.Run(t.Context(), sandbox.Command{
		Argv:        []string{"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a; head -c 5000 /dev/zero | tr '\\0' b >&2; printf done"},
		OutputLimit: 1000,
	})
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("a", 1000), string(res.Stdout))
	require.Equal(t, strings.Repeat("b", 1000), string(res.Stderr))
	require.True(t, res.StdoutTruncated && res.StderrTruncated)
	require.Zero(t, res.ExitCode, "the command is never blocked by the limit")
}

func TestRunTimeOutKillsTheCommandAndItsChildren(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	start := time.Now()
	res, err := inst.Run(t.Context(), sandbox.Command{
		Argv:    []string{"sh", "-c", "sleep 60 & echo $$ $!; sleep 60"},
		Timeout: 500 * time.Millisecond,
	})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)
	require.Less(t, time.Since(start), 10*time.Second)
	fields := strings.Fields(string(res.Stdout))
	require.Len(t, fields, 2, "output before the time-out is kept: %q", res.Stdout)
	for _, f := range fields {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		requireGone(t, pid)
	}
}

func TestRunCancelledKillsTheCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(500*time.Millisecond, cancel)
	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "echo $$; sleep 60"}})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, res.TimedOut)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	require.NoError(t, perr, "partial output kept: %q", res.Stdout)
	requireGone(t, pid)
}

// requireGone waits for a process (run by the stand-in on this machine) to end.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) || isZombie(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after the time-out", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func frame(stream byte, payload string) []byte {
	var hdr [8]byte
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	return append(hdr[:], payload...)
}

func TestDemux(t *testing.T) {
	t.Parallel()
	var in bytes.Buffer
	in.Write(frame(1, "out1 "))
	in.Write(frame(2, "err"))
	in.Write(frame(0, "in"))
	in.Write(frame(1, ""))
	in.Write(frame(1, "out2"))
	var out, errOut bytes.Buffer
	require.NoError(t, demux(&in, &out, &errOut))
	require.Equal(t, "out1 inout2", out.String())
	require.Equal(t, "err", errOut.String())

	for name, tc := range map[string]struct {
		stream []byte
		want   string
	}{
		"SystemError": {frame(3, "oci runtime error\n"), "envdocker: exec: the engine reported: oci runtime error"},
		"UnknownType": {frame(7, "x"), "envdocker: read exec output: unknown stream type 7 in the output"},
		"CutPayload":  {frame(1, "abcdef")[:11], "unexpected EOF"},
		"CutHeader":   {frame(1, "abc")[:5], "unexpected EOF"},
	} {
		err := demux(bytes.NewReader(tc.stream), &out, &errOut)
		require.EqualError(t, err, tc.want, name)
	}
}
