package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kvtwin/kvtwin/server"
)

// authFlags adds `kvtwin serve`'s authentication and TLS flags, onto a
// (docs/api.md, "Authentication" and "TLS").
func authFlags(f *pflag.FlagSet, a *server.AuthConfig) {
	f.StringVar(&a.TokensFile, "auth-tokens", "", "bearer-token `FILE`: one \"SCOPE TOKEN\" a line, SCOPE read, write or admin (admin ⊇ write ⊇ read), re-read when it changes; every route but /healthz, /readyz and an open /metrics then needs a token (docs/api.md#authentication)")
	f.StringVar(&a.TLSCertFile, "tls-cert", "", "serve HTTPS with this PEM certificate chain `FILE` (with --tls-key), re-read when it changes; a pair that does not load keeps the previous one")
	f.StringVar(&a.TLSKeyFile, "tls-key", "", "the PEM private key `FILE` of --tls-cert")
	f.StringVar(&a.TLSClientCAFile, "tls-client-ca", "", "PEM `FILE` of the CAs client certificates must chain to; every route but /healthz, /readyz and an open /metrics then needs a verified client certificate (with --tls-cert)")
	f.Var(metricsScopeFlag{&a.MetricsScope}, "metrics-auth", "what GET /metrics needs: open, or read (a read token and, with --tls-client-ca, a client certificate)")
	f.BoolVar(&a.InsecureNoAuth, "insecure-no-auth", false, "serve a non-loopback --addr without --auth-tokens or --tls-client-ca: anyone who reaches the port may create, fill and delete pools")
	f.DurationVar(&a.ReloadInterval, "auth-reload-interval", a.ReloadInterval, "how often --auth-tokens, --tls-cert, --tls-key and --tls-client-ca are re-read for changes")
}

// metricsScopeFlag is --metrics-auth: open or read.
type metricsScopeFlag struct{ p *server.Scope }

func (f metricsScopeFlag) String() string {
	if f.p == nil {
		return server.ScopeOpen.String()
	}
	return f.p.String()
}

func (f metricsScopeFlag) Set(s string) error {
	sc, err := server.ParseScope(s)
	if err != nil || (sc != server.ScopeOpen && sc != server.ScopeRead) {
		return fmt.Errorf("want open or read")
	}
	*f.p = sc
	return nil
}

func (f metricsScopeFlag) Type() string { return "open|read" }
