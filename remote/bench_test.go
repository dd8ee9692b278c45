package remote

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"
)

// smallCase is a small transfer.group_contiguous input, the size of most
// generated cases.
var smallCase = []byte(`{"src":[1,2,3,7,8],"dst":[10,11,12,13,14]}`)

// benchRuns pipelines b.N calls through r from 8 goroutines and reports the
// rate in cases/s (docs/perf.md "Adapter transports").
func benchRuns(b *testing.B, r Impl) {
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := r.Run("transfer.group_contiguous", smallCase); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cases/s")
}

// BenchmarkExecPythonExample: the Python kit's example adapter over exec
// (one Python process, so one core).
func BenchmarkExecPythonExample(b *testing.B) {
	r, err := Open("exec:python3 ../adapters/python/example.py", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	benchRuns(b, r)
}

// BenchmarkHTTPPythonExample: the same adapter served over HTTP
// (ThreadingHTTPServer), for the "within 2× of exec" bound.
func BenchmarkHTTPPythonExample(b *testing.B) {
	port, err := freePort()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("python3", "../adapters/python/example.py", "--http", fmt.Sprintf("127.0.0.1:%d", port))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitHTTP(base + "/v1/ops"); err != nil {
		b.Fatal(err)
	}
	r, err := Open(base, Options{Conns: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	benchRuns(b, r)
}

// BenchmarkExecGoEcho is the transport alone: a Go adapter that echoes.
func BenchmarkExecGoEcho(b *testing.B) {
	r, err := Open("exec:env "+roleEnv+"=echo "+os.Args[0], Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	benchRuns(b, r)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitHTTP(url string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer within 10s", url)
}
