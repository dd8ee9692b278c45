package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// startTokens is a server (behind httptest) whose token file holds body.
func startTokens(t *testing.T, body string, edit func(*server.Config)) *httptest.Server {
	t.Helper()
	file := writeFile(t, t.TempDir(), "tokens", body)
	ts, _ := start(t, func(c *server.Config) {
		c.Auth.TokensFile = file
		if edit != nil {
			edit(c)
		}
	})
	return ts
}

func TestAuthTokenFileRefusesABadLineNamingFileLineAndBound(t *testing.T) {
	secret := "s3cret-0123456789abcdef"
	var tooMany strings.Builder
	for i := range server.MaxTokens + 1 {
		fmt.Fprintf(&tooMany, "read token-%016d\n", i)
	}
	for _, tc := range []struct {
		name, body, field, value, bound string
	}{
		{"unknown scope", "rwite " + secret, "line 1: scope", "rwite", "read, write or admin"},
		{"open is no token scope", "open " + secret, "line 1: scope", "open", "read, write or admin"},
		{"three fields", "# c\nread " + secret + " extra", "line 2: fields", "3", "2: SCOPE TOKEN"},
		{"one field", secret, "line 1: fields", "1", "2: SCOPE TOKEN"},
		{"short token", "read 0123456789abcde", "line 1: token", "15 bytes", "16 to 4096 bytes"},
		{"long token", "read " + strings.Repeat("a", server.MaxTokenBytes+1), "line 1: token", "4097 bytes", "16 to 4096 bytes"},
		{"byte outside the alphabet", "read s3cret:0123456789abcdef", "line 1: token", "offset 6", "A-Z a-z 0-9"},
		{"= inside", "read s3cret=0123456789abcdef", "line 1: token", "offset 6", "then any ="},
		{"short digest", "read sha256:abcd", "line 1: token", "4 hex digits", "64 hex digits"},
		{"digest not hex", "read sha256:" + strings.Repeat("z", 64), "line 1: token", "not hex", "64 hex digits"},
		{"a token twice", "read " + secret + "\n\nadmin " + secret, "line 3: token", "the token of line 1", "one token, one scope"},
		{"a token and its digest", "read " + secret + "\nwrite sha256:" + hexDigest(secret), "line 2: token", "the token of line 1", "each token once"},
		{"too many", tooMany.String(), "line 1025: tokens", "1025", "at most 1024 tokens"},
		{"no token", "# nothing yet\n\n", "", "no tokens", "at least one"},
	} {
		file := writeFile(t, t.TempDir(), "tokens", tc.body)
		cfg := testConfig(&logBuffer{})
		cfg.Auth.TokensFile = file
		_, err := server.New(cfg)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, server.ErrBadConfig) {
			t.Errorf("%s: New = %v, want an input error wrapping ErrBadConfig", tc.name, err)
			continue
		}
		if !strings.HasPrefix(ie.Field, "Auth.TokensFile "+file) || !strings.HasSuffix(ie.Field, tc.field) ||
			!strings.Contains(fmt.Sprint(ie.Value), tc.value) || !strings.Contains(ie.Bound, tc.bound) {
			t.Errorf("%s: %v; want field ending %q, value %q, bound %q", tc.name, err, tc.field, tc.value, tc.bound)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error quotes the token: %v", tc.name, err)
		}
	}
}

func hexDigest(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

// TestAuthTokenFileEntryMayHoldTheTokensDigest serves docs/api.md's
// example token file, whose admin line is the digest of a token computed
// by sha256sum: that token is admin, and the digest itself is no token.
func TestAuthTokenFileEntryMayHoldTheTokensDigest(t *testing.T) {
	const docsExample = `# kvtwin tokens: SCOPE TOKEN
read  7f1c0d6b5e8a4c2f9e3b1a0d8c7e6f5a
write 4b9e2d7c1a8f6e3d5c0b9a8e7d6c5b4a
admin sha256:3a6b2c5d26320579608e5efb70316bb386c583e13f84f873b21b9f3f868be1e7
`
	ts := startTokens(t, docsExample, nil)
	c := ts.Client()
	if r := call(t, c, http.MethodDelete, ts.URL+"/v1/prefix/none", "9d2e6c1b0a7f4e3d8c5b2a1f0e9d8c7b", ""); r.status != http.StatusNotFound {
		t.Fatalf("DELETE with the token whose digest is the admin line: %d %s, want 404 (admitted, no such pool)", r.status, r.body)
	}
	openAIError(t, call(t, c, http.MethodDelete, ts.URL+"/v1/prefix/none", "4b9e2d7c1a8f6e3d5c0b9a8e7d6c5b4a", ""), http.StatusForbidden, "PermissionDeniedError")
	openAIError(t, call(t, c, http.MethodGet, ts.URL+"/v1/ops", "sha256:3a6b2c5d26320579608e5efb70316bb386c583e13f84f873b21b9f3f868be1e7", ""),
		http.StatusUnauthorized, "AuthenticationError")
}

// TestAuthRefusesMissingMalformedAndUnknownTokensWith401: each refusal is
// the OpenAI error shape with the RFC 6750 challenge of its reason, and
// counted by reason.
func TestAuthRefusesMissingMalformedAndUnknownTokensWith401(t *testing.T) {
	ts := startTokens(t, allScopesTokenFile, nil)
	for _, tc := range []struct {
		name      string
		headers   []string
		challenge string
	}{
		{"no header", nil, `Bearer realm="kvtwin"`},
		{"another scheme", []string{"Basic dXNlcjpwYXNz"}, `Bearer realm="kvtwin"`},
		{"Bearer without a token", []string{"Bearer"}, `Bearer realm="kvtwin", error="invalid_request"`},
		{"two tokens", []string{"Bearer " + readToken + " " + writeToken}, `Bearer realm="kvtwin", error="invalid_request"`},
		{"two headers", []string{"Bearer " + readToken, "Bearer " + readToken}, `Bearer realm="kvtwin", error="invalid_request"`},
		{"unknown token", []string{"Bearer " + readToken + "x"}, `Bearer realm="kvtwin", error="invalid_token"`},
		{"a token's prefix", []string{"Bearer " + readToken[:20]}, `Bearer realm="kvtwin", error="invalid_token"`},
	} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/ops", nil)
		for _, h := range tc.headers {
			req.Header.Add("Authorization", h)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var r response
		r.status, r.header = resp.StatusCode, resp.Header
		r.body = readAll(t, resp)
		openAIError(t, r, http.StatusUnauthorized, "AuthenticationError")
		if got := r.header.Get("WWW-Authenticate"); got != tc.challenge {
			t.Errorf("%s: WWW-Authenticate %q, want %q", tc.name, got, tc.challenge)
		}
	}
	if r := call(t, ts.Client(), http.MethodGet, ts.URL+"/v1/ops", "", ""); r.status != http.StatusUnauthorized {
		t.Fatal(r.status)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/ops", nil)
	req.Header.Set("Authorization", "bearer "+readToken) // the scheme is case-insensitive
	if resp, err := ts.Client().Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("lower-case bearer: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for reason, want := range map[string]float64{"missing": 3, "malformed": 3, "unknown_token": 2, "insufficient_scope": 0} {
		if got := metric(t, ts, `kvtwin_auth_failures_total{reason="`+reason+`"}`); got != want {
			t.Errorf("failures for %s = %v, want %v", reason, got, want)
		}
	}
}

// TestAuthProbesAreOpenAndMetricsScopeIsConfigurable: /healthz and
// /readyz never need a token; /metrics is open by default and needs read
// when configured.
func TestAuthProbesAreOpenAndMetricsScopeIsConfigurable(t *testing.T) {
	open := startTokens(t, allScopesTokenFile, nil)
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := get(t, open, p); r.status != http.StatusOK {
			t.Errorf("GET %s without a token: %d, want 200", p, r.status)
		}
	}
	closed := startTokens(t, allScopesTokenFile, func(c *server.Config) { c.Auth.MetricsScope = server.ScopeRead })
	openAIError(t, get(t, closed, "/metrics"), http.StatusUnauthorized, "AuthenticationError")
	if r := call(t, closed.Client(), http.MethodGet, closed.URL+"/metrics", readToken, ""); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), "kvtwin_auth_failures_total") {
		t.Errorf("GET /metrics with a read token: %d", r.status)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := get(t, closed, p); r.status != http.StatusOK {
			t.Errorf("GET %s without a token, metrics closed: %d, want 200", p, r.status)
		}
	}
	// A wrong method on a route is still a 405, not a 401: the path's
	// catch-all is open and reveals only what docs/api.md does.
	if r := do(t, closed, http.MethodPut, "/v1/ops", ""); r.status != http.StatusMethodNotAllowed {
		t.Errorf("PUT /v1/ops: %d, want 405", r.status)
	}
}

// TestAuthMatchThatLocksNeedsWrite: a match reads, but "lock": true
// protects the path until someone unlocks it, so a read token may match
// and may not lock.
func TestAuthMatchThatLocksNeedsWrite(t *testing.T) {
	ts := startTokens(t, allScopesTokenFile, nil)
	c := ts.Client()
	if r := call(t, c, http.MethodPost, ts.URL+"/v1/prefix/p", writeToken, `{"page_size":1,"capacity_tokens":8}`); r.status != http.StatusCreated {
		t.Fatal(r.status, string(r.body))
	}
	if r := call(t, c, http.MethodPost, ts.URL+"/v1/prefix/p/insert", writeToken, `{"tokens":[1,2,3]}`); r.status != http.StatusOK {
		t.Fatal(r.status, string(r.body))
	}
	if r := call(t, c, http.MethodPost, ts.URL+"/v1/prefix/p/match", readToken, `{"tokens":[1,2]}`); r.status != http.StatusOK {
		t.Fatalf("match with a read token: %d %s", r.status, r.body)
	}
	r := call(t, c, http.MethodPost, ts.URL+"/v1/prefix/p/match", readToken, `{"tokens":[1,2],"lock":true}`)
	e := openAIError(t, r, http.StatusForbidden, "PermissionDeniedError")
	if !strings.Contains(e.Message, `"lock": true`) || !strings.Contains(e.Message, "scope write") {
		t.Errorf("403 message %q does not name the lock and the scope it needs", e.Message)
	}
	st := call(t, c, http.MethodGet, ts.URL+"/v1/prefix/p", readToken, "")
	if !strings.Contains(string(st.body), `"protected_tokens":0`) {
		t.Errorf("the refused lock changed the pool: %s", st.body)
	}
	if r := call(t, c, http.MethodPost, ts.URL+"/v1/prefix/p/match", writeToken, `{"tokens":[1,2],"lock":true}`); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), `"locked":true`) {
		t.Fatalf("a locking match with a write token: %d %s", r.status, r.body)
	}
}

// TestAuthTokenFileChangeTakesEffect rewrites the token file while Serve
// runs: the new tokens are honoured and the removed ones refused within a
// poll; a file that no longer parses keeps the previous tokens, counted
// and logged once.
func TestAuthTokenFileChangeTakesEffect(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "tokens", "read "+readToken+"\n")
	sv := serveAuth(t, func(c *server.Config) { c.Auth.TokensFile = file })
	c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	status := func(token string) int { return call(t, c, http.MethodGet, sv.url+"/v1/ops", token, "").status }
	if status(readToken) != http.StatusOK || status(writeToken) != http.StatusUnauthorized {
		t.Fatal("the first token file is not in service")
	}

	writeFile(t, dir, "tokens", "write "+writeToken+"\n")
	eventually(t, "the new token is honoured", func() bool { return status(writeToken) == http.StatusOK })
	if got := status(readToken); got != http.StatusUnauthorized {
		t.Errorf("a token removed from the file: %d, want 401", got)
	}
	if got := metricOf(t, c, sv.url, "", "kvtwin_auth_tokens"); got != 1 {
		t.Errorf("kvtwin_auth_tokens = %v, want 1", got)
	}

	writeFile(t, dir, "tokens", "wirte "+adminToken+"\n")
	series := `kvtwin_auth_reloads_total{file="tokens",result="failed"}`
	eventually(t, "the broken file is counted", func() bool { return metricOf(t, c, sv.url, "", series) == 1 })
	if status(writeToken) != http.StatusOK || status(adminToken) != http.StatusUnauthorized {
		t.Error("a token file that does not parse replaced the tokens in service")
	}
	if rec := sv.logs.find(t, "WARN", "reload failed; the previous one stays in service"); rec == nil ||
		!strings.Contains(rec["err"].(string), "line 1: scope = wirte") || strings.Contains(fmt.Sprint(rec), adminToken) {
		t.Errorf("the broken file is not logged with its line, or its token is: %v", rec)
	}
	if got := metricOf(t, c, sv.url, "", `kvtwin_auth_reloads_total{file="tokens",result="ok"}`); got != 1 {
		t.Errorf("token reloads ok = %v, want 1", got)
	}
}

// TestNewRefusesANonLoopbackAddrWithoutAuthentication: every interface or
// a name that may resolve anywhere needs tokens, client certificates or
// --insecure-no-auth; loopback needs nothing (make run is unchanged).
func TestNewRefusesANonLoopbackAddrWithoutAuthentication(t *testing.T) {
	tokens := writeFile(t, t.TempDir(), "tokens", allScopesTokenFile)
	newWith := func(addr string, edit func(*server.AuthConfig)) error {
		cfg := testConfig(&logBuffer{})
		cfg.Addr = addr
		if edit != nil {
			edit(&cfg.Auth)
		}
		_, err := server.New(cfg)
		return err
	}
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "10.1.2.3:8080", "kvtwin.example:8080"} {
		err := newWith(addr, nil)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, server.ErrBadConfig) || ie.Field != "Addr" || ie.Value != addr ||
			!strings.Contains(err.Error(), "--insecure-no-auth") || !strings.Contains(err.Error(), "--auth-tokens") {
			t.Errorf("New with Addr %s and no authentication = %v; want ErrBadConfig on Addr naming --auth-tokens and --insecure-no-auth", addr, err)
		}
		if err := newWith(addr, func(a *server.AuthConfig) { a.InsecureNoAuth = true }); err != nil {
			t.Errorf("Addr %s with InsecureNoAuth: %v", addr, err)
		}
		if err := newWith(addr, func(a *server.AuthConfig) { a.TokensFile = tokens }); err != nil {
			t.Errorf("Addr %s with tokens: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080", "127.0.0.2:0"} {
		if err := newWith(addr, nil); err != nil {
			t.Errorf("loopback %s without authentication: %v", addr, err)
		}
	}
}

// TestServeRefusesANonLoopbackListenerWithoutAuthentication: Serve checks
// the listener it is handed, whatever Addr said.
func TestServeRefusesANonLoopbackListenerWithoutAuthentication(t *testing.T) {
	s, err := server.New(testConfig(&logBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = s.Serve(ctx, ln)
	if !errors.Is(err, server.ErrBadConfig) || !strings.Contains(err.Error(), "--insecure-no-auth") {
		t.Fatalf("Serve on %s without authentication = %v, want ErrBadConfig naming --insecure-no-auth", ln.Addr(), err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the refused listener is still open")
	}
}

func TestNewChecksTheAuthFieldsTogether(t *testing.T) {
	for _, tc := range []struct {
		field, bound string
		edit         func(*server.AuthConfig)
	}{
		{"Auth.TLSKeyFile", "together with Auth.TLSCertFile", func(a *server.AuthConfig) { a.TLSCertFile = "c.pem" }},
		{"Auth.TLSKeyFile", "together with Auth.TLSCertFile", func(a *server.AuthConfig) { a.TLSKeyFile = "k.pem" }},
		{"Auth.TLSClientCAFile", "only with Auth.TLSCertFile", func(a *server.AuthConfig) { a.TLSClientCAFile = "ca.pem" }},
		{"Auth.MetricsScope", "open or read", func(a *server.AuthConfig) { a.MetricsScope = server.ScopeWrite }},
		{"Auth.ReloadInterval", "> 0", func(a *server.AuthConfig) { a.ReloadInterval = 0 }},
		{"Auth.InsecureNoAuth", "false when Auth.TokensFile", func(a *server.AuthConfig) { a.InsecureNoAuth, a.TokensFile = true, "t" }},
	} {
		cfg := testConfig(&logBuffer{})
		tc.edit(&cfg.Auth)
		_, err := server.New(cfg)
		ie, ok := spec.AsInputError(err)
		if !ok || ie.Field != tc.field || !strings.Contains(ie.Bound, tc.bound) {
			t.Errorf("%s: New = %v, want field %s and bound %q", tc.field, err, tc.field, tc.bound)
		}
	}
}

func TestParseScopeNamesEveryScopeAndRefusesOthers(t *testing.T) {
	for want, name := range map[server.Scope]string{server.ScopeOpen: "open", server.ScopeRead: "read", server.ScopeWrite: "write", server.ScopeAdmin: "admin"} {
		if got, err := server.ParseScope(name); err != nil || got != want || got.String() != name {
			t.Errorf("ParseScope(%q) = %v, %v", name, got, err)
		}
	}
	if _, err := server.ParseScope("Admin"); err == nil {
		t.Error(`ParseScope("Admin") accepted a name that is not one`)
	}
}
