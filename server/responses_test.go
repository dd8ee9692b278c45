//go:build unix

package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// The write budget (MaxResponseBytesInFlight) over real connections:
// clients that read in full, stop reading, or leave; answers that wait for
// room or are refused; small answers that are served meanwhile.

// bigAnswer is the size of the large answers below: twice a loopback
// socket's largest send buffer (Linux tcp_wmem's maximum, 4 MiB by
// default) and 1 MiB more, so a reader that stops makes the server's write
// block with most of the answer still in the server's memory, and as small
// as that allows, since -race (make test) makes every byte cost.
var bigAnswer = sync.OnceValue(func() int {
	sndbuf := 4 << 20
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 3 {
			if n, err := strconv.Atoi(f[2]); err == nil {
				sndbuf = max(sndbuf, n)
			}
		}
	}
	return 2*sndbuf + 1<<20
})

// blobEntry is test.blob: a JSON string of n bytes from {"n":N}, made
// without encoding/json, whose per-byte loops -race slows tenfold. Its
// example is a string of pad bytes (GET /v1/ops).
type blobEntry struct {
	catalog.Entry
	pad int
}

func blobOp(pad int) catalog.Entry {
	id := func(_ spec.Limits, in num) (num, error) { return in, nil }
	return blobEntry{Entry: testOp("test.blob", id, id), pad: pad}
}

// Example is a JSON string of pad bytes, or the small {"n":1}.
func (b blobEntry) Example() json.RawMessage {
	if b.pad == 0 {
		return json.RawMessage(`{"n":1}`)
	}
	return jsonString(b.pad)
}

// Run answers a JSON string of n bytes; rejections are test.blob's own.
func (b blobEntry) Run(impl catalog.Impl, lim spec.Limits, in []byte) ([]byte, error) {
	var req num
	if err := json.Unmarshal(in, &req); err != nil || req.N < 2 {
		return b.Entry.Run(impl, lim, []byte(`{"n":"not a number"}`))
	}
	return jsonString(req.N), nil
}

// jsonString is "aaa…" of n bytes in all, n >= 2.
func jsonString(n int) []byte {
	out := bytes.Repeat([]byte{'a'}, n)
	out[0], out[n-1] = '"', '"'
	return out
}

// budgetServing serves test.blob and transfer.filter_cp_rank with a write
// budget of budget bytes, edited further by edit.
func budgetServing(t *testing.T, budget int64, edit func(*server.Config)) *serving {
	t.Helper()
	return serve(t, func(c *server.Config) {
		c.Entries = []catalog.Entry{blobOp(0), catalog.TransferFilterCPRank()}
		c.MaxResponseBytesInFlight = budget
		c.MaxBodyBytesInFlight = 4 * c.MaxBodyBytes
		if edit != nil {
			edit(c)
		}
	})
}

// stalledReader is a raw connection with a 4 KiB receive buffer: once it
// stops reading, the server's write of a large answer blocks.
type stalledReader struct {
	conn net.Conn
	br   *bufio.Reader
}

func dialStalled(t *testing.T, url string) *stalledReader {
	t.Helper()
	sr, err := dialStalledErr(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sr.conn.Close() })
	return sr
}

// dialStalledErr is dialStalled for a goroutine other than the test's; the
// caller closes the connection.
func dialStalledErr(url string) (*stalledReader, error) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		return nil, err
	}
	return &stalledReader{conn: conn, br: bufio.NewReaderSize(conn, 512)}, nil
}

// ask sends one request and reads the answer's head, leaving its body unread.
func (sr *stalledReader) ask(t *testing.T, method, path, body string) *http.Response {
	t.Helper()
	resp, err := sr.askErr(method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (sr *stalledReader) askErr(method, path, body string) (*http.Response, error) {
	fmt.Fprintf(sr.conn, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", method, path, len(body), body)
	resp, err := http.ReadResponse(sr.br, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return resp, nil
}

// drain reads what is left of the answer at full speed and returns how
// much of its body arrived before the connection ended.
func (sr *stalledReader) drain(resp *http.Response) int64 {
	_ = sr.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _ := io.Copy(io.Discard, resp.Body)
	return n
}

// servedMetric reads one series from the server's /metrics; 0 when absent.
func servedMetric(t *testing.T, sv *serving, series string) float64 {
	t.Helper()
	resp, err := sv.client.Get(sv.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := sample(t, b, series)
	return v
}

// untilMetric polls series until it equals want, for up to d.
func untilMetric(t *testing.T, sv *serving, series string, want float64, d time.Duration) {
	t.Helper()
	untilMetricIs(t, sv, series, fmt.Sprint(want), func(v float64) bool { return v == want }, d)
}

// untilMetricIs polls series until ok holds, for up to d.
func untilMetricIs(t *testing.T, sv *serving, series, want string, ok func(float64) bool, d time.Duration) {
	t.Helper()
	for began := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		got := servedMetric(t, sv, series)
		if ok(got) {
			return
		}
		if time.Since(began) > d {
			t.Fatalf("%s = %v after %v, want %s", series, got, d, want)
		}
	}
}

const (
	reservedSeries = "kvtwin_response_budget_reserved_bytes"
	waitingSeries  = "kvtwin_response_budget_waiting"
)

// A large answer's reservation returns to the budget however its write
// ends: read in full, cut by the rate deadline when the reader stops (well
// before the whole answer's transfer time, as the deadline moves with each
// chunk), or failed when the client leaves. Ops, ?compare=1 and the
// preflight alike.
func TestTheWriteBudgetGetsItsBytesBackHoweverTheWriteEnds(t *testing.T) {
	const grace, rate = 200 * time.Millisecond, 8 << 20
	sv := budgetServing(t, 128<<20, func(c *server.Config) {
		c.TransferGrace = grace
		c.MinTransferRate = rate
	})
	opBody := fmt.Sprintf(`{"n":%d}`, bigAnswer())
	preflightBody := fmt.Sprintf(`{"request":{"prompt":%s},"prompt_tokens":1,"context_len":8192,"max_total_tokens":100000}`, jsonString(bigAnswer()))
	cuts := 0.0
	for _, tc := range []struct {
		name, path, body, fate string
	}{
		{"op read in full", "/v1/ops/test.blob", opBody, "read"},
		{"op reader stops", "/v1/ops/test.blob", opBody, "stop"},
		{"op client leaves", "/v1/ops/test.blob", opBody, "leave"},
		{"compare reader stops", "/v1/ops/test.blob?compare=1", opBody, "stop"},
		{"preflight reader stops", server.PreflightPath, preflightBody, "stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fate == "read" {
				r := postNoFatal(sv.client, sv.url+tc.path, tc.body)
				if r.status != http.StatusOK || len(r.body) < bigAnswer() {
					t.Fatalf("%d, %d bytes; want 200 and the whole answer", r.status, len(r.body))
				}
				untilMetric(t, sv, reservedSeries, 0, 5*time.Second)
				return
			}
			sr := dialStalled(t, sv.url)
			resp := sr.ask(t, http.MethodPost, tc.path, tc.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			began := time.Now()
			if held := servedMetric(t, sv, reservedSeries); held < float64(bigAnswer()) {
				t.Errorf("%v bytes reserved while the answer is written, want >= %d", held, bigAnswer())
			}
			if tc.fate == "leave" {
				sr.conn.Close()
				untilMetric(t, sv, reservedSeries, 0, 5*time.Second)
				untilMetric(t, sv, `kvtwin_response_writes_cut_total{reason="client"}`, 1, 5*time.Second)
				return
			}
			untilMetric(t, sv, reservedSeries, 0, 10*time.Second)
			took := time.Since(began)
			whole := grace + time.Duration(resp.ContentLength)*time.Second/rate
			if took >= whole {
				t.Errorf("the stopped reader was cut after %v, no sooner than the whole answer's deadline %v", took, whole)
			}
			cuts++
			untilMetric(t, sv, `kvtwin_response_writes_cut_total{reason="rate"}`, cuts, 5*time.Second)
			if got := sr.drain(resp); got >= resp.ContentLength {
				t.Errorf("the stopped reader got all %d bytes; it should have been cut", got)
			}
		})
	}
}

// Past the budget, a large answer waits for room (its compute slot free
// meanwhile) and is written when a write ends, or gets 503 with
// Retry-After naming the budget when none comes within OpTimeout; with
// MaxConcurrent answers already waiting the next is refused at once. Small
// answers, errors, health checks and the op listing are served throughout
// at normal latency.
func TestBeyondTheWriteBudgetLargeAnswersWaitOr503WhileSmallOnesAreServed(t *testing.T) {
	budget := int64(bigAnswer() * 3 / 2) // room for one large answer
	sv := budgetServing(t, budget, func(c *server.Config) {
		c.MaxConcurrent = 1
		c.OpTimeout = 700 * time.Millisecond
		c.TransferGrace = 20 * time.Second // the stalled reader keeps its room until it leaves
	})
	big := fmt.Sprintf(`{"n":%d}`, bigAnswer())
	holder := dialStalled(t, sv.url)
	if resp := holder.ask(t, http.MethodPost, "/v1/ops/test.blob", big); resp.StatusCode != http.StatusOK {
		t.Fatalf("the first large answer: %d", resp.StatusCode)
	}
	untilMetricIs(t, sv, reservedSeries, ">= the answer", func(v float64) bool { return v > float64(bigAnswer()) }, 5*time.Second)

	waited := make(chan response, 1)
	go func() { waited <- postNoFatal(sv.client, sv.url+"/v1/ops/test.blob", big) }()
	untilMetric(t, sv, waitingSeries, 1, 5*time.Second)
	r := postNoFatal(sv.client, sv.url+"/v1/ops/test.blob", big)
	e := openAIError(t, r, http.StatusServiceUnavailable, "ServiceUnavailableError")
	named := fmt.Sprintf("MaxResponseBytesInFlight (%d bytes)", budget)
	if !strings.Contains(e.Message, named) || !strings.Contains(e.Message, "MaxConcurrent (1) answers already wait") ||
		r.header.Get("Retry-After") != "1" {
		t.Errorf("a large answer with one already waiting: %q, Retry-After %q; want 503 naming the budget and MaxConcurrent, Retry-After 1", e.Message, r.header.Get("Retry-After"))
	}
	small := map[string]func() response{
		"small op":  func() response { return postNoFatal(sv.client, sv.url+"/v1/ops/test.blob", `{"n":1000}`) },
		"bad input": func() response { return postNoFatal(sv.client, sv.url+"/v1/ops/"+filterOp, `{"cp_size":0}`) },
		"healthz":   func() response { return getNoFatal(sv.client, sv.url+"/healthz") },
		"op list":   func() response { return getNoFatal(sv.client, sv.url+"/v1/ops") },
		"metrics":   func() response { return getNoFatal(sv.client, sv.url+"/metrics") },
	}
	for name, do := range small {
		began := time.Now()
		r := do()
		if took := time.Since(began); r.status >= 500 || r.status == 429 || took > quickBound {
			t.Errorf("%s with the write budget full: %d after %v; want it served within %v", name, r.status, took, quickBound)
		}
	}
	r = <-waited
	e = openAIError(t, r, http.StatusServiceUnavailable, "ServiceUnavailableError")
	if !strings.Contains(e.Message, named) || !strings.Contains(e.Message, "OpTimeout (") ||
		r.header.Get("Retry-After") != "1" {
		t.Errorf("a large answer that found no room: %q, Retry-After %q; want 503 naming the budget and OpTimeout", e.Message, r.header.Get("Retry-After"))
	}

	// Room that comes within OpTimeout is taken: the waiter is written.
	go func() { waited <- postNoFatal(sv.client, sv.url+"/v1/ops/test.blob", big) }()
	untilMetric(t, sv, waitingSeries, 1, 5*time.Second)
	holder.conn.Close()
	if r := <-waited; r.status != http.StatusOK || len(r.body) != bigAnswer()+1 {
		t.Errorf("the waiter after room came: %d, %d bytes; want 200 and the whole answer", r.status, len(r.body))
	}
	untilMetric(t, sv, reservedSeries, 0, 5*time.Second)
	if w := servedMetric(t, sv, "kvtwin_response_budget_waits_total"); w != 2 {
		t.Errorf("waits counted %v, want 2", w)
	}
}

// GET /v1/ops is one body shared by every request: a stalled reader holds
// no copy and reserves nothing, and it is cut by the rate deadline, not
// left to WriteTimeout (2 minutes) as it was.
func TestTheOpListingIsCutByTheRateDeadlineAndReservesNothing(t *testing.T) {
	const grace, rate = 200 * time.Millisecond, 8 << 20
	sv := serve(t, func(c *server.Config) {
		c.Entries = []catalog.Entry{blobOp(bigAnswer())}
		c.TransferGrace = grace
		c.MinTransferRate = rate
	})
	sr := dialStalled(t, sv.url)
	resp := sr.ask(t, http.MethodGet, "/v1/ops", "")
	if resp.StatusCode != http.StatusOK || resp.ContentLength < int64(bigAnswer()) {
		t.Fatalf("GET /v1/ops: %d, %d bytes; want 200 and the large example", resp.StatusCode, resp.ContentLength)
	}
	began := time.Now()
	if held := servedMetric(t, sv, reservedSeries); held != 0 {
		t.Errorf("the shared listing reserved %v bytes, want 0", held)
	}
	untilMetric(t, sv, `kvtwin_response_writes_cut_total{reason="rate"}`, 1, 10*time.Second)
	if whole := grace + time.Duration(resp.ContentLength)*time.Second/rate; time.Since(began) >= whole {
		t.Errorf("cut after %v, no sooner than the whole listing's deadline %v", time.Since(began), whole)
	}
	if got := sr.drain(resp); got >= resp.ContentLength {
		t.Errorf("the stalled reader got all %d bytes of the listing", got)
	}
}

// Many slow readers at once: every reservation returns, none leaks, and
// the reserved bytes never exceed the budget (run under -race for the
// accounting's concurrency).
func TestConcurrentSlowReadersNeverHoldMoreThanTheBudget(t *testing.T) {
	budget := int64(2*bigAnswer() + 1<<20) // room for two
	sv := budgetServing(t, budget, func(c *server.Config) {
		c.MaxConcurrent = 4
		c.OpTimeout = 2 * time.Second
		c.TransferGrace = 100 * time.Millisecond
		c.MinTransferRate = 16 << 20
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range 8 {
		wg.Go(func() {
			sr, err := dialStalledErr(sv.url)
			if err != nil {
				t.Error(err)
				return
			}
			defer sr.conn.Close()
			resp, err := sr.askErr(http.MethodPost, "/v1/ops/test.blob", fmt.Sprintf(`{"n":%d}`, bigAnswer()-i))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
			if i%2 == 0 {
				return // leaves
			}
			time.Sleep(300 * time.Millisecond) // stops for a while, then reads what is left
			sr.drain(resp)
		})
	}
	peak := 0.0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for polling := true; polling; {
		select {
		case <-done:
			polling = false
		default:
			peak = max(peak, servedMetric(t, sv, reservedSeries))
			time.Sleep(5 * time.Millisecond)
		}
	}
	if peak > float64(budget) {
		t.Errorf("reserved peaked at %v bytes, over the %d-byte budget", peak, budget)
	}
	untilMetric(t, sv, reservedSeries, 0, 5*time.Second)
	untilMetric(t, sv, waitingSeries, 0, 5*time.Second)
	for status, n := range statuses {
		if status != http.StatusOK && status != http.StatusServiceUnavailable && status != http.StatusTooManyRequests {
			t.Errorf("%d readers got %d; want 200, 503 (no room) or 429 (no slot)", n, status)
		}
	}
}

func getNoFatal(c *http.Client, url string) response {
	resp, err := c.Get(url)
	if err != nil {
		return response{status: -1, body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}
