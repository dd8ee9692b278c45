package remote

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

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
	tr := &http.Transport{MaxIdleConns: o.Conns, MaxIdleConnsPerHost: o.Conns, MaxConnsPerHost: o.Conns}
	return &httpImpl{base: strings.TrimRight(base, "/"), o: o, client: &http.Client{Timeout: o.Timeout, Transport: tr}}, nil
}

func (h *httpImpl) Name() string { return h.base }

func (h *httpImpl) Close() error {
	h.client.CloseIdleConnections()
	return nil
}

// Ops implements Impl: GET {base}/v1/ops.
func (h *httpImpl) Ops() ([]string, error) {
	resp, err := h.client.Get(h.base + "/v1/ops")
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

// Run implements fixtures.Runner: POST {base}/v1/ops/{op}.
func (h *httpImpl) Run(op string, in []byte) (fixtures.Result, error) {
	resp, err := h.client.Post(h.base+"/v1/ops/"+url.PathEscape(op), "application/json", bytes.NewReader(in))
	if err != nil {
		return fixtures.Result{}, &TransportError{Op: op, Reason: err.Error()}
	}
	body, err := h.read(resp)
	if err != nil {
		return fixtures.Result{}, &TransportError{Op: op, Reason: err.Error()}
	}
	switch resp.StatusCode {
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
	return fixtures.Result{}, &TransportError{Op: op, Reason: fmt.Sprintf("HTTP %d: %.200s", resp.StatusCode, body)}
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
