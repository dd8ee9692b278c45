package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRealBinaryServesPrefixPools builds the kvtwin binary, starts `kvtwin
// serve` with a small per-request token limit and memory budget, and drives
// a pool over HTTP: create, insert, match, score, stats, the S1 413, a
// create beyond the budget, delete; then SIGTERM and a clean exit.
func TestRealBinaryServesPrefixPools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	base, stop := serveBinary(t, "--prefix-max-request-tokens", "8", "--prefix-max-pools", "2", "--prefix-max-bytes", "1MiB")
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
	// 1000 one-token pages reserve about 1.5 MB, more than --prefix-max-bytes 1MiB.
	c.want("POST", "/v1/prefix/big", `{"page_size":1,"capacity_tokens":1000}`, 409, `"code":"memory_budget"`)
	c.want("GET", "/metrics", "", 200, "kvtwin_prefix_budget_bytes 1.048576e+06")
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

// TestServeReadsPrefixMaxBytesAsBytesOrABinarySize: --prefix-max-bytes
// takes plain bytes or a spec.ByteSize ("2GiB"); anything else, or less than
// one byte, exits 2 naming the flag before a server starts.
func TestServeReadsPrefixMaxBytesAsBytesOrABinarySize(t *testing.T) {
	for s, want := range map[string]int64{"1": 1, "1048576": 1 << 20, "2GiB": 2 << 30, "1.5KiB": 1536, "3MB": 3 << 20} {
		if got, err := parseByteSize("--prefix-max-bytes", s); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", s, got, err, want)
		}
	}
	for _, bad := range []string{"0", "-1", "lots", "1TiB", ""} {
		code, _, stderr := runCLI(t, "serve", "--addr", "127.0.0.1:0", "--prefix-max-bytes", bad)
		if code != 2 || !strings.Contains(stderr, "--prefix-max-bytes") || !strings.Contains(stderr, "GiB") {
			t.Errorf("--prefix-max-bytes %q: exit %d, %s", bad, code, stderr)
		}
	}
}
