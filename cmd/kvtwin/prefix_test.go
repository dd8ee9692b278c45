package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRealBinaryServesPrefixPools builds the kvtwin binary, starts `kvtwin
// serve` with a small per-request token limit, and drives a pool over HTTP:
// create, insert, match, score, stats, the S1 413, delete; then SIGTERM and
// a clean exit.
func TestRealBinaryServesPrefixPools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	base, stop := serveBinary(t, "--prefix-max-request-tokens", "8", "--prefix-max-pools", "2")
	c := &client{t: t, base: base, http: &http.Client{Timeout: 10 * time.Second}}

	c.want("POST", "/v1/prefix/chat", `{"page_size":2,"capacity_tokens":16}`, 201, `"capacity_tokens":16`)
	c.want("POST", "/v1/prefix/chat", `{"page_size":2,"capacity_tokens":16}`, 409, `"type":"ConflictError"`)
	c.want("POST", "/v1/prefix/chat/insert", `{"tokens":[1,2,3,4,5]}`,
		200, `{"prefix_len":0,"inserted_tokens":4,"evicted_tokens":0,"uncached_tail_tokens":1,"slots":[0,1,2,3],"last_node":1}`)
	c.want("POST", "/v1/prefix/chat/match", `{"tokens":[1,2,3,4,6]}`,
		200, `{"matched_tokens":4,"slots":[0,1,2,3],"last_node":1,"locked":false}`)
	c.want("POST", "/v1/prefix:score", `{"tokens":[1,2,3,9]}`, 200, `{"scores":[{"pool":"chat","matched_tokens":2}]}`)
	c.want("GET", "/v1/prefix/chat", "", 200, `"used_tokens":4`)
	c.want("POST", "/v1/prefix/chat/insert", `{"tokens":[1,2,3,4,5,6,7,8,9]}`, 413,
		`{"object":"error","message":"The input (9 tokens) is longer than the model's context length (8 tokens).","type":"PayloadTooLargeError","param":null,"code":413}`)
	c.want("GET", "/metrics", "", 200, `kvtwin_prefix_hit_tokens_total{pool="chat"} 4`)
	c.want("DELETE", "/v1/prefix/chat", "", 200, `{"pool":"chat","deleted":true}`)
	c.want("GET", "/v1/prefix", "", 200, `{"pools":[]}`)
	stop()
}

// client makes requests and checks status and a body fragment.
type client struct {
	t    *testing.T
	base string
	http *http.Client
}

func (c *client) want(method, path, body string, status int, fragment string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewBufferString(body))
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != status || !bytes.Contains(got, []byte(fragment)) {
		c.t.Fatalf("%s %s: %d %s\nwant %d containing %s", method, path, resp.StatusCode, got, status, fragment)
	}
}

// serveBinary builds kvtwin, runs `kvtwin serve` on an ephemeral loopback
// port with extra flags, and returns the base URL and a stop function that
// sends SIGTERM and requires a clean exit. The process is killed at cleanup
// if the test ends first.
func serveBinary(t *testing.T, flags ...string) (string, func()) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kvtwin")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--shutdown-timeout", "10s"}, flags...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	logs := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case logs <- sc.Text():
			default:
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	base := "http://" + listenAddr(t, logs)
	stop := func() {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("kvtwin serve exited with %v after SIGTERM", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("kvtwin serve did not exit within 15s of SIGTERM")
		}
	}
	return base, stop
}
