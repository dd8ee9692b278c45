package main

import (
	"bytes"
	"io"
	"net/http"
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
