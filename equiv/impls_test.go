package equiv_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast/cuda"
)

// selectedImpls is the implementations the differential suite runs for e:
// all of e.Impls(), or with KVTWIN_IMPL=name only that one (ref is the
// reference every check compares against, so it always runs as such).
// KVTWIN_IMPL=cuda on an op whose CUDA twin exists but is withheld (no
// device, failed self-test) fails under KVTWIN_REQUIRE_CUDA=1 and is
// skipped, with the reason, otherwise.
func selectedImpls(t *testing.T, e catalog.Entry) []catalog.Impl {
	want := os.Getenv("KVTWIN_IMPL")
	if want == "" {
		requireCUDA(t)
		return e.Impls()
	}
	impl, err := catalog.ParseImpl(want)
	if err != nil {
		t.Fatalf("KVTWIN_IMPL: %v", err)
	}
	if slices.Contains(e.Impls(), impl) {
		return []catalog.Impl{impl}
	}
	if impl == catalog.CUDA && catalog.HasCUDATwin(e) {
		requireCUDA(t)
		t.Skipf("KVTWIN_IMPL=cuda: the CUDA twin is withheld: %v", catalog.CUDAStatus())
	}
	return nil
}

// requireCUDA fails the test when KVTWIN_REQUIRE_CUDA=1 and the CUDA
// implementation is withheld: a GPU check must not pass by skipping.
func requireCUDA(t *testing.T) {
	t.Helper()
	if os.Getenv("KVTWIN_REQUIRE_CUDA") != "1" {
		return
	}
	if err := catalog.CUDAStatus(); err != nil {
		t.Fatalf("KVTWIN_REQUIRE_CUDA=1 but the CUDA implementation is unavailable: %v", err)
	}
}

// TestCUDAAvailabilityIsExplained checks the selection contract: with the
// CUDA build its twins are offered only after the device and self-test pass,
// and without it the reason names the missing build tag.
func TestCUDAAvailabilityIsExplained(t *testing.T) {
	requireCUDA(t)
	err := catalog.CUDAStatus()
	if !cuda.Enabled {
		if err == nil {
			t.Fatal("CUDAStatus() = nil in a build without -tags cuda")
		}
		return
	}
	if err != nil {
		t.Skipf("CUDA unavailable: %v", err)
	}
	info, err := cuda.Info()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cuda: %+v", info)
}

// TestCUDAMatchesFastOnPayloadShapes runs every CUDA twin on its op's
// benchmark shapes (payload scale: 64 MiB arenas, thousands of pages) and
// requires fast's canonical bytes. Fast is the oracle here because the
// differential suite proves it equal to ref, whose byte-by-byte loops are
// too slow at this size; the generated cases above compare against ref.
func TestCUDAMatchesFastOnPayloadShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("payload-scale shapes are skipped in -short mode")
	}
	if want := os.Getenv("KVTWIN_IMPL"); want != "" && want != string(catalog.CUDA) {
		t.Skipf("KVTWIN_IMPL=%s", want)
	}
	requireCUDA(t)
	for _, e := range catalog.All() {
		if !slices.Contains(e.Impls(), catalog.CUDA) {
			continue
		}
		for _, b := range e.Benchmarks() {
			t.Run(e.Name()+"/"+b.Shape, func(t *testing.T) {
				want, werr := b.Output(catalog.Fast)
				got, gerr := b.Output(catalog.CUDA)
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("fast error %v, cuda error %v", werr, gerr)
				}
				if !bytes.Equal(want, got) {
					t.Fatalf("cuda differs from fast (%d vs %d canonical bytes)", len(got), len(want))
				}
			})
		}
	}
}

// TestCUDARunCoversEveryTestThatSelectsImplementations keeps make
// test-cuda honest: it runs only the equiv tests named in
// scripts/cuda-test.sh's EQUIV_IMPL_TESTS (the others compare ref with
// fast), so every test function that calls selectedImpls must be named
// there, or its CUDA half would silently never run.
func TestCUDARunCoversEveryTestThatSelectsImplementations(t *testing.T) {
	script, err := os.ReadFile("../scripts/cuda-test.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^EQUIV_IMPL_TESTS='([^']*)'`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/cuda-test.sh sets no EQUIV_IMPL_TESTS")
	}
	listed := regexp.MustCompile(string(m[1]))
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Test") || !callsSelectedImpls(fn) {
				continue
			}
			found++
			if !listed.MatchString(fn.Name.Name) {
				t.Errorf("%s (%s) calls selectedImpls but scripts/cuda-test.sh's EQUIV_IMPL_TESTS does not run it", fn.Name.Name, f)
			}
		}
	}
	if found == 0 {
		t.Fatal("found no test that calls selectedImpls: the scan is broken")
	}
}

// callsSelectedImpls reports whether fn's body calls selectedImpls.
func callsSelectedImpls(fn *ast.FuncDecl) bool {
	calls := false
	ast.Inspect(fn, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "selectedImpls" {
				calls = true
			}
		}
		return !calls
	})
	return calls
}
