package server_test

import (
	"crypto/tls"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/internal/testpki"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// tlsFiles is a CA, a server pair written in a temporary folder, and the
// CA's certificate there, for --tls-ca / curl --cacert.
type tlsFiles struct {
	dir, certFile, keyFile, caFile string
	ca                             *testpki.CA
	pair                           testpki.Pair
}

func newTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	f := tlsFiles{dir: t.TempDir(), ca: testpki.NewCA(t, "kvtwin test CA")}
	f.pair = f.ca.Server(t)
	f.certFile, f.keyFile = f.pair.Write(t, f.dir, "server")
	f.caFile = writeFile(t, f.dir, "ca.pem", string(f.ca.PEM))
	return f
}

// TestAuthOverTLSTokenlessWriteIs401ReadTokenIs403WriteTokenSucceeds is
// issue 27's finding 6: anyone who reached the port could create, fill,
// evict and delete prefix pools. Over real TLS, with Go's client and
// curl: no token is 401, a read token on a write route 403, a write token
// creates, and only admin deletes; the probes stay open, and no token is
// ever logged.
func TestAuthOverTLSTokenlessWriteIs401ReadTokenIs403WriteTokenSucceeds(t *testing.T) {
	f := newTLSFiles(t)
	tokens := writeFile(t, f.dir, "tokens", allScopesTokenFile)
	sv := serveAuth(t, func(c *server.Config) {
		c.Auth.TLSCertFile, c.Auth.TLSKeyFile, c.Auth.TokensFile = f.certFile, f.keyFile, tokens
	})
	c := tlsClient(t, f.ca)
	const create = `{"page_size":2,"capacity_tokens":16}`

	r := call(t, c, http.MethodPost, sv.url+"/v1/prefix/chat", "", create)
	e := openAIError(t, r, http.StatusUnauthorized, "AuthenticationError")
	if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="kvtwin"` {
		t.Errorf("401 WWW-Authenticate %q, want the bare Bearer challenge", got)
	}
	if !strings.Contains(e.Message, "POST /v1/prefix/{pool}") || !strings.Contains(e.Message, "scope write") {
		t.Errorf("401 message %q does not name the route and the scope it needs", e.Message)
	}
	r = call(t, c, http.MethodPost, sv.url+"/v1/prefix/chat", readToken, create)
	e = openAIError(t, r, http.StatusForbidden, "PermissionDeniedError")
	if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="kvtwin", error="insufficient_scope", scope="write"` {
		t.Errorf("403 WWW-Authenticate %q", got)
	}
	if !strings.Contains(e.Message, "scope write") || !strings.Contains(e.Message, "scope is read") {
		t.Errorf("403 message %q does not name the scope needed and the token's", e.Message)
	}
	if r := call(t, c, http.MethodPost, sv.url+"/v1/prefix/chat", writeToken, create); r.status != http.StatusCreated {
		t.Fatalf("create with a write token: %d %s", r.status, r.body)
	}
	if r := call(t, c, http.MethodPost, sv.url+"/v1/prefix/chat/insert", writeToken, `{"tokens":[1,2,3,4]}`); r.status != http.StatusOK {
		t.Fatalf("insert with a write token: %d %s", r.status, r.body)
	}
	if r := call(t, c, http.MethodPost, sv.url+"/v1/prefix:score", readToken, `{"tokens":[1,2,3,4]}`); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), `"matched_tokens":4`) {
		t.Fatalf("score with a read token: %d %s", r.status, r.body)
	}
	openAIError(t, call(t, c, http.MethodDelete, sv.url+"/v1/prefix/chat", writeToken, ""), http.StatusForbidden, "PermissionDeniedError")
	if r := call(t, c, http.MethodDelete, sv.url+"/v1/prefix/chat", adminToken, ""); r.status != http.StatusOK {
		t.Fatalf("delete with an admin token: %d %s", r.status, r.body)
	}
	for _, open := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := call(t, c, http.MethodGet, sv.url+open, "", ""); r.status != http.StatusOK {
			t.Errorf("GET %s without a token: %d %s, want 200 (open)", open, r.status, r.body)
		}
	}

	// curl, the token in a header file; the same answers.
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {readToken, http.StatusForbidden}, {writeToken, http.StatusCreated}} {
		status, body := curl(t, tc.token, "--cacert", f.caFile, "-X", "POST", "-d", create, sv.url+"/v1/prefix/from-curl")
		if status != tc.want {
			t.Errorf("curl create with token %q: %d %s, want %d", tc.token[:min(len(tc.token), 5)], status, body, tc.want)
		}
	}
	if status, body := curl(t, "", "--cacert", f.caFile, sv.url+"/healthz"); status != http.StatusOK {
		t.Errorf("curl /healthz: %d %s", status, body)
	}

	if got := metricOf(t, c, sv.url, "", `kvtwin_auth_failures_total{reason="missing"}`); got != 2 {
		t.Errorf("missing-token failures %v, want 2 (Go, curl)", got)
	}
	if got := metricOf(t, c, sv.url, "", `kvtwin_auth_failures_total{reason="insufficient_scope"}`); got != 3 {
		t.Errorf("insufficient-scope failures %v, want 3", got)
	}
	if warn := sv.logs.find(t, "WARN", "request failed"); warn == nil || warn["status"] != float64(http.StatusUnauthorized) {
		t.Errorf("the first refusal is not logged at WARN: %v", warn)
	}
	sv.logs.mu.Lock()
	logged := sv.logs.buf.String()
	sv.logs.mu.Unlock()
	for _, tok := range []string{readToken, writeToken, adminToken} {
		if strings.Contains(logged, tok) {
			t.Errorf("a token is in the logs: %s", logged)
		}
	}
}

// TestTLSClientCertificateRequiredWhenClientCAIsSet: with --tls-client-ca
// every route but the open ones needs a verified client certificate (403
// without one, from Go's client and curl alike); a certificate from
// another CA fails the handshake; the probes need none.
func TestTLSClientCertificateRequiredWhenClientCAIsSet(t *testing.T) {
	f := newTLSFiles(t)
	clients := testpki.NewCA(t, "kvtwin test client CA")
	clientCAFile := writeFile(t, f.dir, "clients.pem", string(clients.PEM))
	sv := serveAuth(t, func(c *server.Config) {
		c.Auth.TLSCertFile, c.Auth.TLSKeyFile, c.Auth.TLSClientCAFile = f.certFile, f.keyFile, clientCAFile
	})

	anon := tlsClient(t, f.ca)
	if r := call(t, anon, http.MethodGet, sv.url+"/readyz", "", ""); r.status != http.StatusOK {
		t.Fatalf("/readyz without a client certificate: %d %s, want 200 (probes hold none)", r.status, r.body)
	}
	e := openAIError(t, call(t, anon, http.MethodGet, sv.url+"/v1/ops", "", ""), http.StatusForbidden, "PermissionDeniedError")
	if !strings.Contains(e.Message, "client certificate") {
		t.Errorf("403 message %q does not say a client certificate is needed", e.Message)
	}

	router := clients.Client(t, "router")
	withCert := tlsClient(t, f.ca, router.TLS)
	if r := call(t, withCert, http.MethodPost, sv.url+"/v1/prefix/chat", "", `{"page_size":2,"capacity_tokens":16}`); r.status != http.StatusCreated {
		t.Fatalf("create with a client certificate: %d %s", r.status, r.body)
	}

	// A certificate that chains to the server's CA, not the client CA. Go's
	// client would not offer it to a server that names other CAs, so it is
	// forced on the handshake, as a hostile client would.
	stranger := f.ca.Client(t, "stranger")
	conn, err := tls.Dial("tcp", sv.addr, &tls.Config{RootCAs: f.ca.Pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &stranger.TLS, nil }})
	if err == nil {
		// TLS 1.3: the client finishes first; the server's refusal comes as
		// an alert on the first read.
		_, err = conn.Write([]byte("GET /v1/ops HTTP/1.1\r\nHost: x\r\n\r\n"))
		if err == nil {
			_, err = conn.Read(make([]byte, 1))
		}
		conn.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a certificate from another CA: %v, want a handshake refused for its certificate", err)
	}

	certFile, keyFile := router.Write(t, f.dir, "router")
	if status, body := curl(t, "", "--cacert", f.caFile, "--cert", certFile, "--key", keyFile, sv.url+"/v1/prefix/chat"); status != http.StatusOK {
		t.Errorf("curl with a client certificate: %d %s", status, body)
	}
	if status, body := curl(t, "", "--cacert", f.caFile, sv.url+"/v1/prefix/chat"); status != http.StatusForbidden {
		t.Errorf("curl without a client certificate: %d %s, want 403", status, body)
	}
	if got := metricOf(t, anon, sv.url, "", `kvtwin_auth_failures_total{reason="no_client_cert"}`); got != 2 {
		t.Errorf("no-client-cert failures %v, want 2", got)
	}
}

// servedSerial dials addr and returns the serial of the certificate the
// server presented.
func servedSerial(t *testing.T, addr string, ca *testpki.CA) *big.Int {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber
}

// TestTLSRotatedCertificateIsServedWithoutRestart replaces the pair on
// disk: the next handshakes present the new certificate. A broken pair
// written next is refused, logged and counted, and the last good one
// stays in service.
func TestTLSRotatedCertificateIsServedWithoutRestart(t *testing.T) {
	f := newTLSFiles(t)
	sv := serveAuth(t, func(c *server.Config) { c.Auth.TLSCertFile, c.Auth.TLSKeyFile = f.certFile, f.keyFile })
	if got := servedSerial(t, sv.addr, f.ca); got.Cmp(f.pair.Serial) != 0 {
		t.Fatalf("served serial %v, want the first pair's %v", got, f.pair.Serial)
	}

	next := f.ca.Server(t)
	next.Write(t, f.dir, "server")
	eventually(t, "the rotated certificate is served", func() bool { return servedSerial(t, sv.addr, f.ca).Cmp(next.Serial) == 0 })
	c := tlsClient(t, f.ca)
	if got := metricOf(t, c, sv.url, "", `kvtwin_auth_reloads_total{file="tls_cert",result="ok"}`); got != 1 {
		t.Errorf("tls_cert reloads ok = %v, want 1", got)
	}

	// The key of another pair: the certificate and key no longer match.
	testpki.WriteFile(t, f.keyFile, f.ca.Server(t).KeyPEM)
	series := `kvtwin_auth_reloads_total{file="tls_cert",result="failed"}`
	eventually(t, "the broken pair is counted", func() bool { return metricOf(t, c, sv.url, "", series) == 1 })
	if got := servedSerial(t, sv.addr, f.ca); got.Cmp(next.Serial) != 0 {
		t.Errorf("after a broken pair the server presents %v, want the last good %v", got, next.Serial)
	}
	if rec := sv.logs.find(t, "WARN", "reload failed; the previous one stays in service"); rec == nil || rec["file"] != "tls_cert" ||
		!strings.Contains(rec["err"].(string), "private key does not match") {
		t.Errorf("the broken pair is not logged at WARN with its cause: %v", rec)
	}
	time.Sleep(100 * time.Millisecond) // five more polls of the same broken files
	if got := metricOf(t, c, sv.url, "", series); got != 1 {
		t.Errorf("failed reloads %v after more polls, want 1: a failure counts once per change", got)
	}
}

// TestTLSServesTLS12AndAboveWithAEADSuitesOnly: TLS 1.1 and a TLS 1.2
// CBC suite are refused, TLS 1.2 with GCM and TLS 1.3 are served, and
// only HTTP/1.1 is offered.
func TestTLSServesTLS12AndAboveWithAEADSuitesOnly(t *testing.T) {
	f := newTLSFiles(t)
	sv := serveAuth(t, func(c *server.Config) { c.Auth.TLSCertFile, c.Auth.TLSKeyFile = f.certFile, f.keyFile })
	dial := func(cfg *tls.Config) (tls.ConnectionState, error) {
		cfg.RootCAs = f.ca.Pool
		conn, err := tls.Dial("tcp", sv.addr, cfg)
		if err != nil {
			return tls.ConnectionState{}, err
		}
		defer conn.Close()
		return conn.ConnectionState(), nil
	}
	if _, err := dial(&tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("a TLS 1.1 handshake succeeded")
	}
	if _, err := dial(&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}); err == nil {
		t.Error("a TLS 1.2 CBC-SHA1 handshake succeeded")
	}
	st, err := dial(&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}})
	if err != nil || st.Version != tls.VersionTLS12 {
		t.Errorf("TLS 1.2 with AES-GCM: %v, version %x", err, st.Version)
	}
	st, err = dial(&tls.Config{NextProtos: []string{"h2", "http/1.1"}})
	if err != nil || st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != "http/1.1" {
		t.Errorf("a default client: %v, version %x, protocol %q; want TLS 1.3 and http/1.1", err, st.Version, st.NegotiatedProtocol)
	}
}

// TestNewRefusesACertificateOrCABundleThatDoesNotLoad: a missing file, a
// key that does not match, an expired certificate and a CA bundle without
// a certificate are configuration errors naming the field and the file.
func TestNewRefusesACertificateOrCABundleThatDoesNotLoad(t *testing.T) {
	f := newTLSFiles(t)
	expiredCert, expiredKey := f.ca.ServerValid(t, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour)).Write(t, f.dir, "expired")
	otherKey := writeFile(t, f.dir, "other.key", string(f.ca.Server(t).KeyPEM))
	notCA := writeFile(t, f.dir, "not-a-ca.pem", string(f.pair.KeyPEM))
	for _, tc := range []struct {
		name, field, value, says string
		edit                     func(*server.AuthConfig)
	}{
		{"missing certificate", "Auth.TLSCertFile", f.dir + "/none.crt", "no such file", func(a *server.AuthConfig) {
			a.TLSCertFile, a.TLSKeyFile = f.dir+"/none.crt", f.keyFile
		}},
		{"key of another pair", "Auth.TLSCertFile", f.certFile, "private key does not match", func(a *server.AuthConfig) {
			a.TLSCertFile, a.TLSKeyFile = f.certFile, otherKey
		}},
		{"expired", "Auth.TLSCertFile", expiredCert, "valid now", func(a *server.AuthConfig) {
			a.TLSCertFile, a.TLSKeyFile = expiredCert, expiredKey
		}},
		{"CA bundle of a key", "Auth.TLSClientCAFile", notCA, `"PRIVATE KEY", want CERTIFICATE`, func(a *server.AuthConfig) {
			a.TLSCertFile, a.TLSKeyFile, a.TLSClientCAFile = f.certFile, f.keyFile, notCA
		}},
	} {
		cfg := testConfig(&logBuffer{})
		tc.edit(&cfg.Auth)
		_, err := server.New(cfg)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, server.ErrBadConfig) || ie.Field != tc.field || !strings.HasPrefix(ie.Value.(string), tc.value) ||
			!strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: New = %v; want ErrBadConfig on %s = %s saying %q", tc.name, err, tc.field, tc.value, tc.says)
		}
	}
}

// TestTLSHandshakeIsBoundedByReadHeaderTimeout: a client that connects
// and never sends its hello holds the connection (one of MaxConnections)
// for at most ReadHeaderTimeout, as a slow plain-HTTP header does.
func TestTLSHandshakeIsBoundedByReadHeaderTimeout(t *testing.T) {
	f := newTLSFiles(t)
	sv := serveAuth(t, func(c *server.Config) {
		c.Auth.TLSCertFile, c.Auth.TLSKeyFile = f.certFile, f.keyFile
		c.ReadHeaderTimeout = 200 * time.Millisecond
	})
	conn, err := net.Dial("tcp", sv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a silent client's connection: read = %v after %v, want it closed by the server", err, time.Since(start))
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the server closed a silent client's connection after %v, want about ReadHeaderTimeout (200ms)", took)
	}
}
