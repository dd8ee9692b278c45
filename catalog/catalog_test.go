package catalog_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/equiv/mutants"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/spec"
)

// TestEveryEntryHasGeneratorFixtureAndBenchmark is the catalog's
// completeness gate: an op without a differential suite, a golden fixture
// file (with boundary, valid, invalid and — when it has mutants —
// regression cases) or a benchmark shape fails here.
func TestEveryEntryHasGeneratorFixtureAndBenchmark(t *testing.T) {
	zoo := map[string]int{}
	for _, m := range mutants.All() {
		zoo[m.Op()]++
	}
	for _, e := range catalog.All() {
		if _, ok := equiv.Lookup(e.Name()); !ok {
			t.Errorf("%s: no generator (equiv.Suites)", e.Name())
		}
		if len(e.Benchmarks()) == 0 {
			t.Errorf("%s: no benchmark shape", e.Name())
		}
		cases, err := fixtures.ReadFile(filepath.Join("..", "fixtures", "testdata", equiv.GoldenFileName(e.Name())))
		if err != nil {
			t.Errorf("%s: no golden fixture: %v", e.Name(), err)
			continue
		}
		kinds := map[string]int{}
		for _, c := range cases {
			kinds[strings.SplitN(c.Case, "/", 2)[0]]++
		}
		for _, k := range []string{"boundary", "valid", "invalid"} {
			if kinds[k] == 0 {
				t.Errorf("%s: golden fixture has no %s case", e.Name(), k)
			}
		}
		if kinds["regression"] < zoo[e.Name()] {
			t.Errorf("%s: %d mutants but %d regression fixtures", e.Name(), zoo[e.Name()], kinds["regression"])
		}
	}
}

// TestEntriesAreNamedOnceWithSpecAndExample keeps the names unique and
// every example input valid on both twins.
func TestEntriesAreNamedOnceWithSpecAndExample(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range catalog.All() {
		if seen[e.Name()] || e.Spec() == "" || e.Doc() == "" {
			t.Errorf("%q: duplicate name or missing spec/doc", e.Name())
		}
		seen[e.Name()] = true
		for _, impl := range e.Impls() {
			if _, err := e.Run(impl, spec.DefaultLimits(), e.Example()); err != nil {
				t.Errorf("%s on %s rejects its own example: %v", e.Name(), impl, err)
			}
		}
	}
}

// TestRunDecodesStrictly: unknown fields, wrong types and trailing data are
// rejected with a bad_json error naming the field.
func TestRunDecodesStrictly(t *testing.T) {
	e, ok := catalog.Lookup("transfer.filter_cp_rank")
	if !ok {
		t.Fatal("transfer.filter_cp_rank not registered")
	}
	for in, field := range map[string]string{
		`{"kv":[1],"cp_size":1,"cp_rnak":0}`: "cp_rnak",
		`{"kv":"x","cp_size":1}`:             "kv",
		`{"kv":[1],"cp_size":1} {}`:          "$",
		`{"kv":[1],`:                         "$",
	} {
		out, err := e.Run(catalog.Fast, spec.DefaultLimits(), []byte(in))
		ie, isInput := spec.AsInputError(err)
		if !isInput || !errors.Is(err, catalog.ErrBadJSON) || ie.Field != field {
			t.Errorf("%s: got %v, want bad_json on %q", in, err, field)
		}
		if !strings.Contains(string(out), `"code":"bad_json"`) {
			t.Errorf("%s: canonical error object missing: %s", in, out)
		}
	}
}

// TestCUDAIsAnErrorNotAFallback: asking for cuda in a CPU build names why.
func TestCUDAIsAnErrorNotAFallback(t *testing.T) {
	for _, e := range catalog.All() {
		if slices.Contains(e.Impls(), catalog.CUDA) {
			continue
		}
		_, err := e.Run(catalog.CUDA, spec.DefaultLimits(), e.Example())
		if !errors.Is(err, catalog.ErrImplUnavailable) || !strings.Contains(err.Error(), "-tags cuda") {
			t.Errorf("%s on cuda: got %v, want ErrImplUnavailable naming the build tag", e.Name(), err)
		}
	}
	if _, err := catalog.ParseImpl("gpu"); err == nil {
		t.Error(`ParseImpl("gpu") succeeded`)
	}
}
