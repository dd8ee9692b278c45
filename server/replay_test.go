package server_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fixtures"
)

// TestEverySuiteReplaysByteForByteOverHTTP replays each op's golden cases
// (tables plus 25 valid and 25 invalid generated cases) through the HTTP
// fixture runner, on ref and on the default implementation: the server adds
// nothing to and loses nothing from the canonical bytes, errors included.
func TestEverySuiteReplaysByteForByteOverHTTP(t *testing.T) {
	ts, _ := start(t, nil)
	for _, s := range equiv.Suites() {
		cases := s.Fixtures(25, 25)
		for _, query := range []string{"impl=ref", ""} {
			t.Run(s.Name()+"?"+query, func(t *testing.T) {
				r := &fixtures.HTTP{Base: ts.URL, Client: ts.Client(), Query: query}
				n, mismatch, err := fixtures.Check(cases, r)
				if err != nil {
					t.Fatalf("after %d cases: %v", n, err)
				}
				if mismatch != nil {
					t.Fatalf("after %d cases: %v", n, mismatch)
				}
				if n != len(cases) {
					t.Fatalf("%d of %d cases checked", n, len(cases))
				}
			})
		}
	}
	if n := metric(t, ts, "kvtwin_recovered_panics_total"); n != 0 {
		t.Errorf("%v panics reached the server from the generators", n)
	}
}
