// Command benchserver is a helper of scripts/bench.sh (`make bench`). It is not
// part of the service.
//
//	benchserver serve [-addr 127.0.0.1:0]
//	    Serves a static {"status":"ok"} JSON body from plain net/http on every
//	    GET path, as the machine's ceiling for a trivial Go HTTP handler. Prints
//	    the address it listens on as the first line of stdout; SIGINT or SIGTERM
//	    stops it.
//
//	benchserver noop
//	    Exits at once: the floor of starting a small Go program, for hyperfine.
//
//	benchserver startup [-n 5] [-interval 5ms] [-timeout 20s] -- CMD [ARG...]
//	    Starts CMD n times, one after the other, each with SVC_SERVER__LISTEN set
//	    to a free loopback port, and polls GET /readyz on it every interval until
//	    the first 200. Prints one line per start on stderr and, on stdout, one
//	    summary line of key=value pairs (milliseconds): median_ms, min_ms, max_ms
//	    (process start to first 200) and startup_ms_median (the "startup_ms" field
//	    of the "svc ready" log line). Each process is stopped with SIGTERM before
//	    the next one starts.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "startup":
		err = startup(os.Args[2:])
	case "noop":
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchserver: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchserver serve [-addr ADDR] | benchserver noop | benchserver startup [-n N] [-interval D] [-timeout D] -- CMD [ARG...]")
	os.Exit(2)
}

// body is what svc's /healthz answers, minus the role: a small JSON object.
var body = []byte("{\"status\":\"ok\"}\n")

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	_ = fs.Parse(args)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	length := strconv.Itoa(len(body))
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Content-Length", length)
			_, _ = w.Write(body)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Println(ln.Addr().String())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutCtx)
}

func startup(args []string) error {
	fs := flag.NewFlagSet("startup", flag.ExitOnError)
	n := fs.Int("n", 5, "number of starts")
	interval := fs.Duration("interval", 5*time.Millisecond, "poll interval")
	timeout := fs.Duration("timeout", 20*time.Second, "time limit of one start")
	_ = fs.Parse(args)
	cmd := fs.Args()
	if len(cmd) == 0 || *n < 1 {
		usage()
	}

	// A signal stops the current child (see startOnce) and then this process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var wall, reported []float64
	for i := 1; i <= *n; i++ {
		w, rep, err := startOnce(ctx, cmd, *interval, *timeout)
		if err != nil {
			return fmt.Errorf("start %d: %w", i, err)
		}
		fmt.Fprintf(os.Stderr, "  start %d: first 200 from /readyz after %.1f ms (startup_ms %.0f)\n", i, w, rep)
		wall = append(wall, w)
		reported = append(reported, rep)
	}
	fmt.Printf("median_ms=%.1f min_ms=%.1f max_ms=%.1f startup_ms_median=%.0f\n",
		median(wall), slices.Min(wall), slices.Max(wall), median(reported))
	return nil
}

// startOnce runs cmd until its /readyz answers 200 and returns the time from
// just before the exec to that answer, and the startup_ms it logged.
func startOnce(ctx context.Context, cmd []string, interval, timeout time.Duration) (wallMS, startupMS float64, err error) {
	addr, err := freeAddr()
	if err != nil {
		return 0, 0, err
	}
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Env = append(os.Environ(), "SVC_SERVER__LISTEN="+addr)
	c.Stdout = io.Discard
	c.SysProcAttr = childAttr()
	stderr, stderrW := io.Pipe()
	c.Stderr = stderrW

	began := time.Now()
	if err := c.Start(); err != nil {
		return 0, 0, err
	}
	exited := make(chan struct{})
	logged := make(chan float64, 1)
	tail := &lastLines{}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			tail.add(sc.Text())
			var rec struct {
				Msg       string   `json:"msg"`
				StartupMS *float64 `json:"startup_ms"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "svc ready" && rec.StartupMS != nil {
				select {
				case logged <- *rec.StartupMS:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr) // keep draining after an over-long line
	}()
	var waitErr error
	go func() {
		waitErr = c.Wait()
		_ = stderrW.Close()
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
			return
		default:
		}
		_ = c.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			<-exited
		}
	}()

	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	url := "http://" + addr + "/readyz"
	deadline := time.After(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				wallMS = float64(time.Since(began).Microseconds()) / 1000
				break
			}
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-exited:
			return 0, 0, fmt.Errorf("%s exited before it was ready (%v); last log lines:\n%s", cmd[0], waitErr, tail)
		case <-deadline:
			return 0, 0, fmt.Errorf("not ready after %s; last log lines:\n%s", timeout, tail)
		case <-time.After(interval):
		}
	}
	select {
	case startupMS = <-logged:
	case <-time.After(2 * time.Second):
		return 0, 0, errors.New(`ready, but no "svc ready" log line with startup_ms (is log.format json?)`)
	}
	return wallMS, startupMS, nil
}

// freeAddr asks the kernel for a free loopback port. Another process could take
// it before the child listens; then the start fails and says so.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// lastLines keeps the last few lines of a child's log for error messages.
type lastLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lastLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	if len(l.lines) > 10 {
		l.lines = l.lines[1:]
	}
}

func (l *lastLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out string
	for _, s := range l.lines {
		out += "    " + s + "\n"
	}
	return out
}
