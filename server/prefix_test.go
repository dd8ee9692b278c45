package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// startPools is a server with small prefix limits.
func startPools(t *testing.T) *httptest.Server {
	t.Helper()
	ts, _ := start(t, func(c *server.Config) {
		c.Prefix = prefix.Limits{MaxPools: 3, MaxPoolCapacity: 64, MaxRequestTokens: 16, MaxBytes: 1 << 30}
	})
	return ts
}

// decodeAs decodes a 2xx body, failing on any other status.
func decodeAs[T any](t *testing.T, r response, status int) T {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	return v
}

func createPool(t *testing.T, ts *httptest.Server, name, body string) server.PoolStats {
	t.Helper()
	return decodeAs[server.PoolStats](t, post(t, ts, "/v1/prefix/"+name, body), http.StatusCreated)
}

func TestPoolLifecycleOverHTTP(t *testing.T) {
	ts := startPools(t)
	got := createPool(t, ts, "a", `{"page_size":2,"capacity_tokens":8}`)
	reserved, _ := prefix.Config{PageSize: 2, CapacityTokens: 8}.ReservedBytes()
	want := server.PoolStats{Pool: "a", Stats: prefix.Stats{PageSize: 2, CapacityTokens: 8, Policy: "lru", FreeTokens: 8, ReservedBytes: reserved}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("create (-want +got):\n%s", diff)
	}
	createPool(t, ts, "b", `{"page_size":1,"capacity_tokens":4,"eagle":true,"policy":"mru"}`)

	ins := decodeAs[prefix.InsertResult](t, post(t, ts, "/v1/prefix/a/insert", `{"tokens":[1,2,3,4,5],"priority":1}`), http.StatusOK)
	if diff := cmp.Diff(prefix.InsertResult{InsertedTokens: 4, UncachedTailTokens: 1, Slots: []spec.SlotIdx{0, 1, 2, 3}, LastNode: 1}, ins); diff != "" {
		t.Fatalf("insert (-want +got):\n%s", diff)
	}
	m := decodeAs[prefix.MatchResult](t, post(t, ts, "/v1/prefix/a/match", `{"tokens":[1,2,3,9],"lock":true}`), http.StatusOK)
	if diff := cmp.Diff(prefix.MatchResult{MatchedTokens: 2, Slots: []spec.SlotIdx{0, 1}, LastNode: 2, Locked: true}, m); diff != "" {
		t.Fatalf("match (-want +got):\n%s", diff)
	}
	un := decodeAs[server.UnlockResult](t, post(t, ts, "/v1/prefix/a/unlock", `{"node":2}`), http.StatusOK)
	if un != (server.UnlockResult{Node: 2, NewlyEvictableTokens: 2}) {
		t.Fatalf("unlock %+v", un)
	}
	lk := decodeAs[server.LockResult](t, post(t, ts, "/v1/prefix/a/lock", `{"node":1}`), http.StatusOK)
	if lk != (server.LockResult{Node: 1, NewlyProtectedTokens: 4}) {
		t.Fatalf("lock %+v", lk)
	}
	decodeAs[server.UnlockResult](t, post(t, ts, "/v1/prefix/a/unlock", `{"node":1}`), http.StatusOK)
	ev := decodeAs[prefix.EvictResult](t, post(t, ts, "/v1/prefix/a/evict", `{"num_tokens":1}`), http.StatusOK)
	if ev != (prefix.EvictResult{EvictedTokens: 2, EvictedNodes: 1}) {
		t.Fatalf("evict %+v", ev)
	}

	st := decodeAs[server.PoolStats](t, get(t, ts, "/v1/prefix/a"), http.StatusOK)
	if st.UsedTokens != 2 || st.Nodes != 1 || st.QueryTokens != 4 || st.HitTokens != 2 || st.InsertedTokens != 4 || st.EvictedTokens != 2 || st.Evictions != 1 {
		t.Fatalf("stats %+v", st)
	}
	list := decodeAs[server.PoolList](t, get(t, ts, "/v1/prefix"), http.StatusOK)
	if len(list.Pools) != 2 || list.Pools[0].Pool != "a" || list.Pools[1].Pool != "b" || !list.Pools[1].Eagle {
		t.Fatalf("list %+v", list)
	}
	del := decodeAs[server.DeleteResult](t, do(t, ts, http.MethodDelete, "/v1/prefix/a", ""), http.StatusOK)
	if del != (server.DeleteResult{Pool: "a", Deleted: true}) {
		t.Fatalf("delete %+v", del)
	}
	openAIError(t, get(t, ts, "/v1/prefix/a"), http.StatusNotFound, "NotFoundError")
	if list := decodeAs[server.PoolList](t, get(t, ts, "/v1/prefix"), http.StatusOK); len(list.Pools) != 1 {
		t.Fatalf("list after delete %+v", list)
	}
}

func TestScoreOverHTTP(t *testing.T) {
	ts := startPools(t)
	createPool(t, ts, "a", `{"page_size":2,"capacity_tokens":16}`)
	createPool(t, ts, "b", `{"page_size":2,"capacity_tokens":16}`)
	post(t, ts, "/v1/prefix/a/insert", `{"tokens":[1,2,3,4,5,6]}`)
	post(t, ts, "/v1/prefix/b/insert", `{"tokens":[1,2,3,4],"extra":"lora-1"}`)
	got := decodeAs[server.ScoreResult](t, post(t, ts, "/v1/prefix:score", `{"tokens":[1,2,3,4,5,6,7]}`), http.StatusOK)
	if want := []prefix.Score{{Pool: "a", MatchedTokens: 6}, {Pool: "b", MatchedTokens: 0}}; !cmp.Equal(got.Scores, want) {
		t.Fatalf("scores %+v, want %+v", got.Scores, want)
	}
	got = decodeAs[server.ScoreResult](t, post(t, ts, "/v1/prefix:score", `{"tokens":[1,2,3,4],"extra":"lora-1","pools":["b"]}`), http.StatusOK)
	if want := []prefix.Score{{Pool: "b", MatchedTokens: 4}}; !cmp.Equal(got.Scores, want) {
		t.Fatalf("scores %+v, want %+v", got.Scores, want)
	}
	// "exact" compares units instead of prefix hashes: the same answers.
	got = decodeAs[server.ScoreResult](t, post(t, ts, "/v1/prefix:score", `{"tokens":[1,2,3,4,5,9],"exact":true}`), http.StatusOK)
	if want := []prefix.Score{{Pool: "a", MatchedTokens: 4}, {Pool: "b", MatchedTokens: 0}}; !cmp.Equal(got.Scores, want) {
		t.Fatalf("exact scores %+v, want %+v", got.Scores, want)
	}
	// A score is read-only: the stats, counters included, do not move.
	before := get(t, ts, "/v1/prefix/a").body
	post(t, ts, "/v1/prefix:score", `{"tokens":[1,2,3,9]}`)
	if after := get(t, ts, "/v1/prefix/a").body; string(before) != string(after) {
		t.Fatalf("score changed the stats:\n%s\n%s", before, after)
	}
}

// TestTheTokenLimitAnswersS1s413 checks the exact bytes of docs/spec/admission-serving.md
// S1.3 on every route that takes tokens.
func TestTheTokenLimitAnswersS1s413(t *testing.T) {
	ts := startPools(t)
	createPool(t, ts, "a", `{"page_size":1,"capacity_tokens":64}`)
	tokens := strings.TrimSuffix(strings.Repeat("1,", 17), ",")
	want := `{"object":"error","message":"The input (17 tokens) is longer than the model's context length (16 tokens).","type":"PayloadTooLargeError","param":null,"code":413}` + "\n"
	for _, path := range []string{"/v1/prefix/a/insert", "/v1/prefix/a/match", "/v1/prefix:score"} {
		r := post(t, ts, path, `{"tokens":[`+tokens+`]}`)
		openAIError(t, r, http.StatusRequestEntityTooLarge, "PayloadTooLargeError")
		if string(r.body) != want {
			t.Errorf("%s: body\n%s\nwant\n%s", path, r.body, want)
		}
	}
	// At the limit it is served.
	decodeAs[prefix.InsertResult](t, post(t, ts, "/v1/prefix/a/insert", `{"tokens":[`+strings.TrimPrefix(tokens, "1,")+`]}`), http.StatusOK)
}

func TestPrefixRoutesAnswerEveryErrorStatus(t *testing.T) {
	ts := startPools(t)
	createPool(t, ts, "a", `{"page_size":1,"capacity_tokens":4}`)
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		typ, param               string
	}{
		{"create existing", "POST", "/v1/prefix/a", `{"page_size":1,"capacity_tokens":4}`, 409, "ConflictError", "pool"},
		{"bad name", "POST", "/v1/prefix/a:b", `{"page_size":1,"capacity_tokens":4}`, 400, "BadRequestError", "pool"},
		{"page size 0", "POST", "/v1/prefix/b", `{"page_size":0,"capacity_tokens":4}`, 400, "BadRequestError", "page_size"},
		{"capacity over the limit", "POST", "/v1/prefix/b", `{"page_size":1,"capacity_tokens":65}`, 400, "BadRequestError", "capacity_tokens"},
		{"unknown policy", "POST", "/v1/prefix/b", `{"page_size":1,"capacity_tokens":4,"policy":"lifo"}`, 400, "BadRequestError", "policy"},
		{"missing capacity", "POST", "/v1/prefix/b", `{"page_size":1}`, 400, "BadRequestError", "capacity_tokens"},
		{"unknown create field", "POST", "/v1/prefix/b", `{"page_size":1,"capacity_tokens":4,"size":9}`, 400, "BadRequestError", "size"},
		{"not an object", "POST", "/v1/prefix/b", `[1]`, 400, "BadRequestError", "$"},
		{"unknown pool get", "GET", "/v1/prefix/zz", "", 404, "NotFoundError", "pool"},
		{"unknown pool delete", "DELETE", "/v1/prefix/zz", "", 404, "NotFoundError", "pool"},
		{"unknown pool insert", "POST", "/v1/prefix/zz/insert", `{"tokens":[1]}`, 404, "NotFoundError", "pool"},
		{"unknown action", "POST", "/v1/prefix/a/flush", `{}`, 404, "NotFoundError", "<null>"},
		{"unknown insert field", "POST", "/v1/prefix/a/insert", `{"tokens":[1],"prio":1}`, 400, "BadRequestError", "prio"},
		{"missing tokens", "POST", "/v1/prefix/a/insert", `{}`, 400, "BadRequestError", "tokens"},
		{"tokens of the wrong type", "POST", "/v1/prefix/a/match", `{"tokens":"1 2 3"}`, 400, "BadRequestError", "tokens"},
		{"negative token", "POST", "/v1/prefix/a/insert", `{"tokens":[1,-2]}`, 400, "BadRequestError", "tokens[1]"},
		{"token over 2^32-1", "POST", "/v1/prefix/a/match", `{"tokens":[4294967296]}`, 400, "BadRequestError", "tokens[0]"},
		{"insert larger than the pool", "POST", "/v1/prefix/a/insert", `{"tokens":[1,2,3,4,5]}`, 400, "BadRequestError", "tokens"},
		{"salt over the namespace limit", "POST", "/v1/prefix/a/insert",
			`{"tokens":[1],"salt":"` + strings.Repeat("s", prefix.MaxNamespaceBytes+1) + `"}`, 400, "BadRequestError", "salt"},
		{"missing node", "POST", "/v1/prefix/a/lock", `{}`, 400, "BadRequestError", "node"},
		{"foreign node", "POST", "/v1/prefix/a/lock", `{"node":42}`, 400, "BadRequestError", "node"},
		{"unlock of a foreign node", "POST", "/v1/prefix/a/unlock", `{"node":7}`, 400, "BadRequestError", "node"},
		{"negative evict", "POST", "/v1/prefix/a/evict", `{"num_tokens":-1}`, 400, "BadRequestError", "num_tokens"},
		{"missing num_tokens", "POST", "/v1/prefix/a/evict", `{"n":1}`, 400, "BadRequestError", "n"},
		{"score unknown pool", "POST", "/v1/prefix:score", `{"tokens":[1],"pools":["a","zz"]}`, 404, "NotFoundError", "pools[1]"},
		{"score duplicate pool", "POST", "/v1/prefix:score", `{"tokens":[1],"pools":["a","a"]}`, 400, "BadRequestError", "pools[1]"},
		{"wrong method", "PUT", "/v1/prefix/a", `{}`, 405, "MethodNotAllowedError", "<null>"},
		{"wrong method on an action", "GET", "/v1/prefix/a/insert", "", 405, "MethodNotAllowedError", "<null>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := openAIError(t, do(t, ts, c.method, c.path, c.body), c.status, c.typ)
			if param(e) != c.param {
				t.Errorf("param %s, want %s (%s)", param(e), c.param, e.Message)
			}
			if c.status == 400 || c.status == 404 || c.status == 409 {
				if c.param != "<null>" && len(e.Detail) == 0 {
					t.Errorf("no canonical detail: %+v", e)
				}
			}
		})
	}
}

func TestAFullPoolOrRegistryAnswers409(t *testing.T) {
	ts := startPools(t)
	createPool(t, ts, "a", `{"page_size":1,"capacity_tokens":4}`)
	ins := decodeAs[prefix.InsertResult](t, post(t, ts, "/v1/prefix/a/insert", `{"tokens":[1,2,3]}`), http.StatusOK)
	post(t, ts, "/v1/prefix/a/lock", fmt.Sprintf(`{"node":%d}`, ins.LastNode))
	e := openAIError(t, post(t, ts, "/v1/prefix/a/insert", `{"tokens":[7,8]}`), http.StatusConflict, "ConflictError")
	if param(e) != "tokens" || !strings.Contains(string(e.Detail), `"code":"pool_full"`) {
		t.Errorf("pool full: %+v %s", e, e.Detail)
	}
	createPool(t, ts, "b", `{"page_size":1,"capacity_tokens":4}`)
	createPool(t, ts, "c", `{"page_size":1,"capacity_tokens":4}`)
	e = openAIError(t, post(t, ts, "/v1/prefix/d", `{"page_size":1,"capacity_tokens":4}`), http.StatusConflict, "ConflictError")
	if !strings.Contains(string(e.Detail), `"code":"too_many_pools"`) {
		t.Errorf("too many pools: %+v", e)
	}
	r := post(t, ts, "/v1/prefix/a/insert", `{"tokens":[7,8]}`)
	if r.header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", r.header.Get("Content-Type"))
	}
}

func TestPoolMetricsFollowThePools(t *testing.T) {
	ts := startPools(t)
	createPool(t, ts, "a", `{"page_size":1,"capacity_tokens":8}`)
	post(t, ts, "/v1/prefix/a/insert", `{"tokens":[1,2,3,4]}`)
	post(t, ts, "/v1/prefix/a/match", `{"tokens":[1,2,9],"lock":true}`)
	post(t, ts, "/v1/prefix/a/insert", `{"tokens":[5,6,7,8,9]}`) // 1 unit over: evicts [3 4]
	for series, want := range map[string]float64{
		`kvtwin_prefix_query_tokens_total{pool="a"}`:    3,
		`kvtwin_prefix_hit_tokens_total{pool="a"}`:      2,
		`kvtwin_prefix_inserted_tokens_total{pool="a"}`: 9,
		`kvtwin_prefix_evicted_tokens_total{pool="a"}`:  2,
		`kvtwin_prefix_evictions_total{pool="a"}`:       1,
		`kvtwin_prefix_size_tokens{pool="a"}`:           7,
		`kvtwin_prefix_evictable_tokens{pool="a"}`:      5,
		`kvtwin_prefix_protected_tokens{pool="a"}`:      2,
		`kvtwin_prefix_capacity_tokens{pool="a"}`:       8,
	} {
		if got := metric(t, ts, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	do(t, ts, http.MethodDelete, "/v1/prefix/a", "")
	if got := metric(t, ts, `kvtwin_prefix_size_tokens{pool="a"}`); got != -1 {
		t.Errorf("a deleted pool still has a series (%v)", got)
	}
}

// TestPrefixRoutesAreSafeUnderConcurrentUse hammers one server from many
// goroutines with every route, pools deleted and re-created underneath;
// -race must stay quiet and no request may get a 5xx.
func TestPrefixRoutesAreSafeUnderConcurrentUse(t *testing.T) {
	ts, _ := start(t, func(c *server.Config) { c.MaxConcurrent = 64 })
	createPool(t, ts, "a", `{"page_size":2,"capacity_tokens":32}`)
	calls := []struct{ method, path, body string }{
		{"POST", "/v1/prefix/a/insert", `{"tokens":[1,2,3,4,5,6,7,8]}`},
		{"POST", "/v1/prefix/a/insert", `{"tokens":[1,2,9,9,3,3]}`},
		{"POST", "/v1/prefix/a/match", `{"tokens":[1,2,3,4],"lock":true}`},
		{"POST", "/v1/prefix/a/unlock", `{"node":1}`},
		{"POST", "/v1/prefix/a/lock", `{"node":2}`},
		{"POST", "/v1/prefix/a/evict", `{"num_tokens":4}`},
		{"POST", "/v1/prefix:score", `{"tokens":[1,2,3,4,5,6]}`},
		{"GET", "/v1/prefix/a", ""},
		{"GET", "/v1/prefix", ""},
		{"GET", "/metrics", ""},
		{"DELETE", "/v1/prefix/a", ""},
		{"POST", "/v1/prefix/a", `{"page_size":2,"capacity_tokens":32}`},
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 40 {
				c := calls[(w*7+i)%len(calls)]
				if status, body, err := tryDo(ts, c.method, c.path, c.body); err != nil || status >= 500 {
					t.Errorf("%s %s: %d %s %v", c.method, c.path, status, body, err)
				}
			}
		})
	}
	wg.Wait()
}

// tryDo is do without t.Fatal, for goroutines other than the test's.
func tryDo(ts *httptest.Server, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// startBudget is a server whose pools may reserve exactly maxBytes.
func startBudget(t *testing.T, maxBytes int64) *httptest.Server {
	t.Helper()
	ts, _ := start(t, func(c *server.Config) {
		c.Prefix = prefix.Limits{MaxPools: 8, MaxPoolCapacity: 1 << 16, MaxRequestTokens: 64, MaxBytes: maxBytes}
	})
	return ts
}

func reservation(t *testing.T, pageSize, capacity int) int64 {
	t.Helper()
	b, ok := prefix.Config{PageSize: pageSize, CapacityTokens: capacity}.ReservedBytes()
	if !ok {
		t.Fatalf("reservation of %d at page size %d overflows", capacity, pageSize)
	}
	return b
}

// TestAPoolBeyondTheMemoryBudgetAnswers409AndChangesNothing: a create whose
// reservation exceeds what is left of Prefix.MaxBytes is a 409
// ConflictError (as a full registry is) with param capacity_tokens and the
// canonical memory_budget error naming the largest capacity that fits;
// nothing is created, and deleting a pool frees its share.
func TestAPoolBeyondTheMemoryBudgetAnswers409AndChangesNothing(t *testing.T) {
	maxBytes := reservation(t, 1, 64) + reservation(t, 1, 32)
	ts := startBudget(t, maxBytes)
	a := createPool(t, ts, "a", `{"page_size":1,"capacity_tokens":64}`)
	if a.ReservedBytes != reservation(t, 1, 64) {
		t.Fatalf("create answered reserved_bytes %d, want %d", a.ReservedBytes, reservation(t, 1, 64))
	}
	before := get(t, ts, "/v1/prefix").body

	e := openAIError(t, post(t, ts, "/v1/prefix/b", `{"page_size":1,"capacity_tokens":64}`), http.StatusConflict, "ConflictError")
	var detail spec.ErrorObject
	if err := json.Unmarshal(e.Detail, &detail); err != nil {
		t.Fatalf("detail %s: %v", e.Detail, err)
	}
	left := maxBytes - reservation(t, 1, 64)
	if param(e) != "capacity_tokens" || detail.Code != "memory_budget" || detail.Value != float64(64) ||
		!strings.Contains(detail.Bound, "<= 32 at page_size 1") ||
		!strings.Contains(detail.Bound, fmt.Sprintf("%d bytes are left of the %d-byte MaxBytes budget", left, maxBytes)) {
		t.Fatalf("refusal %+v, detail %+v", e, detail)
	}
	if after := get(t, ts, "/v1/prefix").body; string(after) != string(before) {
		t.Fatalf("a refused create changed the pools:\n%s\n%s", before, after)
	}
	openAIError(t, get(t, ts, "/v1/prefix/b"), http.StatusNotFound, "NotFoundError")

	createPool(t, ts, "b", `{"page_size":1,"capacity_tokens":32}`) // what the bound said fits
	openAIError(t, post(t, ts, "/v1/prefix/c", `{"page_size":1,"capacity_tokens":1}`), http.StatusConflict, "ConflictError")
	decodeAs[server.DeleteResult](t, do(t, ts, http.MethodDelete, "/v1/prefix/a", ""), http.StatusOK)
	createPool(t, ts, "c", `{"page_size":1,"capacity_tokens":64}`)
}

// TestMetricsShowTheMemoryBudget: /metrics carries the budget, the bytes
// reserved in all, and each pool's reservation, which go with the pool.
func TestMetricsShowTheMemoryBudget(t *testing.T) {
	const maxBytes = 64 << 20
	ts := startBudget(t, maxBytes)
	createPool(t, ts, "a", `{"page_size":1,"capacity_tokens":1024}`)
	createPool(t, ts, "b", `{"page_size":16,"capacity_tokens":4096}`)
	ra, rb := reservation(t, 1, 1024), reservation(t, 16, 4096)
	for series, want := range map[string]float64{
		"kvtwin_prefix_budget_bytes":                    maxBytes,
		"kvtwin_prefix_budget_reserved_bytes":           float64(ra + rb),
		`kvtwin_prefix_reserved_bytes{pool="a"}`:        float64(ra),
		`kvtwin_prefix_reserved_bytes{pool="b"}`:        float64(rb),
		`kvtwin_prefix_capacity_tokens{pool="b"}`:       4096,
		`kvtwin_prefix_evictable_tokens{pool="b"}`:      0,
		`kvtwin_prefix_inserted_tokens_total{pool="a"}`: 0,
	} {
		if got := metric(t, ts, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	do(t, ts, http.MethodDelete, "/v1/prefix/a", "")
	if got := metric(t, ts, "kvtwin_prefix_budget_reserved_bytes"); got != float64(rb) {
		t.Errorf("after delete: reserved %v, want %v", got, float64(rb))
	}
	if got := metric(t, ts, `kvtwin_prefix_reserved_bytes{pool="a"}`); got != -1 {
		t.Errorf("a deleted pool still has a reservation series (%v)", got)
	}
}

func TestNewRejectsAPrefixBudgetBelowOneByte(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Prefix.MaxBytes = 0
	_, err := server.New(cfg)
	ie, ok := spec.AsInputError(err)
	if !ok || !errors.Is(err, server.ErrBadConfig) || ie.Field != "Prefix.MaxBytes" || ie.Bound != ">= 1" {
		t.Fatalf("New = %v, want ErrBadConfig on Prefix.MaxBytes", err)
	}
}
