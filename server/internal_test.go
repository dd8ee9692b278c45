package server

import (
	"testing"
	"time"
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
