package httpapi_test

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/objectstore/objectstoretest"
	"github.com/svcdev/svc/internal/testfactory"
)

// Targets of docs/performance.md ("Asset uploads").
const (
	benchAssetSize     = 100 << 20
	maxUploadExtraMiB  = 64
	minFileStoreMiBps  = 200
	benchAssetChunkLen = 1 << 20
)

// BenchmarkAssetUpload uploads 100 MiB assets through the HTTP API of an
// in-process svc (the real handler chain: authentication, validation, the
// idempotency middleware, the asset service, the object store) over
// loopback, and reports the throughput and how much memory the process took
// beyond what it held before: the peak Go heap (sampled every 2 ms) and the
// peak resident set (VmHWM, reset before the run). The client streams from a
// 1 MiB buffer, so the figures are the server's. It fails when an upload to
// the file store takes more than 64 MiB extra or runs under 200 MiB/s.
//
//	make bench/assets
func BenchmarkAssetUpload(b *testing.B) {
	b.Run("FileStore", func(b *testing.B) { benchUpload(b, nil, true) })
	b.Run("S3", func(b *testing.B) {
		s3 := objectstoretest.S3Config(b)
		benchUpload(b, func(c *config.Config) {
			c.ObjectStore = config.ObjectStore{URL: "s3://" + s3.Bucket, Endpoint: s3.Endpoint, Region: s3.Region,
				AccessKeyID: s3.AccessKeyID, SecretAccessKey: s3.SecretAccessKey, PathStyle: true}
		}, false)
	})
}

func benchUpload(b *testing.B, configure func(*config.Config), enforce bool) {
	h := apitest.Start(b, apitest.Options{Configure: func(c *config.Config) {
		c.Limits.AssetBytes = benchAssetSize
		c.Log.Level = "warn"
		if configure != nil {
			configure(c)
		}
	}})
	admin := testfactory.Bootstrap(b, h.App.Pool)
	chunk := make([]byte, benchAssetChunkLen)
	_, _ = rand.Read(chunk)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	upload := func(i int) {
		req, err := http.NewRequest(http.MethodPost, h.URL+"/api/v1/assets?name=bench-"+strconv.Itoa(i), &repeatReader{chunk: chunk, left: benchAssetSize})
		if err != nil {
			b.Fatal(err)
		}
		req.ContentLength = benchAssetSize
		req.Header.Set("Content-Type", "application/octet-stream")
		req.Header.Set("Authorization", "Bearer "+admin.APIKey)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("upload: %d %s", resp.StatusCode, body)
		}
	}
	upload(-1) // warm up connections, pools and the page cache's directories

	runtime.GC()
	debug.FreeOSMemory()
	heapBefore := heapBytes()
	rssBefore, rssOK := procStatus("VmRSS")
	rssOK = rssOK && resetPeakRSS()
	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if v := heapBytes(); v > peakHeap.Load() {
				peakHeap.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})

	b.SetBytes(benchAssetSize)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		upload(i)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	close(stop)
	wg.Wait()

	mibps := float64(b.N) * benchAssetSize / (1 << 20) / elapsed.Seconds()
	heapExtra := float64(peakHeap.Load()-min(peakHeap.Load(), heapBefore)) / (1 << 20)
	b.ReportMetric(mibps, "MiB/s")
	b.ReportMetric(heapExtra, "peak-heap-extra-MiB")
	if rssOK {
		hwm, _ := procStatus("VmHWM")
		rssExtra := float64(hwm-min(hwm, rssBefore)) / (1 << 20)
		b.ReportMetric(rssExtra, "peak-rss-extra-MiB")
		if enforce && rssExtra > maxUploadExtraMiB {
			b.Errorf("peak resident memory grew by %.1f MiB during 100 MiB uploads; the target is under %d MiB", rssExtra, maxUploadExtraMiB)
		}
	}
	if enforce && heapExtra > maxUploadExtraMiB {
		b.Errorf("the heap grew by %.1f MiB during 100 MiB uploads; the target is under %d MiB", heapExtra, maxUploadExtraMiB)
	}
	if enforce && mibps < minFileStoreMiBps {
		b.Errorf("uploads ran at %.0f MiB/s; the target is at least %d MiB/s", mibps, minFileStoreMiBps)
	}
}

// repeatReader reads left bytes, repeating chunk.
type repeatReader struct {
	chunk []byte
	off   int
	left  int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(int64(len(p)), r.left)], r.chunk[r.off:])
	r.off = (r.off + n) % len(r.chunk)
	r.left -= int64(n)
	return n, nil
}

// heapBytes is the memory of the Go heap now: live and not yet collected
// objects, and free heap the runtime keeps.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}

// procStatus reads a memory line of /proc/self/status, in bytes.
func procStatus(field string) (uint64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		var kb uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// resetPeakRSS starts VmHWM afresh from the current resident set (Linux).
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}
