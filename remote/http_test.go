package remote

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/adapter"
	"github.com/kvtwin/kvtwin/spec"
)

// TestHTTPSpeaksTheGoKitsProtocol runs the HTTP client against the Go kit's
// handler under a prefix: the op list, an output, a rejection, an op not
// implemented.
func TestHTTPSpeaksTheGoKitsProtocol(t *testing.T) {
	a := adapter.New()
	adapter.Handle(a, "transfer.group_contiguous", func(in spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
		if len(in.Src) != len(in.Dst) {
			return spec.TransferGroupContiguousOutput{}, &adapter.Reject{Code: "length_mismatch", Message: "lengths differ"}
		}
		return spec.TransferGroupContiguousOutput{Runs: []spec.Run{{SrcStart: in.Src[0], DstStart: in.Dst[0], Count: 1}}}, nil
	})
	srv := httptest.NewServer(a.Handler("/kv"))
	defer srv.Close()
	r, err := Open(srv.URL+"/kv/", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if ops, err := r.Ops(); err != nil || len(ops) != 1 || ops[0].Name != "transfer.group_contiguous" {
		t.Errorf("Ops() = %v, %v", ops, err)
	}
	res, err := r.Run("transfer.group_contiguous", []byte(`{"src":[4],"dst":[9]}`))
	if err != nil || res.Rejected || string(res.Bytes) != `{"runs":[{"src_start":4,"dst_start":9,"count":1}]}` {
		t.Errorf("ok call = %s %v, %v", res.Bytes, res.Rejected, err)
	}
	res, err = r.Run("transfer.group_contiguous", []byte(`{"src":[4],"dst":[]}`))
	if err != nil || !res.Rejected || !strings.Contains(string(res.Bytes), `"code":"length_mismatch"`) {
		t.Errorf("rejected call = %s %v, %v", res.Bytes, res.Rejected, err)
	}
	if _, err := r.Run("cp.split", []byte(`{}`)); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("unknown op: %v, want ErrNotImplemented", err)
	}
}

// TestHTTPReportsBrokenServersAsTransportErrors: a status the protocol does
// not define, a 400 without a detail object and an oversized body are
// transport errors, not answers.
func TestHTTPReportsBrokenServersAsTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, "/v1/ops/") {
		case "boom":
			http.Error(w, "internal", http.StatusInternalServerError)
		case "nodetail":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"x"}`))
		case "huge":
			_, _ = w.Write([]byte(`{"x":"` + strings.Repeat("y", 4<<10) + `"}`))
		}
	}))
	defer srv.Close()
	r, err := Open(srv.URL, Options{MaxReplyBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for op, want := range map[string]string{"boom": "HTTP 500", "nodetail": "without a detail object", "huge": "exceeds 1024 bytes"} {
		_, err := r.Run(op, []byte(`{}`))
		var te *TransportError
		if !errors.As(err, &te) || !strings.Contains(te.Reason, want) {
			t.Errorf("%s: %v, want a TransportError containing %q", op, err, want)
		}
	}
}

// TestHTTPRetriesAServerThatShedsLoad: 429 with Retry-After is asked again
// until it is answered, not reported as a transport error.
func TestHTTPRetriesAServerThatShedsLoad(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 3 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusTooManyRequests)
			return
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	r, err := Open(srv.URL, Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start := time.Now()
	res, err := r.Run("x", []byte(`{}`))
	if err != nil || string(res.Bytes) != `{"ok":true}` || calls.Load() != 4 {
		t.Errorf("Run = %s, %v after %d calls", res.Bytes, err, calls.Load())
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("three refusals took %s", d)
	}
}
