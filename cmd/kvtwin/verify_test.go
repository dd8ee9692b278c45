package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/equiv/mutants"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// TestVerifyReportsEveryBugZooFaultOnTheFixtureCorpus is serve --verify's
// proof: for each bug-zoo mutant, a server whose fast twin of the op is
// the mutant serves the op's golden fixture corpus with --verify 1, and
// the requests it reports as diverging are exactly the cases on which the
// mutant's answer differs from ref's (computed here, apart from the
// server), each reported with a fixture line that reproduces it (a
// mismatch when replayed against the mutant); with the fault off (the
// catalog's own entry), the same corpus gives 0 divergences.
func TestVerifyReportsEveryBugZooFaultOnTheFixtureCorpus(t *testing.T) {
	if raceEnabled {
		t.Skip("serves every op's corpus once per mutant; `make test-cli` runs it without -race (server's own verify tests run under -race)")
	}
	var caught, silent atomic.Int64
	t.Run("faults", func(t *testing.T) {
		for _, m := range mutants.All() {
			if only := os.Getenv("KVTWIN_VERIFY_ONLY"); only != "" && m.Name() != only {
				continue
			}
			t.Run(m.Name(), func(t *testing.T) {
				t.Parallel()
				if verifyFault(t, m) {
					caught.Add(1)
				} else {
					silent.Add(1)
				}
			})
		}
	})
	t.Logf("%d faults reported on the corpus, %d change no answer of it", caught.Load(), silent.Load())
	if caught.Load() == 0 {
		t.Fatal("no fault changed an answer: the test proves nothing")
	}
	t.Run("no-fault", func(t *testing.T) {
		for _, e := range catalog.All() {
			t.Run(e.Name(), func(t *testing.T) {
				t.Parallel()
				if got, _, _ := verifyCorpus(t, e, goldenCorpus(t, e.Name())); len(got) != 0 {
					t.Errorf("%s without a fault: %d divergences (%v), want 0", e.Name(), len(got), got)
				}
			})
		}
	})
}

// verifyFault serves m's op with m as its fast twin over the op's corpus
// and checks what --verify 1 reports; it says whether the fault changed
// any answer of the corpus.
func verifyFault(t *testing.T, m equiv.Killable) bool {
	corpus := goldenCorpus(t, m.Op())
	got, lines, offered := verifyCorpus(t, m.Entry(), corpus)
	want := changedAnswers(t, m.Entry(), corpus, offered)
	if !slices.Equal(got, want) {
		t.Fatalf("diverging requests %v, want exactly the cases whose answer the fault changes %v", got, want)
	}
	if len(want) == 0 {
		return false // the corpus never exercises this fault through the op route
	}
	cases, err := fixtures.Read(bytes.NewReader(lines))
	if err != nil || len(cases) != len(want) {
		t.Fatalf("%d fixture lines (%v), want %d", len(cases), err, len(want))
	}
	// Replayed as `kvtwin fixtures check` does: against the faulty twin it
	// fails (a mismatch, or the twin's own failure where the fault made it
	// fail outright), against ref it passes.
	for _, c := range cases {
		if _, mm, err := fixtures.Check([]fixtures.Case{c}, runnerOf{m.Entry(), catalog.Fast}); mm == nil && err == nil {
			t.Errorf("the line of %s does not reproduce the fault when replayed", c.Case)
		}
		if _, mm, err := fixtures.Check([]fixtures.Case{c}, runnerOf{m.Entry(), catalog.Ref}); mm != nil || err != nil {
			t.Errorf("the line of %s fails against ref (mismatch %v, err %v)", c.Case, mm, err)
		}
	}
	return true
}

// goldenCorpus is op's golden fixture file.
func goldenCorpus(t *testing.T, op string) []fixtures.Case {
	t.Helper()
	cases, err := fixtures.ReadFile(filepath.Join("..", "..", "fixtures", "testdata", equiv.GoldenFileName(op)))
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// changedAnswers are the names of the corpus cases whose answer was
// offered for verification (offered: fast's answer by case) on which e's
// ref twin answers otherwise, sorted.
func changedAnswers(t *testing.T, e catalog.Entry, corpus []fixtures.Case, offered map[string]string) []string {
	t.Helper()
	var names []string
	for _, c := range corpus {
		f, ok := offered[c.Case]
		if !ok {
			continue
		}
		if r, _ := runQuiet(e, catalog.Ref, c.In); r != f {
			names = append(names, c.Case)
		}
	}
	slices.Sort(names)
	return names
}

// runQuiet runs e's impl on in under the server's default limits and
// returns the result as a comparable string, or false if it panicked.
func runQuiet(e catalog.Entry, impl catalog.Impl, in []byte) (res string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	lim := server.DefaultLimits()
	out, err := e.Run(impl, lim, in)
	return fmt.Sprintf("%t %s", err != nil, out), true
}

// verifyCorpus serves e alone with --verify 1, posts every case with its
// name as X-Request-Id, and returns the diverging request ids (sorted),
// the divergences' fixture lines, and, by case, fast's answer for every
// case whose answer was offered for verification: answered before the op
// deadline (a 503 sends none) without a panic (a 500 without an answer).
func verifyCorpus(t *testing.T, e catalog.Entry, corpus []fixtures.Case) ([]string, []byte, map[string]string) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Entries = []catalog.Entry{e}
	cfg.Verify.Rate = 1
	cfg.Verify.Workers = 2
	cfg.Verify.CPUShare = 1
	cfg.Verify.Queue = len(corpus) + 1 // nothing is dropped: every answer is checked
	cfg.Verify.QueueBytes = 1 << 30
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	base := "http://" + ln.Addr().String()
	offered := map[string]string{}
	for _, c := range corpus {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/ops/"+e.Name(), bytes.NewReader(c.In))
		req.Header.Set("X-Request-Id", c.Case)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		nb, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if os.Getenv("KVTWIN_VERIFY_DEBUG") != "" {
			t.Logf("%s: %d, %d bytes", c.Case, resp.StatusCode, nb)
		}
		if resp.StatusCode != http.StatusServiceUnavailable {
			if f, ok := runQuiet(e, catalog.Fast, c.In); ok {
				offered[c.Case] = f
			}
		}
	}
	var sum server.VerifySummary
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		sum = getJSON[server.VerifySummary](t, base+"/v1/verify")
		n := sum.Total.Agree + sum.Total.Diverge + sum.Total.Error + sum.Total.Dropped
		if n >= int64(len(offered)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d answers verified within 30 s", e.Name(), n, len(offered))
		}
	}
	if sum.Total.Dropped != 0 || sum.Total.Error != 0 {
		t.Fatalf("%s: %+v: a sample was dropped or could not run", e.Name(), sum.Total)
	}
	lines := getBody(t, base+"/v1/verify/divergences")
	var ids []string
	for l := range bytes.Lines(lines) {
		var d struct {
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(l, &d); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.RequestID)
	}
	slices.Sort(ids)
	if int64(len(ids)) != sum.Total.Diverge {
		t.Fatalf("%s: %d divergences counted, %d lines kept", e.Name(), sum.Total.Diverge, len(ids))
	}
	return ids, lines, offered
}

func getBody(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", url, resp.StatusCode, err, strings.TrimSpace(string(b)))
	}
	return b
}

func getJSON[T any](t *testing.T, url string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(getBody(t, url), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// runnerOf runs an entry's implementation for fixtures.Check.
type runnerOf struct {
	e    catalog.Entry
	impl catalog.Impl
}

func (r runnerOf) Run(_ string, in []byte) (fixtures.Result, error) {
	out, err := r.e.Run(r.impl, server.DefaultLimits(), in)
	if _, ok := spec.AsInputError(err); err != nil && !ok {
		return fixtures.Result{}, err
	}
	return fixtures.Result{Bytes: out, Rejected: err != nil}, nil
}
