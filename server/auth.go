package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvtwin/kvtwin/spec"
)

// This file holds the authentication and TLS configuration and the rule
// that keeps an unauthenticated server off the network (docs/api.md,
// "Authentication" and "TLS"). Tokens are in auth_tokens.go, the route table
// and the request check in auth_routes.go, certificates in tls.go, the
// reload of all three files in reload.go.

// AuthConfig configures who may call the server and over what: bearer
// tokens with scopes, TLS with certificates reloaded from disk, and client
// certificates. DefaultAuthConfig is plain HTTP with no authentication,
// which New accepts only on a loopback Addr.
type AuthConfig struct {
	// TokensFile is the bearer-token file (`SCOPE TOKEN` lines; docs/api.md
	// "Token file"), re-read when it changes. Empty: no tokens are needed.
	TokensFile string
	// TLSCertFile and TLSKeyFile are the server's PEM certificate chain and
	// private key, re-read when either changes; a pair that does not load
	// keeps the previous one. Both or neither: empty serves plain HTTP.
	TLSCertFile, TLSKeyFile string
	// TLSClientCAFile is a PEM bundle of the CAs client certificates must
	// chain to, re-read when it changes. Set, every route but the open ones
	// needs a verified client certificate. Needs TLSCertFile.
	TLSClientCAFile string
	// MetricsScope is what GET /metrics needs: ScopeOpen (the default) or
	// ScopeRead.
	MetricsScope Scope
	// InsecureNoAuth lets a non-loopback Addr serve without tokens or
	// client certificates (--insecure-no-auth): anyone who reaches the
	// port may then create, fill and delete pools.
	InsecureNoAuth bool
	// ReloadInterval is how often the files above are re-read to notice a
	// change (> 0); a change is served within about one interval.
	ReloadInterval time.Duration
}

// DefaultReloadInterval is DefaultConfig's AuthConfig.ReloadInterval:
// Kubernetes takes up to a minute to project a changed Secret, and reading
// three small files every 5 s costs nothing measurable.
const DefaultReloadInterval = 5 * time.Second

// DefaultAuthConfig is no tokens, plain HTTP and open metrics, with files
// re-read every DefaultReloadInterval once configured.
func DefaultAuthConfig() AuthConfig {
	return AuthConfig{MetricsScope: ScopeOpen, ReloadInterval: DefaultReloadInterval}
}

// authenticates reports whether callers must prove who they are: a token,
// a client certificate, or both.
func (a AuthConfig) authenticates() bool { return a.TokensFile != "" || a.TLSClientCAFile != "" }

// mode names the authentication in force for the "serving" log record.
func (a AuthConfig) mode() string {
	switch {
	case a.TokensFile != "" && a.TLSClientCAFile != "":
		return "tokens+client_cert"
	case a.TokensFile != "":
		return "tokens"
	case a.TLSClientCAFile != "":
		return "client_cert"
	}
	return "none"
}

// authState is a server's authentication at run time: the token set and
// TLS state in service, the route table, the reloader that swaps files in,
// and the failure counters.
type authState struct {
	cfg AuthConfig
	// tokens is the token set in service; nil without TokensFile.
	tokens atomic.Pointer[tokenSet]
	// tls is the TLS in service; nil without TLSCertFile.
	tls    *tlsState
	reload *reloader
	// scopes is routeScopes with /metrics resolved to MetricsScope.
	scopes map[routeKey]Scope
	// paths holds every path of scopes, to recognise a path's 405 route.
	paths    map[string]bool
	failures *prometheus.CounterVec
}

// newAuth loads cfg.Auth's files (a file that does not load is a
// configuration error) and builds the route table.
func newAuth(cfg Config) (*authState, error) {
	a := &authState{cfg: cfg.Auth, reload: newReloader(cfg.Auth.ReloadInterval, cfg.Logger)}
	a.scopes, a.paths = resolveScopes(cfg.Auth.MetricsScope)
	if f := cfg.Auth.TokensFile; f != "" {
		a.reload.add("tokens", "Auth.TokensFile", []string{f}, func(b [][]byte) error {
			set, err := parseTokens(f, b[0])
			if err == nil {
				a.tokens.Store(set)
			}
			return err
		})
	}
	if cfg.Auth.TLSCertFile != "" {
		a.tls = newTLSState(cfg.Auth.TLSClientCAFile != "")
		if f := cfg.Auth.TLSClientCAFile; f != "" {
			// Before the pair, so the first configuration published has both.
			a.reload.add("tls_client_ca", "Auth.TLSClientCAFile", []string{f}, a.tls.loadClientCA(f))
		}
		a.reload.add("tls_cert", "Auth.TLSCertFile", []string{cfg.Auth.TLSCertFile, cfg.Auth.TLSKeyFile},
			a.tls.loadCert(cfg.Auth.TLSCertFile, cfg.Auth.TLSKeyFile))
	}
	if err := a.reload.loadAll(); err != nil {
		return nil, err
	}
	a.failures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kvtwin_auth_failures_total",
		Help: "Requests refused by authentication, by reason: missing, malformed or unknown_token (401), insufficient_scope or no_client_cert (403).",
	}, []string{"reason"})
	for _, r := range []string{reasonMissing, reasonMalformed, reasonUnknown, reasonScope, reasonNoClientCert} {
		a.failures.WithLabelValues(r)
	}
	return a, nil
}

// collectors are the authentication metrics: failures, reloads, and the
// tokens and certificate in service (when configured).
func (a *authState) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{a.failures, a.reload.reloads}
	if a.cfg.TokensFile != "" {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kvtwin_auth_tokens",
			Help: "Bearer tokens in service (Auth.TokensFile, --auth-tokens).",
		}, func() float64 { return float64(a.tokens.Load().len()) }))
	}
	if a.tls != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kvtwin_tls_cert_not_after_seconds",
			Help: "Expiry of the serving certificate in service, Unix seconds: alert well before it.",
		}, func() float64 { return float64(a.tls.notAfter.Load()) }))
	}
	return cs
}

// exposureBound is the bound a non-loopback address without
// authentication breaks, naming both the Config fields and the flags.
const exposureBound = "a loopback address (127.0.0.1, ::1, localhost) unless callers are authenticated: " +
	"set Auth.TokensFile (--auth-tokens) or Auth.TLSClientCAFile (--tls-client-ca), " +
	"or Auth.InsecureNoAuth (--insecure-no-auth) to let anyone who reaches the port create, fill and delete pools"

// validate checks the authentication fields against each other and addr,
// the listen address, as an *spec.InputError wrapping ErrBadConfig.
func (a AuthConfig) validate(addr string) error {
	switch {
	case (a.TLSCertFile == "") != (a.TLSKeyFile == ""):
		return spec.Reject(ErrBadConfig, "Auth.TLSKeyFile", a.TLSKeyFile,
			fmt.Sprintf("set together with Auth.TLSCertFile (%q): --tls-cert and --tls-key go together", a.TLSCertFile))
	case a.TLSClientCAFile != "" && a.TLSCertFile == "":
		return spec.Reject(ErrBadConfig, "Auth.TLSClientCAFile", a.TLSClientCAFile,
			"set only with Auth.TLSCertFile: client certificates need TLS (--tls-cert, --tls-key)")
	case a.MetricsScope != ScopeOpen && a.MetricsScope != ScopeRead:
		return spec.Reject(ErrBadConfig, "Auth.MetricsScope", a.MetricsScope.String(), "open or read")
	case a.ReloadInterval <= 0:
		return spec.Reject(ErrBadConfig, "Auth.ReloadInterval", a.ReloadInterval.String(), "> 0")
	case a.InsecureNoAuth && a.authenticates():
		return spec.Reject(ErrBadConfig, "Auth.InsecureNoAuth", true,
			"false when Auth.TokensFile or Auth.TLSClientCAFile authenticates callers (--insecure-no-auth contradicts them)")
	}
	host, _, err := net.SplitHostPort(addr)
	if err == nil && !a.authenticates() && !a.InsecureNoAuth && !loopbackHost(host) {
		return spec.Reject(ErrBadConfig, "Addr", addr, exposureBound)
	}
	return nil
}

// checkListener refuses to serve unauthenticated on a listener that is
// not loopback, whatever Addr said (Serve may be handed any listener), and
// warns when bearer tokens would cross the network in clear text.
func (a *authState) checkListener(addr net.Addr, log *slog.Logger) error {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() {
		return nil // a Unix socket is as local as its file's permissions
	}
	if !a.cfg.authenticates() && !a.cfg.InsecureNoAuth {
		return fmt.Errorf("server: serve %s: %w", addr, spec.Reject(ErrBadConfig, "listener", addr.String(), exposureBound))
	}
	if a.cfg.TokensFile != "" && a.tls == nil {
		log.Warn("bearer tokens cross the network in clear text: serve TLS (--tls-cert, --tls-key) unless a proxy in front of kvtwin terminates it",
			"addr", addr.String())
	}
	return nil
}

// loopbackHost reports whether host (from host:port) names only this
// machine: localhost or a loopback IP. An empty host, 0.0.0.0 and :: bind
// every interface; any other name may resolve anywhere, so it counts as
// exposed.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Scope is what a bearer token may do; each route needs one
// (auth_routes.go). Scopes are hierarchical: admin ⊇ write ⊇ read, so a
// token may call every route its scope or a lower one needs.
type Scope uint8

// The scopes, lowest first.
const (
	// ScopeOpen needs no credentials: /healthz, /readyz, and /metrics by default.
	ScopeOpen Scope = iota
	// ScopeRead runs ops and the preflight, scores, matches and lists.
	ScopeRead
	// ScopeWrite mutates pools and the index: create, insert, lock, unlock,
	// evict, and a match that locks.
	ScopeWrite
	// ScopeAdmin deletes pools, and will own any source change.
	ScopeAdmin
)

// String is the scope's name: open, read, write or admin.
func (s Scope) String() string {
	switch s {
	case ScopeOpen:
		return "open"
	case ScopeRead:
		return "read"
	case ScopeWrite:
		return "write"
	case ScopeAdmin:
		return "admin"
	}
	return fmt.Sprintf("Scope(%d)", uint8(s))
}

// ParseScope reads a scope name: open, read, write or admin.
func ParseScope(name string) (Scope, error) {
	for s := ScopeOpen; s <= ScopeAdmin; s++ {
		if s.String() == name {
			return s, nil
		}
	}
	return ScopeOpen, fmt.Errorf("scope %q: want open, read, write or admin", name)
}
