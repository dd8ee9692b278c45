package catalog_test

import (
	"path/filepath"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/ref"
)

// FuzzRunNeverPanicsAndTwinsAgree feeds arbitrary bytes to every op on both
// twins: neither may panic, and both must produce the same canonical bytes
// (errors included). The seed corpus is the golden set, so `go test` runs
// every golden input through this check; `go test -fuzz` explores from there.
func FuzzRunNeverPanicsAndTwinsAgree(f *testing.F) {
	entries := catalog.All()
	for i, e := range entries {
		cases, err := fixtures.ReadFile(filepath.Join("..", "fixtures", "testdata", equiv.GoldenFileName(e.Name())))
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range cases {
			f.Add(uint8(i), []byte(c.In))
		}
	}
	lim := ref.Limits{MaxOutputBytes: 1 << 24}
	f.Fuzz(func(t *testing.T, op uint8, in []byte) {
		e := entries[int(op)%len(entries)]
		want, werr := e.Run(catalog.Ref, lim, in)
		got, gerr := e.Run(catalog.Fast, lim, in)
		if (werr == nil) != (gerr == nil) || string(want) != string(got) {
			t.Fatalf("%s: ref %s (%v)\nfast %s (%v)\ninput %s", e.Name(), want, werr, got, gerr, in)
		}
	})
}
