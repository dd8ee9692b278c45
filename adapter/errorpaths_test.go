package adapter_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/adapter"
	"github.com/kvtwin/kvtwin/equiv/mutants"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// This file is the class "every error path of both kits over both
// transports" of issue 30 (item 7) for the Go kit: each way a call can go
// wrong (an unknown op, an input that does not decode, a rejection, a
// kvtwin input error, an unmapped error, a panic, an output that does not
// encode) is answered as docs/adapters.md and the package doc promise, over
// exec and over HTTP, and so is each way a line or a request can fail to be
// a call (not JSON, no positive id, oversized, a wrong route or method).
// The bug zoo's component mutants of the kit (equiv/mutants.Components)
// must each fail the check of their transport.

// testLineBound is the kit's line and body bound in these tests: the
// oversized line below is one byte over it.
const testLineBound = 4096

// errorPathKit registers one op per error path, with the line bound
// lowered to testLineBound.
func errorPathKit() *adapter.Adapter {
	a := adapter.WithLineBound(adapter.New(), testLineBound)
	type n struct {
		N int `json:"n"`
	}
	adapter.Handle(a, "echo", func(in n) (n, error) { return in, nil })
	adapter.Handle(a, "transfer.group_contiguous", func(in spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
		return fast.TransferGroupContiguous(spec.DefaultLimits(), in)
	})
	adapter.Handle(a, "rejects", func(struct{}) (n, error) {
		return n{}, fmt.Errorf("wrapped: %w", &adapter.Reject{Code: "bad_cp_rank", Message: "cp_rank out of range", Field: "cp_rank", Value: 9, Bound: "< 4"})
	})
	adapter.Handle(a, "fails", func(struct{}) (n, error) { return n{}, io.ErrUnexpectedEOF })
	adapter.Handle(a, "panics", func(in n) (n, error) {
		var xs []int
		return n{N: xs[in.N]}, nil
	})
	adapter.Handle(a, "unencodable", func(struct{}) (float64, error) { return math.NaN(), nil })
	return a
}

// errorPathCall is one call and the answer the protocol promises: an
// output, or an error object whose members match (a value ending in "…"
// is a prefix); notImplemented answers 404 over HTTP.
type errorPathCall struct {
	name, op, in string
	out          string
	err          map[string]string
}

// groupErr is fast's own error object for the group input below, which the
// kit must pass on whole (a kvtwin *spec.InputError).
func groupErr() map[string]string {
	_, err := fast.TransferGroupContiguous(spec.DefaultLimits(), spec.TransferGroupContiguousInput{Src: []int64{1, 2, 3}, Dst: []int64{5, 6}})
	o := spec.ErrorObjectOf(err)
	return map[string]string{"code": o.Code, "field": o.Field, "bound": o.Bound, "message": o.Message}
}

func errorPathCalls() []errorPathCall {
	return []errorPathCall{
		{name: "an output", op: "echo", in: `{"n":3}`, out: `{"n":3}`},
		{name: "a Reject, wrapped, with every member", op: "rejects", in: `{}`,
			err: map[string]string{"code": "bad_cp_rank", "field": "cp_rank", "value": "9", "bound": "< 4", "message": "cp_rank out of range"}},
		{name: "a kvtwin input error", op: "transfer.group_contiguous", in: `{"src":[1,2,3],"dst":[5,6]}`, err: groupErr()},
		{name: "an unmapped error", op: "fails", in: `{}`, err: map[string]string{"code": "internal", "message": "unexpected EOF"}},
		{name: "a panic", op: "panics", in: `{"n":3}`, err: map[string]string{"code": "internal", "message": "panic: runtime error: index out of range…"}},
		{name: "an output that does not encode", op: "unencodable", in: `{}`, err: map[string]string{"code": "internal", "message": "output does not encode: …"}},
		{name: "an input that does not decode", op: "echo", in: `{"n":"three"}`, err: map[string]string{"code": "bad_json", "message": "input does not decode as …"}},
		{name: "an op not implemented", op: "no.such_op", in: `{}`, err: map[string]string{"code": "not_implemented", "message": `op "no.such_op" is not implemented by this adapter`}},
	}
}

// checkErrorObject compares an error object with the members want names.
func checkErrorObject(raw json.RawMessage, want map[string]string) error {
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		return fmt.Errorf("error object %s: %v", raw, err)
	}
	for k, w := range want {
		g, ok := got[k]
		if w == "" {
			if ok {
				return fmt.Errorf("error object %s has %s, want none", raw, k)
			}
			continue
		}
		gs := fmt.Sprint(g)
		if p, isPrefix := strings.CutSuffix(w, "…"); isPrefix && strings.HasPrefix(gs, p) || gs == w {
			continue
		}
		return fmt.Errorf("error object %s: %s = %q, want %q", raw, k, gs, w)
	}
	return nil
}

// serveExec is a kit's exec transport: ServeExec or a mutant of it.
type serveExec func(ctx context.Context, r io.Reader, w io.Writer) error

// oversizedLine is a request one byte over the line bound: skipped.
func oversizedLine(id int) string {
	head := fmt.Sprintf(`{"id":%d,"op":"echo","in":{"n":1},"pad":"`, id)
	return head + strings.Repeat("x", testLineBound-len(head)-1) + `"}`
}

// checkExecErrorPaths pipelines every call of errorPathCalls (ids 1..n)
// among lines that are not requests, and requires each call answered once,
// as promised, and nothing else answered.
func checkExecErrorPaths(serve serveExec) error {
	calls := errorPathCalls()
	var lines []string
	notRequests := []string{
		`this is not a request`, `[1,2,3]`, `"a string"`, `{"id":"x","op":"echo","in":{}}`, `{"id":0,"op":"echo","in":{}}`,
		`{"id":-1,"op":"echo","in":{}}`, `{"id":2.5,"op":"echo","in":{}}`, `{"op":"echo","in":{}}`, `{"id":90}`, ``, `   `,
		oversizedLine(91), `{"id":92,"op":"echo","in":{"n":1}`, // the last: a request cut short
	}
	for i, c := range calls {
		lines = append(lines, fmt.Sprintf(`{"id":%d,"op":%q,"in":%s}`, i+1, c.op, c.in))
		if i < len(notRequests) {
			lines = append(lines, notRequests[i])
		}
	}
	lines = append(lines, notRequests[min(len(calls), len(notRequests)):]...)
	lines = append(lines, fmt.Sprintf(`{"id":%d,"op":"echo","in":{"n":7}}`, len(calls)+1)) // after everything: still served
	var out bytes.Buffer
	if err := serve(context.Background(), strings.NewReader(strings.Join(lines, "\n")+"\n"), &out); err != nil {
		return fmt.Errorf("ServeExec: %v (replies so far: %s)", err, out.Bytes())
	}
	replies := map[uint64]json.RawMessage{}
	isErr := map[uint64]bool{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r struct {
			ID  *uint64         `json:"id"`
			Out json.RawMessage `json:"out"`
			Err json.RawMessage `json:"err"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.ID == nil || (r.Out == nil) == (r.Err == nil) {
			return fmt.Errorf("reply %q is not {id, out} or {id, err}", sc.Bytes())
		}
		if _, dup := replies[*r.ID]; dup || *r.ID == 0 || *r.ID > uint64(len(calls)+1) {
			return fmt.Errorf("reply to id %d, which is no call or was answered already: %s", *r.ID, sc.Bytes())
		}
		replies[*r.ID], isErr[*r.ID] = append(r.Out, r.Err...), r.Err != nil
	}
	var errs []error
	for i, c := range append(calls, errorPathCall{name: "the call after every bad line", op: "echo", out: `{"n":7}`}) {
		id := uint64(i + 1)
		got, ok := replies[id]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: no reply to id %d", c.name, id))
		case c.err == nil && (isErr[id] || string(got) != c.out):
			errs = append(errs, fmt.Errorf("%s: reply %s, want out %s", c.name, got, c.out))
		case c.err != nil && !isErr[id]:
			errs = append(errs, fmt.Errorf("%s: reply out %s, want an error object", c.name, got))
		case c.err != nil:
			if err := checkErrorObject(got, c.err); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// checkHTTPErrorPaths posts every call of errorPathCalls, and the requests
// that are no call, to h.
func checkHTTPErrorPaths(h http.Handler) error {
	do := func(method, path string, body io.Reader) (int, []byte) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, body))
		return rec.Code, rec.Body.Bytes()
	}
	var errs []error
	for _, c := range errorPathCalls() {
		status, body := do(http.MethodPost, "/kv/v1/ops/"+c.op, strings.NewReader(c.in))
		wantStatus := http.StatusOK
		switch {
		case c.err == nil:
		case c.err["code"] == adapter.CodeNotImplemented:
			wantStatus = http.StatusNotFound
		default:
			wantStatus = http.StatusBadRequest
		}
		if status != wantStatus {
			errs = append(errs, fmt.Errorf("%s: status %d (%s), want %d", c.name, status, body, wantStatus))
			continue
		}
		if c.err == nil {
			if string(body) != c.out {
				errs = append(errs, fmt.Errorf("%s: body %s, want %s", c.name, body, c.out))
			}
			continue
		}
		var d struct{ Detail json.RawMessage }
		if err := json.Unmarshal(body, &d); err != nil || d.Detail == nil {
			errs = append(errs, fmt.Errorf("%s: body %s is not {\"detail\": error object}", c.name, body))
		} else if err := checkErrorObject(d.Detail, c.err); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	over := io.MultiReader(strings.NewReader(`{"n":`), io.LimitReader(repeatByte('1'), testLineBound), strings.NewReader(`}`))
	for _, r := range []struct {
		name, method, path string
		body               io.Reader
		status             int
		has                string
	}{
		{"the op list", http.MethodGet, "/kv/v1/ops", nil, http.StatusOK, `{"name":"echo"}`},
		{"a body over the bound", http.MethodPost, "/kv/v1/ops/echo", over, http.StatusRequestEntityTooLarge, ""},
		{"an op's route read with GET", http.MethodGet, "/kv/v1/ops/echo", nil, http.StatusMethodNotAllowed, ""},
		{"the op list posted to", http.MethodPost, "/kv/v1/ops", strings.NewReader(`{}`), http.StatusMethodNotAllowed, ""},
		{"a route outside the protocol", http.MethodGet, "/kv/v1/other", nil, http.StatusNotFound, ""},
		{"a route without the prefix", http.MethodPost, "/v1/ops/echo", strings.NewReader(`{"n":1}`), http.StatusNotFound, ""},
	} {
		status, body := do(r.method, r.path, r.body)
		if status != r.status || !bytes.Contains(body, []byte(r.has)) {
			errs = append(errs, fmt.Errorf("%s: %s %s answered %d %.80q, want %d with %q", r.name, r.method, r.path, status, body, r.status, r.has))
		}
	}
	return errors.Join(errs...)
}

// repeatByte is an endless reader of one byte.
type repeatByte byte

func (b repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// goKitExecMutants are the bug zoo's mutants of the Go kit's exec
// transport (killed by TestGoKitErrorPathsOverExec): each wraps ServeExec
// to put one plausible bug back.
func goKitExecMutants(a *adapter.Adapter) map[string]serveExec {
	requestID := regexp.MustCompile(`^\{"id":(-?[0-9.]+),"op":"([^"]+)","in":(.*)\}$`)
	return map[string]serveExec{
		// a line that is not a request is answered, with id 0: a reply
		// kvtwin did not ask for
		"go-kit-answers-lines-that-are-not-requests": func(ctx context.Context, r io.Reader, w io.Writer) error {
			in, _ := io.ReadAll(r)
			for _, l := range strings.Split(string(in), "\n") {
				if l != "" && !strings.HasPrefix(l, `{"id":`) {
					fmt.Fprintln(w, `{"id":0,"err":{"code":"bad_json","message":"not a request"}}`)
				}
			}
			return a.ServeExec(ctx, bytes.NewReader(in), w)
		},
		// id 0 is taken for a request (the kit before issue 30)
		"go-kit-answers-id-zero": func(ctx context.Context, r io.Reader, w io.Writer) error {
			in, _ := io.ReadAll(r)
			for _, l := range strings.Split(string(in), "\n") {
				if m := requestID.FindStringSubmatch(l); m != nil && m[1] == "0" {
					reply := map[string]any{"id": 0}
					if out, eo := a.Call(m[2], json.RawMessage(m[3])); eo != nil {
						reply["err"] = eo
					} else {
						reply["out"] = out
					}
					b, _ := json.Marshal(reply)
					fmt.Fprintf(w, "%s\n", b)
				}
			}
			return a.ServeExec(ctx, bytes.NewReader(in), w)
		},
		// a line over MaxLineBytes ends the serve loop with an error, and
		// every later request goes unanswered (bufio.Scanner's ErrTooLong,
		// the kit before issue 30)
		"go-kit-stops-at-an-oversized-line": func(ctx context.Context, r io.Reader, w io.Writer) error {
			in, _ := io.ReadAll(r)
			var kept []string
			for _, l := range strings.Split(string(in), "\n") {
				if len(l) > testLineBound {
					break
				}
				kept = append(kept, l)
			}
			if err := a.ServeExec(ctx, strings.NewReader(strings.Join(kept, "\n")+"\n"), w); err != nil {
				return err
			}
			return bufio.ErrTooLong
		},
		// a panic is not recovered: the adapter dies at the first one, and
		// the calls after it are never answered
		"go-kit-panic-escapes": func(ctx context.Context, r io.Reader, w io.Writer) error {
			var out bytes.Buffer
			err := a.ServeExec(ctx, r, &out)
			for _, l := range strings.SplitAfter(out.String(), "\n") {
				if strings.Contains(l, `"message":"panic: `) {
					return errors.New("exit status 2")
				}
				io.WriteString(w, l)
			}
			return err
		},
		// an input that does not decode is answered as internal (a failure
		// of the adapter), not bad_json
		"go-kit-bad-input-as-internal": func(ctx context.Context, r io.Reader, w io.Writer) error {
			var out bytes.Buffer
			err := a.ServeExec(ctx, r, &out)
			io.WriteString(w, strings.ReplaceAll(out.String(), `"code":"bad_json"`, `"code":"internal"`))
			return err
		},
	}
}

// goKitHTTPMutants are the bug zoo's mutants of the Go kit's HTTP
// transport (killed by TestGoKitErrorPathsOverHTTP): each wraps Handler to
// put one plausible bug back.
func goKitHTTPMutants(h http.Handler) map[string]http.Handler {
	rewrite := func(f func(status int, body []byte) (int, []byte)) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			status, body := f(rec.Code, rec.Body.Bytes())
			w.WriteHeader(status)
			_, _ = w.Write(body)
		})
	}
	return map[string]http.Handler{
		// an op not implemented is answered as a failure of the call (400,
		// internal), which kvtwin takes for a wrong answer, not for an op
		// the adapter lacks
		"go-kit-http-not-implemented-as-internal": rewrite(func(status int, body []byte) (int, []byte) {
			if status == http.StatusNotFound && bytes.Contains(body, []byte(adapter.CodeNotImplemented)) {
				return http.StatusBadRequest, []byte(`{"detail":{"code":"internal","message":"KeyError"}}`)
			}
			return status, body
		}),
		// a rejection is answered 200 with the error object as the output
		"go-kit-http-rejection-as-output": rewrite(func(status int, body []byte) (int, []byte) {
			if status == http.StatusBadRequest {
				var d struct{ Detail json.RawMessage }
				if json.Unmarshal(body, &d) == nil {
					return http.StatusOK, d.Detail
				}
			}
			return status, body
		}),
		// a panic's error object loses its code: {"detail":{"message":…}}
		"go-kit-http-panic-without-code": rewrite(func(status int, body []byte) (int, []byte) {
			if bytes.Contains(body, []byte(`"message":"panic: `)) {
				body = bytes.Replace(body, []byte(`"code":"internal",`), nil, 1)
			}
			return status, body
		}),
		// a body over the bound is read whole and answered as an input that
		// does not decode
		"go-kit-http-oversized-body-as-bad-request": rewrite(func(status int, body []byte) (int, []byte) {
			if status == http.StatusRequestEntityTooLarge {
				return http.StatusBadRequest, []byte(`{"detail":{"code":"bad_json","message":"input does not decode"}}`)
			}
			return status, body
		}),
	}
}

// TestGoKitErrorPathsOverExec: over exec, every error path of a call is
// answered by id as promised, every line that is not a request (not JSON,
// not an object, no positive integer id, no op, blank, cut short, over
// MaxLineBytes) is skipped without a reply, and the call after all of them
// is still answered; every component mutant of the kit's exec transport
// fails the same check.
func TestGoKitErrorPathsOverExec(t *testing.T) {
	a := errorPathKit()
	if err := checkExecErrorPaths(a.ServeExec); err != nil {
		t.Error(err)
	}
	zoo := goKitExecMutants(a)
	for name, m := range zoo {
		if err := checkExecErrorPaths(m); err == nil {
			t.Errorf("component mutant %s survived", name)
		} else {
			t.Logf("%s killed: %v", name, err)
		}
	}
	requireRegistered(t, "TestGoKitErrorPathsOverExec", slices.Collect(maps.Keys(zoo)))
}

// TestGoKitErrorPathsOverHTTP: over HTTP, every error path of a call gets
// its status (200 output, 400 {"detail": error object}, 404 for an op not
// implemented) and error object, a body over MaxLineBytes 413, a wrong
// method 405 and a route outside the protocol or its prefix 404; every
// component mutant of the kit's HTTP transport fails the same check.
func TestGoKitErrorPathsOverHTTP(t *testing.T) {
	h := errorPathKit().Handler("/kv/")
	if err := checkHTTPErrorPaths(h); err != nil {
		t.Error(err)
	}
	zoo := goKitHTTPMutants(h)
	for name, m := range zoo {
		if err := checkHTTPErrorPaths(m); err == nil {
			t.Errorf("component mutant %s survived", name)
		} else {
			t.Logf("%s killed: %v", name, err)
		}
	}
	requireRegistered(t, "TestGoKitErrorPathsOverHTTP", slices.Collect(maps.Keys(zoo)))
}

// requireRegistered keeps the bug zoo's component table equal to the
// mutants the test named killedBy runs.
func requireRegistered(t *testing.T, killedBy string, names []string) {
	t.Helper()
	var registered []string
	for _, c := range mutants.Components() {
		if c.KilledBy == killedBy {
			registered = append(registered, c.Name)
		}
	}
	slices.Sort(registered)
	slices.Sort(names)
	if !slices.Equal(registered, names) {
		t.Errorf("equiv/mutants.Components lists %v as killed by %s; the test runs %v", registered, killedBy, names)
	}
}
