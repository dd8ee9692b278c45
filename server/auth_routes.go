package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/mux"
)

// routeKey is one registered route: its method and mux path template.
type routeKey struct{ method, path string }

// scopeOfMetrics stands in routeScopes for /metrics, whose scope is
// AuthConfig.MetricsScope.
const scopeOfMetrics Scope = 255

// routeScopes is THE table of what each route needs: every method route
// the router registers must be in it (TestEveryRouteHasAScope walks the
// router), and a route missing from it needs admin. Each path's catch-all
// route, which only answers 405, is open. docs/api.md
// ("Authentication") lists the same table.
func routeScopes() map[routeKey]Scope {
	get, post, put, del := http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	return map[routeKey]Scope{
		// Probes: a kubelet holds no token and no client certificate.
		{get, "/healthz"}: ScopeOpen,
		{get, "/readyz"}:  ScopeOpen,
		{get, "/metrics"}: scopeOfMetrics,

		// Reads: ops and the preflight compute without changing state;
		// scores, matches and listings read pools and the event index.
		{get, "/v1/ops"}:                  ScopeRead,
		{post, "/v1/ops/{name}"}:          ScopeRead,
		{post, PreflightPath}:             ScopeRead,
		{get, "/v1/events/sources"}:       ScopeRead,
		{get, "/v1/verify"}:               ScopeRead,
		{get, "/v1/prefix"}:               ScopeRead,
		{post, "/v1/prefix:score"}:        ScopeRead,
		{get, "/v1/prefix/{pool}"}:        ScopeRead,
		{post, "/v1/prefix/{pool}/match"}: ScopeRead, // "lock": true needs matchLockScope

		// Writes: pool and index mutations.
		{post, "/v1/prefix/{pool}"}:        ScopeWrite,
		{post, "/v1/prefix/{pool}/insert"}: ScopeWrite,
		{post, "/v1/prefix/{pool}/lock"}:   ScopeWrite,
		{post, "/v1/prefix/{pool}/unlock"}: ScopeWrite,
		{post, "/v1/prefix/{pool}/evict"}:  ScopeWrite,

		// Admin: what destroys state others rely on; changing an event
		// source drops its engines, which every router's scores rely on.
		{del, "/v1/prefix/{pool}"}:         ScopeAdmin,
		{put, "/v1/events/sources/{name}"}: ScopeAdmin,
		{del, "/v1/events/sources/{name}"}: ScopeAdmin,
		// Sampled requests' inputs, whoever sent them.
		{get, "/v1/verify/divergences"}: ScopeAdmin,
	}
}

// matchLockScope is what a match that locks its path ("lock": true) needs:
// a lock protects the path from eviction until someone with write unlocks
// it, so it is a write even though the route reads.
const matchLockScope = ScopeWrite

// resolveScopes is routeScopes with /metrics' scope filled in, and the set
// of paths it names.
func resolveScopes(metrics Scope) (map[routeKey]Scope, map[string]bool) {
	scopes := routeScopes()
	paths := make(map[string]bool, len(scopes))
	for k, sc := range scopes {
		if sc == scopeOfMetrics {
			scopes[k] = metrics
		}
		paths[k.path] = true
	}
	return scopes, paths
}

// The reasons of kvtwin_auth_failures_total.
const (
	reasonMissing      = "missing"            // no Authorization: Bearer header
	reasonMalformed    = "malformed"          // a Bearer header without one token
	reasonUnknown      = "unknown_token"      // a token not in the file
	reasonScope        = "insufficient_scope" // a token whose scope is too low
	reasonNoClientCert = "no_client_cert"     // no verified client certificate
)

// realm is the realm of every WWW-Authenticate challenge.
const realm = `Bearer realm="kvtwin"`

// scopeKey is the request-context key of the scope authorize granted.
type scopeKey struct{}

// authorize is the router's middleware: it refuses a request to a route
// that needs more than the caller proved, before its body is read, and
// records the scope granted for handlers whose body may ask for more
// (requireScope). Without tokens or client certificates it is the
// identity.
func (s *Server) authorize(next http.Handler) http.Handler {
	a := s.auth
	if !a.cfg.authenticates() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, need := a.routeScope(r)
		if need == ScopeOpen {
			next.ServeHTTP(w, r)
			return
		}
		granted, aerr := a.check(r, need, key.method+" "+key.path)
		if aerr != nil {
			s.writeError(w, r, aerr)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), scopeKey{}, granted)))
	})
}

// routeScope looks the matched route up in the table: a method route by
// method and template, a path's 405 catch-all as open, anything else as
// admin (fail closed).
func (a *authState) routeScope(r *http.Request) (routeKey, Scope) {
	route := mux.CurrentRoute(r)
	if route == nil {
		return routeKey{r.Method, r.URL.Path}, ScopeAdmin
	}
	tmpl, _ := route.GetPathTemplate()
	key := routeKey{r.Method, tmpl}
	if need, ok := a.scopes[key]; ok {
		return key, need
	}
	if _, err := route.GetMethods(); err != nil && a.paths[tmpl] {
		return key, ScopeOpen
	}
	return key, ScopeAdmin
}

// check proves the caller may call what, which needs scope need: a
// verified client certificate when client CAs are configured, then a
// bearer token of scope need or above when tokens are. It returns the
// scope granted (admin when only certificates are checked).
func (a *authState) check(r *http.Request, need Scope, what string) (Scope, *apiError) {
	if a.tls != nil && a.tls.requireClientCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		return 0, a.refuse(reasonNoClientCert, &apiError{status: http.StatusForbidden, message: fmt.Sprintf(
			"%s needs a client certificate that chains to the server's client CA (--tls-client-ca); this connection presented none", what)})
	}
	set := a.tokens.Load()
	if set == nil {
		return ScopeAdmin, nil
	}
	token, reason := bearerToken(r.Header)
	switch reason {
	case reasonMissing:
		return 0, a.refuse(reason, &apiError{status: http.StatusUnauthorized, challenge: realm, message: fmt.Sprintf(
			"%s needs a bearer token of scope %s or above (Authorization: Bearer TOKEN; docs/api.md#authentication)", what, need)})
	case reasonMalformed:
		return 0, a.refuse(reason, &apiError{status: http.StatusUnauthorized, challenge: realm + `, error="invalid_request"`,
			message: "the Authorization header must be one `Bearer TOKEN`, with one token"})
	}
	scope, ok := set.lookup(token)
	if !ok {
		return 0, a.refuse(reasonUnknown, &apiError{status: http.StatusUnauthorized, challenge: realm + `, error="invalid_token"`,
			message: "the bearer token is not one of the server's (--auth-tokens)"})
	}
	if scope < need {
		return 0, a.refuse(reasonScope, scopeError(what, need, scope))
	}
	return scope, nil
}

// scopeError is the 403 of a token whose scope is below need.
func scopeError(what string, need, has Scope) *apiError {
	return &apiError{status: http.StatusForbidden,
		challenge: fmt.Sprintf(`%s, error="insufficient_scope", scope="%s"`, realm, need),
		message:   fmt.Sprintf("%s needs a token of scope %s or above; this token's scope is %s (admin ⊇ write ⊇ read)", what, need, has)}
}

// refuse counts a refusal by reason and returns its answer.
func (a *authState) refuse(reason string, e *apiError) *apiError {
	a.failures.WithLabelValues(reason).Inc()
	return e
}

// bearerToken reads the one Authorization: Bearer token of h (the scheme
// is case-insensitive, RFC 9110 §11.1). A header of another scheme is no
// bearer credential (missing, as RFC 6750 §3.1 says); two headers, or a
// Bearer header without exactly one token, are malformed.
func bearerToken(h http.Header) (string, string) {
	vals := h.Values("Authorization")
	switch {
	case len(vals) == 0:
		return "", reasonMissing
	case len(vals) > 1:
		return "", reasonMalformed
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", reasonMissing
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", reasonMalformed
	}
	return token, ""
}

// requireScope refuses, with the 403 the route check would give, a request
// whose body asks for more than its route needs (a match that locks).
func (s *Server) requireScope(r *http.Request, need Scope, what string) *apiError {
	if !s.auth.cfg.authenticates() {
		return nil
	}
	granted, _ := r.Context().Value(scopeKey{}).(Scope)
	if granted >= need {
		return nil
	}
	return s.auth.refuse(reasonScope, scopeError(what, need, granted))
}
