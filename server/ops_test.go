package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// canonical runs the catalog entry in-process, as fixtures.Local does.
func canonical(t *testing.T, op string, impl catalog.Impl, in string) ([]byte, error) {
	t.Helper()
	e, ok := catalog.Lookup(op)
	if !ok {
		t.Fatalf("no op %s", op)
	}
	return e.Run(impl, spec.DefaultLimits(), []byte(in))
}

func TestListOpsIsTheCatalogInOrderWithRunnableExamples(t *testing.T) {
	ts, _ := start(t, nil)
	r := get(t, ts, "/v1/ops")
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/ops: %d %s", r.status, r.body)
	}
	var got []struct {
		Name    string          `json:"name"`
		Spec    string          `json:"spec"`
		Doc     string          `json:"doc"`
		Impls   []catalog.Impl  `json:"impls"`
		Example json.RawMessage `json:"example"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	all := catalog.All()
	if len(got) != len(all) {
		t.Fatalf("%d ops listed, catalog has %d", len(got), len(all))
	}
	for i, e := range all {
		g := got[i]
		if g.Name != e.Name() || g.Spec != e.Spec() || g.Doc != e.Doc() || !slices.Equal(g.Impls, e.Impls()) {
			t.Errorf("op %d: listed %+v, catalog has %s %q %q %v", i, g, e.Name(), e.Spec(), e.Doc(), e.Impls())
		}
		if !bytes.Equal(g.Example, e.Example()) {
			t.Errorf("%s: example %s, catalog's %s", e.Name(), g.Example, e.Example())
		}
		if run := post(t, ts, "/v1/ops/"+g.Name, string(g.Example)); run.status != http.StatusOK {
			t.Errorf("%s: its own example answers %d: %s", g.Name, run.status, run.body)
		}
	}
}

func TestOpAnswersExactlyTheCanonicalOutputAndANewline(t *testing.T) {
	ts, logs := start(t, nil)
	in := `{"kv":[40,41,42,43,44],"chunk_page_start":8,"cp_rank":1,"cp_size":2}`
	for _, tc := range []struct {
		query string
		impl  catalog.Impl
	}{{"", catalog.Fast}, {"?impl=ref", catalog.Ref}, {"?impl=fast", catalog.Fast}} {
		want, err := canonical(t, filterOp, tc.impl, in)
		if err != nil {
			t.Fatal(err)
		}
		r := post(t, ts, "/v1/ops/"+filterOp+tc.query, in)
		if r.status != http.StatusOK || !bytes.Equal(r.body, append(want, '\n')) {
			t.Errorf("%q: %d %q, want 200 %q", tc.query, r.status, r.body, append(want, '\n'))
		}
	}
	if logs.find(t, "DEBUG", "op served") == nil {
		t.Error("a success is not logged at DEBUG")
	}
}

func TestBadInputIs400NamingTheFieldAndBoundWithTheCanonicalErrorAsDetail(t *testing.T) {
	ts, logs := start(t, nil)
	for _, tc := range []struct {
		name, in, field, bound string
	}{
		{"rank out of range", `{"kv":[1,2],"chunk_page_start":0,"cp_rank":5,"cp_size":2}`, "cp_rank", "in [0, cp_size=2)"},
		{"negative page", `{"kv":[1,-2],"chunk_page_start":0,"cp_rank":0,"cp_size":1}`, "kv[1]", ">= 0"},
		{"unknown field", `{"kv":[],"cp_size":1,"bogus":true}`, "bogus", "a field of the op's input"},
		{"wrong type", `{"kv":"pages","cp_size":1}`, "kv", "a JSON []int64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, q := range []string{"", "?impl=ref"} {
				r := post(t, ts, "/v1/ops/"+filterOp+q, tc.in)
				e := openAIError(t, r, http.StatusBadRequest, "BadRequestError")
				if param(e) != tc.field || !strings.Contains(e.Message, tc.field) || !strings.Contains(e.Message, tc.bound) {
					t.Errorf("%q: param %s, message %q; want param %s and a message naming it and %q", q, param(e), e.Message, tc.field, tc.bound)
				}
				want, err := canonical(t, filterOp, catalog.Fast, tc.in)
				if _, ok := spec.AsInputError(err); !ok {
					t.Fatalf("in-process run did not reject: %v", err)
				}
				if got := gjson.GetBytes(r.body, "detail").Raw; got != string(want) {
					t.Errorf("%q: detail %s, want the canonical error object %s", q, got, want)
				}
			}
		})
	}
	if logs.find(t, "WARN", "request failed") == nil {
		t.Error("a rejected request is not logged at WARN")
	}
}

func TestNonObjectBodiesAreRejectedBeforeAnyOpDecodesThem(t *testing.T) {
	runs := &atomic.Int64{}
	ts, _ := start(t, func(c *server.Config) {
		c.Entries = []catalog.Entry{countingEntry{Entry: catalog.TransferFilterCPRank(), runs: runs}}
	})
	before := runs.Load()
	for _, tc := range []struct{ body, value string }{
		{"", "not valid JSON"},
		{"kv=1", "not valid JSON"},
		{`{"kv":[1,2}`, "not valid JSON"},
		{`{} {}`, "not valid JSON"},
		{`[{"kv":[]}]`, "array"},
		{`"kv"`, "string"},
		{`42`, "number"},
		{`true`, "boolean"},
		{`null`, "null"},
	} {
		r := post(t, ts, "/v1/ops/"+filterOp, tc.body)
		e := openAIError(t, r, http.StatusBadRequest, "BadRequestError")
		detail := gjson.GetBytes(r.body, "detail")
		if param(e) != "$" || detail.Get("code").String() != "bad_json" || detail.Get("field").String() != "$" ||
			!strings.HasPrefix(detail.Get("value").String(), tc.value) || detail.Get("bound").String() != "a JSON object" {
			t.Errorf("body %q: param %s, detail %s; want bad_json at $ with value %q", tc.body, param(e), detail.Raw, tc.value)
		}
	}
	if n := runs.Load() - before; n != 0 {
		t.Errorf("the op ran %d times on bodies the pre-check must refuse", n)
	}
}

func TestUnknownOpAndUnknownRouteAre404(t *testing.T) {
	ts, _ := start(t, nil)
	e := openAIError(t, post(t, ts, "/v1/ops/transfer.no_such_op", `{}`), http.StatusNotFound, "NotFoundError")
	if !strings.Contains(e.Message, "transfer.no_such_op") || e.Param != nil {
		t.Errorf("unknown op: %+v; want a message naming it and a null param", e)
	}
	openAIError(t, get(t, ts, "/v2/ops"), http.StatusNotFound, "NotFoundError")
	openAIError(t, get(t, ts, "/"), http.StatusNotFound, "NotFoundError")
}

func TestWrongMethodIs405WithTheAllowedMethod(t *testing.T) {
	ts, _ := start(t, nil)
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodGet, "/v1/ops/" + filterOp, "POST"},
		{http.MethodPut, "/v1/ops/" + filterOp, "POST"},
		{http.MethodPost, "/v1/ops", "GET"},
		{http.MethodDelete, "/healthz", "GET"},
		{http.MethodPost, "/readyz", "GET"},
		{http.MethodPost, "/metrics", "GET"},
	} {
		r := do(t, ts, tc.method, tc.path, "")
		openAIError(t, r, http.StatusMethodNotAllowed, "MethodNotAllowedError")
		if got := r.header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
}

func TestBodyOverMaxBodyBytesIs413NamingTheLimit(t *testing.T) {
	ts, _ := start(t, func(c *server.Config) { c.MaxBodyBytes = 64 })
	big := fmt.Sprintf(`{"kv":[%s1],"cp_size":1}`, strings.Repeat("1,", 40))
	fits := `{"kv":[1,2,3],"cp_size":1}`
	if r := post(t, ts, "/v1/ops/"+filterOp, fits); r.status != http.StatusOK {
		t.Fatalf("a body under the limit: %d %s", r.status, r.body)
	}
	declared := post(t, ts, "/v1/ops/"+filterOp, big)
	// Without a Content-Length the limit must still hold while reading.
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/ops/"+filterOp, struct{ *strings.Reader }{strings.NewReader(big)})
	req.ContentLength = -1
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var streamedBody bytes.Buffer
	_, _ = streamedBody.ReadFrom(resp.Body)
	resp.Body.Close()
	streamed := response{status: resp.StatusCode, header: resp.Header, body: streamedBody.Bytes()}
	for name, r := range map[string]response{"declared length": declared, "chunked": streamed} {
		e := openAIError(t, r, http.StatusRequestEntityTooLarge, "PayloadTooLargeError")
		if !strings.Contains(e.Message, "MaxBodyBytes (64 bytes)") {
			t.Errorf("%s: message %q does not name the limit", name, e.Message)
		}
	}
}

func TestImplQueryIsValidatedAndNeverFallsBack(t *testing.T) {
	ts, _ := start(t, nil)
	in := `{"kv":[1],"cp_size":1}`
	e := openAIError(t, post(t, ts, "/v1/ops/"+filterOp+"?impl=gpu", in), http.StatusBadRequest, "BadRequestError")
	if param(e) != "impl" || !strings.Contains(e.Message, `"gpu"`) || !strings.Contains(e.Message, "ref, fast or cuda") {
		t.Errorf("unknown impl: %+v", e)
	}
	entry, _ := catalog.Lookup(filterOp)
	if slices.Contains(entry.Impls(), catalog.CUDA) {
		t.Skip("built with a cuda twin: no unavailable implementation to request")
	}
	e = openAIError(t, post(t, ts, "/v1/ops/"+filterOp+"?impl=cuda", in), http.StatusBadRequest, "BadRequestError")
	if param(e) != "impl" || !strings.Contains(e.Message, "-tags cuda") || !strings.Contains(e.Message, "never falls back") {
		t.Errorf("cuda in a non-cuda build: %+v; want a 400 on impl saying why", e)
	}
}

func TestUnknownRepeatedOrMalformedQueryParametersAre400(t *testing.T) {
	ts, _ := start(t, nil)
	in := `{"kv":[1],"cp_size":1}`
	for _, tc := range []struct{ query, param, says string }{
		{"?imp=ref", "imp", `unknown query parameter "imp"`},
		{"?impl=ref&impl=fast", "impl", "given 2 times"},
		{"?compare=maybe", "compare", `compare = "maybe"`},
		{"?compare=1&impl=ref", "impl", "impl is ref"},
		{"?impl=%zz", "<null>", "malformed query"},
	} {
		e := openAIError(t, post(t, ts, "/v1/ops/"+filterOp+tc.query, in), http.StatusBadRequest, "BadRequestError")
		if param(e) != tc.param || !strings.Contains(e.Message, tc.says) {
			t.Errorf("%s: param %s, message %q; want param %s and %q", tc.query, param(e), e.Message, tc.param, tc.says)
		}
	}
}

func TestCompareAnswersBothCanonicalResultsRefFirstAndTheVerdict(t *testing.T) {
	ts, _ := start(t, func(c *server.Config) { c.Entries = append(catalog.All(), disagreeOp()) })
	for _, tc := range []struct {
		name, op, in string
		equal        bool
	}{
		{"accepted", filterOp, `{"kv":[40,41,42,43,44],"chunk_page_start":8,"cp_rank":1,"cp_size":2}`, true},
		{"rejected by both", filterOp, `{"kv":[1],"cp_rank":3,"cp_size":2}`, true},
		{"undecodable", filterOp, `{"kv":[1],"nope":1}`, true},
		{"fast disagrees", "test.disagree", `{"n":41}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, ts, "/v1/ops/"+tc.op+"?compare=1", tc.in)
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.body)
			}
			e, _ := catalog.Lookup(tc.op)
			if e == nil {
				e = disagreeOp()
			}
			refOut, _ := e.Run(catalog.Ref, spec.DefaultLimits(), []byte(tc.in))
			fastOut, _ := e.Run(catalog.Fast, spec.DefaultLimits(), []byte(tc.in))
			want := fmt.Sprintf(`{"op":%q,"results":{"ref":%s,"fast":%s},"equal":%t}`+"\n", tc.op, refOut, fastOut, tc.equal)
			if string(r.body) != want {
				t.Errorf("got  %s\nwant %s", r.body, want)
			}
		})
	}
}

func TestAPanickingOpIsRecoveredAs500LoggedAndCounted(t *testing.T) {
	ts, logs := start(t, func(c *server.Config) { c.Entries = []catalog.Entry{panicOp()} })
	e := openAIError(t, post(t, ts, "/v1/ops/test.panic", `{"n":1}`), http.StatusInternalServerError, "InternalServerError")
	if strings.Contains(e.Message, "boom") {
		t.Errorf("the panic value leaks to the client: %q", e.Message)
	}
	rec := logs.find(t, "WARN", "panic recovered")
	if rec == nil {
		t.Fatal("the panic is not logged at WARN")
	}
	if !strings.Contains(fmt.Sprint(rec["panic"]), "boom") || !strings.Contains(fmt.Sprint(rec["stack"]), "panicOp") {
		t.Errorf("the panic log lacks the value or the stack: %v", rec)
	}
	if n := metric(t, ts, "kvtwin_recovered_panics_total"); n != 1 {
		t.Errorf("recovered panics %v, want 1", n)
	}
	if n := metric(t, ts, "kvtwin_op_requests_in_flight"); n != 0 {
		t.Errorf("the panicked request still holds its concurrency slot (in flight %v)", n)
	}
	if n := metric(t, ts, `kvtwin_op_requests_total{code="500",impl="fast",op="test.panic"}`); n != 1 {
		t.Errorf("the panicked request is counted %v times as a 500, want 1", n)
	}
	if r := post(t, ts, "/v1/ops/test.panic?impl=ref", `{"n":7}`); r.status != http.StatusOK || string(r.body) != `{"n":7}`+"\n" {
		t.Errorf("the server does not serve on after a panic: %d %s", r.status, r.body)
	}
}

func TestAnInternalOpErrorIs500WithItsCanonicalErrorObject(t *testing.T) {
	ts, _ := start(t, func(c *server.Config) { c.Entries = []catalog.Entry{brokenOp()} })
	r := post(t, ts, "/v1/ops/test.broken", `{"n":1}`)
	e := openAIError(t, r, http.StatusInternalServerError, "InternalServerError")
	if !strings.Contains(e.Message, "disk on fire") || gjson.GetBytes(r.body, "detail.code").String() != "internal" {
		t.Errorf("internal error: %s", r.body)
	}
}

func TestOverMaxConcurrentIs429AndTheSlotIsReturned(t *testing.T) {
	g := newGate()
	defer g.open()
	ts, _ := start(t, func(c *server.Config) {
		c.MaxConcurrent = 1
		c.Entries = []catalog.Entry{blockingOp(g), testOp("test.id", identity, identity)}
	})
	first := make(chan response, 1)
	go func() { first <- postNoFatal(ts.Client(), ts.URL+"/v1/ops/test.block", `{"n":1}`) }()
	<-g.started
	if n := metric(t, ts, "kvtwin_op_requests_in_flight"); n != 1 {
		t.Errorf("in-flight gauge %v with one op running, want 1", n)
	}
	r := post(t, ts, "/v1/ops/test.id", `{"n":2}`)
	e := openAIError(t, r, http.StatusTooManyRequests, "RateLimitError")
	if !strings.Contains(e.Message, "MaxConcurrent is 1") || r.header.Get("Retry-After") == "" {
		t.Errorf("429: %q, Retry-After %q; want the limit named and a Retry-After", e.Message, r.header.Get("Retry-After"))
	}
	g.open()
	if f := <-first; f.status != http.StatusOK {
		t.Fatalf("the request holding the slot: %d %s", f.status, f.body)
	}
	if r := post(t, ts, "/v1/ops/test.id", `{"n":3}`); r.status != http.StatusOK {
		t.Errorf("the slot is not returned: %d %s", r.status, r.body)
	}
	if n := metric(t, ts, "kvtwin_op_requests_in_flight"); n != 0 {
		t.Errorf("in-flight gauge %v when idle, want 0", n)
	}
}

// postNoFatal posts from a goroutine other than the test's, where t.Fatal is not allowed.
func postNoFatal(c *http.Client, url, body string) response {
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return response{status: -1, body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b.Bytes()}
}

func TestMetricsCountOpRequestsByOpImplAndCodeWithBoundedLabels(t *testing.T) {
	ts, _ := start(t, nil)
	ok := `{"kv":[1],"cp_size":1}`
	post(t, ts, "/v1/ops/"+filterOp, ok)
	post(t, ts, "/v1/ops/"+filterOp+"?impl=ref", ok)
	post(t, ts, "/v1/ops/"+filterOp+"?compare=1", ok)
	post(t, ts, "/v1/ops/"+filterOp, `{"cp_size":0}`)
	post(t, ts, "/v1/ops/made.up.name", ok)
	post(t, ts, "/v1/ops/"+filterOp+"?impl=made-up", ok)
	for series, want := range map[string]float64{
		`kvtwin_op_requests_total{code="200",impl="fast",op="transfer.filter_cp_rank"}`:      1,
		`kvtwin_op_requests_total{code="200",impl="ref",op="transfer.filter_cp_rank"}`:       1,
		`kvtwin_op_requests_total{code="200",impl="ref+fast",op="transfer.filter_cp_rank"}`:  1,
		`kvtwin_op_requests_total{code="400",impl="fast",op="transfer.filter_cp_rank"}`:      1,
		`kvtwin_op_requests_total{code="404",impl="invalid",op="unknown"}`:                   1,
		`kvtwin_op_requests_total{code="400",impl="invalid",op="transfer.filter_cp_rank"}`:   1,
		`kvtwin_op_request_duration_seconds_count{impl="fast",op="transfer.filter_cp_rank"}`: 2,
		`kvtwin_op_requests_in_flight`:  0,
		`kvtwin_recovered_panics_total`: 0,
	} {
		if got := metric(t, ts, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	body := string(get(t, ts, "/metrics").body)
	if strings.Contains(body, "made.up.name") || strings.Contains(body, "made-up") {
		t.Error("a client-chosen name became a metric label")
	}
}

func TestHealthzAnswersWhileTheProcessIsAlive(t *testing.T) {
	ts, _ := start(t, nil)
	r := get(t, ts, "/healthz")
	if r.status != http.StatusOK || string(r.body) != `{"status":"ok"}`+"\n" {
		t.Errorf("/healthz: %d %s", r.status, r.body)
	}
}

func TestReadyzReportsEachImplementationAndWhyOneIsMissing(t *testing.T) {
	ts, _ := start(t, nil)
	r := get(t, ts, "/readyz")
	if r.status != http.StatusOK {
		t.Fatalf("/readyz: %d %s", r.status, r.body)
	}
	var rd server.Readiness
	if err := json.Unmarshal(r.body, &rd); err != nil {
		t.Fatal(err)
	}
	n := len(catalog.All())
	if rd.Status != "ready" || rd.Impl != catalog.Fast || len(rd.Impls) != 3 {
		t.Fatalf("readiness %+v", rd)
	}
	for i, impl := range []catalog.Impl{catalog.Ref, catalog.Fast} {
		if st := rd.Impls[i]; st.Impl != impl || !st.Available || st.Ops != n || st.Reason != "" {
			t.Errorf("%s: %+v, want available for all %d ops", impl, st, n)
		}
	}
	entry, _ := catalog.Lookup(filterOp)
	if cuda := rd.Impls[2]; !slices.Contains(entry.Impls(), catalog.CUDA) && (cuda.Available || !strings.Contains(cuda.Reason, "-tags cuda")) {
		t.Errorf("cuda in a non-cuda build: %+v; want unavailable with the reason", cuda)
	}
}
