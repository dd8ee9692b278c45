package server_test

import (
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

func TestDefaultConfigIsValidAndBindsLoopback(t *testing.T) {
	cfg := server.DefaultConfig()
	if host, _, err := net.SplitHostPort(cfg.Addr); err != nil || host != "127.0.0.1" {
		t.Errorf("default Addr %q, want 127.0.0.1:port", cfg.Addr)
	}
	if cfg.Impl != catalog.Fast || cfg.MaxBodyBytes != 64<<20 || cfg.Limits != server.DefaultLimits() ||
		cfg.Prefix != prefix.DefaultLimits() {
		t.Errorf("defaults %+v", cfg)
	}
	if _, err := server.New(cfg); err != nil {
		t.Errorf("New(DefaultConfig()) = %v", err)
	}
}

func TestNewRejectsEachOutOfBoundsFieldNamingFieldValueAndBound(t *testing.T) {
	for _, tc := range []struct {
		field, value, bound string
		edit                func(*server.Config)
	}{
		{"Addr", "localhost", "host:port", func(c *server.Config) { c.Addr = "localhost" }},
		{"Impl", "gpu", "ref, fast or cuda", func(c *server.Config) { c.Impl = "gpu" }},
		{"Impl", "", "ref, fast or cuda", func(c *server.Config) { c.Impl = "" }},
		{"Limits.MaxOutputBytes", "0", ">= 1", func(c *server.Config) { c.Limits = spec.Limits{} }},
		{"MaxBodyBytes", "0", ">= 1", func(c *server.Config) { c.MaxBodyBytes = 0 }},
		{"MaxConcurrent", "-1", ">= 1", func(c *server.Config) { c.MaxConcurrent = -1 }},
		{"ReadHeaderTimeout", "0s", "> 0", func(c *server.Config) { c.ReadHeaderTimeout = 0 }},
		{"ReadTimeout", "-1s", "> 0", func(c *server.Config) { c.ReadTimeout = -time.Second }},
		{"WriteTimeout", "0s", "> 0", func(c *server.Config) { c.WriteTimeout = 0 }},
		{"IdleTimeout", "0s", "> 0", func(c *server.Config) { c.IdleTimeout = 0 }},
		{"ShutdownTimeout", "0s", "> 0", func(c *server.Config) { c.ShutdownTimeout = 0 }},
		{"MaxJSONDepth", "0", "in [1, 10000]", func(c *server.Config) { c.MaxJSONDepth = 0 }},
		{"MaxJSONDepth", "10001", "in [1, 10000]", func(c *server.Config) { c.MaxJSONDepth = 10001 }},
		{"OpTimeout", "30s", "< ShutdownTimeout (30s)", func(c *server.Config) { c.OpTimeout = 30 * time.Second }},
		{"OpTimeout", "0s", "> 0", func(c *server.Config) { c.OpTimeout = 0 }},
		{"MinTransferRate", "0", ">= 1 byte/s", func(c *server.Config) { c.MinTransferRate = 0 }},
		{"TransferGrace", "0s", "> 0", func(c *server.Config) { c.TransferGrace = 0 }},
		{"MaxBodyBytesInFlight", "67108864", ">= MaxBodyBytes+1", func(c *server.Config) { c.MaxBodyBytesInFlight = 64 << 20 }},
		{"MaxConnections", "0", ">= 1", func(c *server.Config) { c.MaxConnections = 0 }},
		{"Limits.MaxOutputRatio", "-1", ">= 0", func(c *server.Config) { c.Limits.MaxOutputRatio = -1 }},
		{"Logger", "nil", "*slog.Logger", func(c *server.Config) { c.Logger = nil }},
		{"Prefix.MaxPools", "0", ">= 1", func(c *server.Config) { c.Prefix.MaxPools = 0 }},
		{"Prefix.MaxPoolCapacity", "-1", ">= 1", func(c *server.Config) { c.Prefix.MaxPoolCapacity = -1 }},
		{"Prefix.MaxRequestTokens", "0", ">= 1", func(c *server.Config) { c.Prefix.MaxRequestTokens = 0 }},
		{"Entries", "[]", "at least one entry", func(c *server.Config) { c.Entries = []catalog.Entry{} }},
		{"Entries[1]", "transfer.filter_cp_rank", "not already served", func(c *server.Config) {
			c.Entries = []catalog.Entry{catalog.TransferFilterCPRank(), catalog.TransferFilterCPRank()}
		}},
	} {
		cfg := server.DefaultConfig()
		cfg.Logger = slog.New(slog.DiscardHandler)
		tc.edit(&cfg)
		_, err := server.New(cfg)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, server.ErrBadConfig) {
			t.Errorf("%s: New = %v, want an input error wrapping ErrBadConfig", tc.field, err)
			continue
		}
		if ie.Field != tc.field || !strings.HasPrefix(err.Error(), tc.field+" = "+tc.value+":") || !strings.Contains(ie.Bound, tc.bound) {
			t.Errorf("%s: %v; want field %s, value %s and bound %q", tc.field, err, tc.field, tc.value, tc.bound)
		}
	}
}

func TestNewRefusesCUDAWhenAnOpHasNoCUDATwinAndSaysWhy(t *testing.T) {
	entry, _ := catalog.Lookup(filterOp)
	if slices.Contains(entry.Impls(), catalog.CUDA) {
		t.Skip("built with a cuda twin")
	}
	cfg := server.DefaultConfig()
	cfg.Impl = catalog.CUDA
	cfg.Entries = []catalog.Entry{entry}
	_, err := server.New(cfg)
	if !errors.Is(err, server.ErrBadConfig) || !errors.Is(err, catalog.ErrImplUnavailable) {
		t.Fatalf("New with Impl cuda = %v, want ErrBadConfig and ErrImplUnavailable", err)
	}
	for _, says := range []string{"Impl = cuda", filterOp, "-tags cuda", "never falls back"} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("%q does not say %q", err, says)
		}
	}
}
