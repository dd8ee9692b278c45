package remote

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/kvtwin/kvtwin/fixtures"
)

// httpImpl is an adapter served over HTTP (docs/adapters.md "http://").
type httpImpl struct {
	base   string
	o      Options
	client *http.Client
	brk    *breaker
	calls  atomic.Uint64 // numbers each call's event for the breaker
}

func openHTTP(base string, o Options) (*httpImpl, error) {
	if _, err := url.Parse(base); err != nil {
		return nil, fmt.Errorf("implementation %q: %w", base, err)
	}
	tr := &http.Transport{MaxIdleConns: o.Conns, MaxIdleConnsPerHost: o.Conns, MaxConnsPerHost: o.Conns, TLSClientConfig: o.TLS}
	return &httpImpl{base: strings.TrimRight(base, "/"), o: o, client: &http.Client{Timeout: o.Timeout, Transport: tr}, brk: newBreaker(o.UnavailableAfter)}, nil
}

func (h *httpImpl) Name() string { return h.base }

func (h *httpImpl) Close() error {
	h.client.CloseIdleConnections()
	return nil
}

// Ops implements Impl: GET {base}/v1/ops.
func (h *httpImpl) Ops() ([]Listed, error) {
	resp, err := h.do(http.MethodGet, h.base+"/v1/ops", nil)
	if err != nil {
		return nil, transportError("GET /v1/ops", requestFailure(err))
	}
	body, f := h.read(resp)
	if f != nil {
		return nil, transportError("GET /v1/ops", f)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &TransportError{Op: "GET /v1/ops", Kind: KindStatus, Reason: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, quote(body))}
	}
	return parseOpList(body)
}

// Unavailable implements Impl.
func (h *httpImpl) Unavailable(op string) (string, bool) { return h.brk.unavailable(op) }

// Log implements Impl: an HTTP service has no processes of kvtwin's.
func (h *httpImpl) Log() Log { return Log{} }

// Run implements fixtures.Runner: POST {base}/v1/ops/{op}. Each call is
// an event of its own for the breaker: calls share no process.
func (h *httpImpl) Run(op string, in []byte) (fixtures.Result, error) {
	if err := h.brk.refuse(op); err != nil {
		return fixtures.Result{}, err
	}
	res, err := h.call(op, in)
	h.brk.record(op, h.calls.Add(1), err)
	return res, err
}

// call posts one request. A server that sheds load (429, or 503 with
// Retry-After, as kvtwin serve does) is asked again after a short growing
// delay, until the call's timeout; only then is the refusal a transport
// error.
func (h *httpImpl) call(op string, in []byte) (fixtures.Result, error) {
	deadline := time.Now().Add(h.o.Timeout)
	backoff := 5 * time.Millisecond
	for {
		resp, err := h.do(http.MethodPost, h.base+"/v1/ops/"+url.PathEscape(op), in)
		if err != nil {
			return fixtures.Result{}, transportError(op, requestFailure(err))
		}
		body, f := h.read(resp)
		if f != nil {
			return fixtures.Result{}, transportError(op, f)
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

// result classifies an answer by its status: 200 carries the output, 400
// an error object under "detail", 404 says the op is missing; both bodies
// are checked as every reply is (classify.go).
func (h *httpImpl) result(op string, status int, body []byte) (fixtures.Result, error) {
	switch status {
	case http.StatusOK:
		if f := checkJSON(body, "reply body"); f != nil {
			return fixtures.Result{}, transportError(op, f)
		}
		return answer(op, body, nil)
	case http.StatusBadRequest:
		if f := checkJSON(body, "reply body"); f != nil {
			return fixtures.Result{}, transportError(op, f)
		}
		detail := gjson.GetBytes(body, "detail")
		if !detail.Exists() {
			return fixtures.Result{}, transportError(op, fail(KindMalformed, "HTTP 400 without a detail object: %s", quote(body)))
		}
		return answer(op, nil, []byte(detail.Raw))
	case http.StatusNotFound:
		return fixtures.Result{}, fmt.Errorf("%s: %w", op, ErrNotImplemented)
	}
	return fixtures.Result{}, transportError(op, fail(KindStatus, "HTTP %d: %s", status, quote(body)))
}

// requestFailure classifies a failed request: its timeout, or the service
// gone (refused, reset, closed before a whole response).
func requestFailure(err error) *failure {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fail(KindTimeout, "%v", err)
	}
	return fail(KindExited, "%v", err)
}

// read reads a response body of at most MaxReplyBytes, trimming one
// trailing newline. A body declared longer is refused before a byte of it
// is read; one that turns out longer is refused after MaxReplyBytes+1.
func (h *httpImpl) read(resp *http.Response) ([]byte, *failure) {
	defer resp.Body.Close()
	if resp.ContentLength > h.o.MaxReplyBytes {
		return nil, fail(KindTooLarge, "reply body of %d bytes exceeds %d bytes (--max-reply-bytes)", resp.ContentLength, h.o.MaxReplyBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, h.o.MaxReplyBytes+1))
	if err != nil {
		f := requestFailure(err)
		f.reason = "read reply: " + f.reason
		return nil, f
	}
	if int64(len(body)) > h.o.MaxReplyBytes {
		return nil, fail(KindTooLarge, "reply body exceeds %d bytes (--max-reply-bytes)", h.o.MaxReplyBytes)
	}
	return bytes.TrimSuffix(body, []byte("\n")), nil
}
