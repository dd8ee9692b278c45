package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/mux"
)

// The tokens of the route-table tests, one per scope.
const (
	internalReadToken  = "read-token-0123456789abcdef"
	internalWriteToken = "write-token-0123456789abcdef"
	internalAdminToken = "admin-token-0123456789abcdef"
)

// newTokenServer is DefaultConfig with one token per scope.
func newTokenServer(t *testing.T) *Server {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens")
	body := "read " + internalReadToken + "\nwrite " + internalWriteToken + "\nadmin " + internalAdminToken + "\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Auth.TokensFile = file
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// registeredRoutes walks the router: every method route, and the paths of
// the catch-all routes that answer 405.
func registeredRoutes(t *testing.T, s *Server) (map[routeKey]bool, []string) {
	t.Helper()
	methodRoutes := map[routeKey]bool{}
	var catchAll []string
	err := s.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tmpl, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		methods, err := route.GetMethods()
		if err != nil {
			catchAll = append(catchAll, tmpl)
			return nil
		}
		for _, m := range methods {
			methodRoutes[routeKey{m, tmpl}] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return methodRoutes, catchAll
}

// TestEveryRouteHasAScope holds the route table to the router: a route
// registered without a row in routeScopes fails here (and is served as
// admin-only meanwhile), and so does a row no route serves.
func TestEveryRouteHasAScope(t *testing.T) {
	s := newTokenServer(t)
	table := routeScopes()
	methodRoutes, catchAll := registeredRoutes(t, s)
	if len(methodRoutes) < 10 {
		t.Fatalf("walked %d method routes; the router holds more: %v", len(methodRoutes), methodRoutes)
	}
	for k := range methodRoutes {
		if _, ok := table[k]; !ok {
			t.Errorf("%s %s has no scope: add it to routeScopes (server/auth_routes.go) and docs/api.md's table", k.method, k.path)
		}
	}
	for k := range table {
		if !methodRoutes[k] {
			t.Errorf("routeScopes names %s %s, which no route serves", k.method, k.path)
		}
	}
	_, paths := resolveScopes(ScopeOpen)
	for _, p := range catchAll {
		if !paths[p] {
			t.Errorf("%s is routed for any method but has no method route in routeScopes", p)
		}
	}
}

// TestEveryRouteAnswersAsItsScopeSays sends every registered route a
// request with no token and with each scope's token: below the route's
// scope it is refused (401 without a token, 403 with a lower one) before
// its handler runs, at or above it the handler answers.
func TestEveryRouteAnswersAsItsScopeSays(t *testing.T) {
	s := newTokenServer(t)
	methodRoutes, _ := registeredRoutes(t, s)
	tokens := map[Scope]string{ScopeRead: internalReadToken, ScopeWrite: internalWriteToken, ScopeAdmin: internalAdminToken}
	for k := range methodRoutes {
		need := s.auth.scopes[k]
		path := strings.NewReplacer("{name}", "transfer.filter_cp_rank", "{pool}", "p").Replace(k.path)
		for has := ScopeOpen; has <= ScopeAdmin; has++ {
			req := httptest.NewRequest(k.method, path, strings.NewReader("{}"))
			if has != ScopeOpen {
				req.Header.Set("Authorization", "Bearer "+tokens[has])
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			want := "answered by its handler"
			switch {
			case has < need && has == ScopeOpen:
				want = "refused 401"
			case has < need:
				want = "refused 403"
			}
			got := "answered by its handler"
			if rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden {
				got = "refused " + strconv.Itoa(rec.Code)
			}
			if got != want {
				t.Errorf("%s %s (scope %s) with credentials of scope %s (open: none): %d %s, want %s", k.method, path, need, has, rec.Code, rec.Body, want)
			}
		}
	}
}
