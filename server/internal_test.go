package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
)

func TestTheHTTPServerCarriesTheConfiguredTimeouts(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ReadHeaderTimeout, cfg.ReadTimeout, cfg.WriteTimeout, cfg.IdleTimeout = 1*time.Second, 2*time.Second, 3*time.Second, 4*time.Second
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := s.httpServer()
	if hs.ReadHeaderTimeout != time.Second || hs.ReadTimeout != 2*time.Second || hs.WriteTimeout != 3*time.Second ||
		hs.IdleTimeout != 4*time.Second || hs.Addr != cfg.Addr || hs.ErrorLog == nil {
		t.Errorf("http.Server %+v does not carry %+v", hs, cfg)
	}
}

// A server whose Impl has no prefix-pool tree (cuda, reachable only on a
// usable device) refuses pool creates with 400 naming why, and answers the
// other pool routes as for no pools: nothing falls back to another tree.
func TestPoolCreateUnderAnImplWithoutATreeIsRefusedNamingWhy(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, s.poolsUnavailable = catalog.RadixTree(catalog.CUDA)
	s.cfg.Impl = catalog.CUDA
	h := s.routes()
	for _, tc := range []struct {
		method, path string
		status       int
		says         []string
	}{
		{http.MethodPost, "/v1/prefix/p", http.StatusBadRequest, []string{"impl = cuda", "radix tree", "no CUDA twin", "never falls back"}},
		{http.MethodGet, "/v1/prefix", http.StatusOK, []string{`"pools":[]`}},
		{http.MethodGet, "/v1/prefix/p", http.StatusNotFound, nil},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(`{"page_size":1,"capacity_tokens":8}`)))
		if rec.Code != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.status)
		}
		for _, says := range tc.says {
			if !strings.Contains(rec.Body.String(), says) {
				t.Errorf("%s %s: %s does not say %q", tc.method, tc.path, rec.Body, says)
			}
		}
	}
}
