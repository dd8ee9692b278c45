package cuda_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommittedPTXMatchesItsSource checks, without nvcc, that every
// kernels/<base>.cu has a committed kernels/<base>.ptx generated from its
// current text and every header's: make ptx records the SHA-256 of the
// source followed by all kernels/*.h in byte order (scripts/ptx.sh), so an
// edit of a shared header marks every module stale. An edited kernel with stale PTX would run old
// code on the GPU while the emulation (compiled from the source) runs new.
// `make ptx-check` additionally rebuilds the PTX and compares it byte for byte.
func TestCommittedPTXMatchesItsSource(t *testing.T) {
	header := kernelHeaders(t)
	sources, _ := filepath.Glob("kernels/*.cu")
	if len(sources) == 0 {
		t.Fatal("no kernels/*.cu")
	}
	for _, src := range sources {
		body, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(append(body, header...))
		ptx := strings.TrimSuffix(src, ".cu") + ".ptx"
		got, err := recordedSum(ptx)
		if err != nil {
			t.Errorf("%s: %v (run make ptx)", ptx, err)
			continue
		}
		if want := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s is stale: generated from source sha256 %s, the source is now %s; run make ptx", ptx, got, want)
		}
	}
}

// kernelHeaders returns every kernels/*.h concatenated in byte order of
// their names (filepath.Glob sorts), as scripts/ptx.sh hashes them.
func kernelHeaders(t *testing.T) []byte {
	t.Helper()
	names, _ := filepath.Glob("kernels/*.h")
	if len(names) == 0 {
		t.Fatal("no kernels/*.h")
	}
	var all []byte
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

func recordedSum(ptx string) (string, error) {
	f, err := os.Open(ptx)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 0; i < 3 && sc.Scan(); i++ {
		if v, ok := strings.CutPrefix(sc.Text(), "// source-sha256: "); ok {
			return v, nil
		}
	}
	return "", os.ErrNotExist
}
