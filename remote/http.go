package remote

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/kvtwin/kvtwin/fixtures"
)

// httpImpl is an adapter served over HTTP (docs/adapters.md "http://").
type httpImpl struct {
	base   string
	o      Options
	client *http.Client
}

func openHTTP(base string, o Options) (*httpImpl, error) {
	if _, err := url.Parse(base); err != nil {
		return nil, fmt.Errorf("implementation %q: %w", base, err)
	}
	tr := &http.Transport{MaxIdleConns: o.Conns, MaxIdleConnsPerHost: o.Conns, MaxConnsPerHost: o.Conns, TLSClientConfig: o.TLS}
	return &httpImpl{base: strings.TrimRight(base, "/"), o: o, client: &http.Client{Timeout: o.Timeout, Transport: tr}}, nil
}

func (h *httpImpl) Name() string { return h.base }

func (h *httpImpl) Close() error {
	h.client.CloseIdleConnections()
	return nil
}

// Ops implements Impl: GET {base}/v1/ops.
func (h *httpImpl) Ops() ([]string, error) {
	resp, err := h.do(http.MethodGet, h.base+"/v1/ops", nil)
	if err != nil {
		return nil, &TransportError{Op: "GET /v1/ops", Reason: err.Error()}
	}
	body, err := h.read(resp)
	if err != nil {
		return nil, &TransportError{Op: "GET /v1/ops", Reason: err.Error()}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &TransportError{Op: "GET /v1/ops", Reason: fmt.Sprintf("HTTP %d: %.200s", resp.StatusCode, body)}
	}
	return parseOpList(body)
}

// Run implements fixtures.Runner: POST {base}/v1/ops/{op}. A server that
// sheds load (429, or 503 with Retry-After, as kvtwin serve does) is asked
// again after a short growing delay, until the call's timeout; only then is
// the refusal a transport error.
func (h *httpImpl) Run(op string, in []byte) (fixtures.Result, error) {
	deadline := time.Now().Add(h.o.Timeout)
	backoff := 5 * time.Millisecond
	for {
		resp, err := h.do(http.MethodPost, h.base+"/v1/ops/"+url.PathEscape(op), in)
		if err != nil {
			return fixtures.Result{}, &TransportError{Op: op, Reason: err.Error()}
		}
		body, err := h.read(resp)
		if err != nil {
			return fixtures.Result{}, &TransportError{Op: op, Reason: err.Error()}
		}
		wait, shed := retryAfter(resp, backoff)
		if shed && time.Now().Add(wait).Before(deadline) {
			time.Sleep(wait)
			backoff = min(2*backoff, 500*time.Millisecond)
			continue
		}
		return h.result(op, resp.StatusCode, body)
	}
}

// do sends one request, with the bearer token when Options has one; a
// body is JSON.
func (h *httpImpl) do(method, u string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if h.o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.o.Token)
	}
	return h.client.Do(req)
}

// retryAfter reports whether resp sheds load and how long to wait: the
// backoff, jittered so refused callers do not return together, and never
// longer than the Retry-After the server names (kvtwin serve says 1 s, the
// header's smallest unit, while a slot frees in microseconds).
func retryAfter(resp *http.Response, backoff time.Duration) (time.Duration, bool) {
	ra := resp.Header.Get("Retry-After")
	if resp.StatusCode != http.StatusTooManyRequests && (resp.StatusCode != http.StatusServiceUnavailable || ra == "") {
		return 0, false
	}
	wait := backoff/2 + rand.N(backoff/2+1)
	if secs, err := strconv.Atoi(ra); err == nil && secs >= 0 {
		wait = min(wait, time.Duration(secs)*time.Second)
	}
	return wait, true
}

func (h *httpImpl) result(op string, status int, body []byte) (fixtures.Result, error) {
	switch status {
	case http.StatusOK:
		return fixtures.Result{Bytes: body}, nil
	case http.StatusBadRequest:
		detail := gjson.GetBytes(body, "detail")
		if !detail.IsObject() {
			return fixtures.Result{}, &TransportError{Op: op, Reason: fmt.Sprintf("HTTP 400 without a detail object: %.200s", body)}
		}
		return fixtures.Result{Bytes: []byte(detail.Raw), Rejected: true}, nil
	case http.StatusNotFound:
		return fixtures.Result{}, fmt.Errorf("%s: %w", op, ErrNotImplemented)
	}
	return fixtures.Result{}, &TransportError{Op: op, Reason: fmt.Sprintf("HTTP %d: %.200s", status, body)}
}

// read reads a response body of at most MaxReplyBytes, trimming one
// trailing newline; a longer body is an error and is not read further.
func (h *httpImpl) read(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, h.o.MaxReplyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read reply: %w", err)
	}
	if int64(len(body)) > h.o.MaxReplyBytes {
		return nil, fmt.Errorf("reply exceeds %d bytes", h.o.MaxReplyBytes)
	}
	return bytes.TrimSuffix(body, []byte("\n")), nil
}
