//go:build cuda

package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCUDACanaryReportsAFaultyDevice is serve --verify as the GPU path's
// canary: `--impl cuda --verify 1` against ref, and against the fast twin,
// over cp.split's golden corpus. A sound device gives 0 divergences. On the
// host emulation the test then makes the emulated device faulty
// (KVTWIN_EMU_FAULT, a switch of the emulation library only: the bit flip a
// failing device would make in cp_split_rows' output) and every answer the
// fault changes is reported, with a fixture line that fails against the
// faulty device and passes against ref. On a real driver only the sound
// run applies: its fault switch lives in the emulated device.
func TestCUDACanaryReportsAFaultyDevice(t *testing.T) {
	if err := catalog.CUDAStatus(); err != nil {
		t.Fatalf("the CUDA path is not available (a GPU run must not fall back): %v", err)
	}
	cases, err := fixtures.ReadFile(filepath.Join("..", "fixtures", "testdata", "cp.split.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, against := range []catalog.Impl{catalog.Ref, catalog.Fast} {
		t.Run("against="+string(against), func(t *testing.T) {
			base, _ := verifying(t, func(c *server.Config) {
				c.Impl = catalog.CUDA
				c.Verify.Against = against
				c.Verify.Queue = 2 * len(cases)
			})
			sendCorpus(t, base, "sound/", cases)
			if s := settled(t, base, int64(len(cases))); s.Total != (server.VerifyCounts{Agree: int64(len(cases))}) {
				t.Fatalf("a sound device: %+v, want %d agreeing", s.Total, len(cases))
			}
			if os.Getenv("KVTWIN_CUDA_DRIVER") != "emulation" {
				t.Logf("real driver: the sound run passed; the faulty-device run needs the emulation's switch")
				return
			}
			t.Setenv("KVTWIN_EMU_FAULT", "cp_split_rows")
			sendCorpus(t, base, "faulty/", cases)
			s := settled(t, base, int64(2*len(cases)))
			if s.Total.Diverge == 0 || s.Total.Dropped+s.Total.Error != 0 {
				t.Fatalf("a faulty device: %+v, want divergences and nothing dropped", s.Total)
			}
			lines := getLines(t, base+"/v1/verify/divergences")
			got, err := fixtures.Read(bytes.NewReader(lines))
			if err != nil || int64(len(got)) != s.Total.Diverge {
				t.Fatalf("%d fixture lines (%v) for %d divergences", len(got), err, s.Total.Diverge)
			}
			for _, l := range bytes.Split(bytes.TrimSpace(lines), []byte("\n")) {
				if !bytes.Contains(l, []byte(`"request_id":"faulty/`)) || !bytes.Contains(l, []byte(`"impl":"cuda"`)) {
					t.Errorf("a divergence not from the faulty run, or not naming cuda: %.300s", l)
				}
			}
			faulty := fixtures.NewLocal(catalog.CUDA, spec.DefaultLimits())
			if _, mm, err := fixtures.Check(got, faulty); mm == nil && err == nil {
				t.Error("the divergences' lines pass against the faulty device")
			}
			if _, mm, err := fixtures.Check(got, fixtures.NewLocal(catalog.Ref, spec.DefaultLimits())); mm != nil || err != nil {
				t.Errorf("the divergences' lines fail against ref: %v %v", mm, err)
			}
		})
	}
}

// sendCorpus posts every case, its name after prefix as X-Request-Id.
func sendCorpus(t *testing.T, base, prefix string, cases []fixtures.Case) {
	t.Helper()
	for _, c := range cases {
		if code := postOp(t, base, c.Op, prefix+c.Case, string(c.In)); code != http.StatusOK && code != http.StatusBadRequest {
			t.Fatalf("%s %s: %d", c.Op, c.Case, code)
		}
	}
}

func getLines(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b := readAll(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(fmt.Sprint(string(b))))
	}
	return b
}
